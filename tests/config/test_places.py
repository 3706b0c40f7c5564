"""Where-to kinds of setting."""

from __future__ import annotations

from forwarder.config.places import SinkUri


def test_a_sink_without_a_scheme_is_quoted_as_written_with_the_fix():
    try:
        SinkUri().parse("splunk.example.com:8088")
    except ValueError as exc:
        message = str(exc)
    assert message.startswith("'splunk.example.com:8088' has no scheme")
    assert "hec+https://splunk.example.com:8088" in message and "://8088" not in message
    try:
        SinkUri().parse("admin:hunter2@splunk.example.com:8088")
    except ValueError as exc:
        assert "hunter2" not in str(exc)
