"""Output for a person at a terminal: progress line, readable log lines, tables, colour.

Only the CLI imports this package; the Lambda and Splunk runtimes keep their JSON lines.
"""
