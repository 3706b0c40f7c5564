"""Where a ``<kind>:<name>`` secret reference is read from, one module per kind (forwarder.credentials
chooses through its registry): each has ``fetch(name, timeout_seconds) -> str``, ValueError saying
what went wrong without the value. Both call AWS, so boto3 loads only when one is used."""
