"""The stdout sink: NDJSON lines, clear errors."""

from __future__ import annotations

import contextlib
import os

import pytest

from forwarder.errors import SinkError
from forwarder.sinks import open_sink
from forwarder.sinks.settings import SinkSettings
from forwarder.sinks.stdout import StdoutSink
from tests.sinks.helpers import CEF, event


def test_stdout_writes_one_line_per_event(capsysbinary):
    sink = open_sink(SinkSettings(uri="stdout", batch_events=7))

    result = sink.send([event(1), CEF, event(2)])
    sink.close()

    assert isinstance(sink, StdoutSink)
    assert sink.max_batch_events == 7
    assert result.delivered == 3
    assert capsysbinary.readouterr().out == event(1).body + b"\n" + CEF.body + b"\n" + event(2).body + b"\n"


def test_stdout_reports_a_reader_that_went_away():
    read_end, write_end = os.pipe()
    os.close(read_end)
    stream = os.fdopen(write_end, "wb", buffering=0)
    try:
        with pytest.raises(SinkError, match="stdout"):
            StdoutSink(stream=stream).send([event(1)])
    finally:
        with contextlib.suppress(OSError):
            stream.close()
