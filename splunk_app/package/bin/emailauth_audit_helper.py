"""UCC's generated bin/emailauth_audit.py calls these two; the work is in lib/handlers/splunk_input.py."""

import import_declare_test  # noqa: F401  (puts the add-on's lib/ first on sys.path)

from handlers import splunk_input


def validate_input(definition):
    splunk_input.validate_input(definition)


def stream_events(inputs, event_writer):
    splunk_input.stream_events(inputs, event_writer)
