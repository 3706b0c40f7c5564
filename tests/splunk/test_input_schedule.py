"""The Splunk input's interval is the scheduler's: its budget and turns are sized to it."""

from __future__ import annotations

import pytest

from handlers.splunk_input import _PLACEHOLDER, InputState, settings_for

FIELDS = {"sink": "stdout", "object_types": "user"}
STATE = InputState("https://127.0.0.1:8089", "session-key", "c1")


@pytest.mark.parametrize(("interval", "seconds"), [("60", 60), ("", 300), ("*/5 * * * *", 300)])
def test_the_inputs_interval_in_seconds_is_the_schedule_interval(tmp_path, interval, seconds):
    settings = settings_for({**FIELDS, "interval": interval}, _PLACEHOLDER, str(tmp_path), STATE)
    assert settings.schedule_interval_s == seconds
