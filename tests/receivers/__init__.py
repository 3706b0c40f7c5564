"""Real loopback servers that speak a SIEM's protocol, for tests of the sinks and the pipeline."""
