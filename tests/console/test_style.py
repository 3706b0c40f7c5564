"""The console's colour decisions."""

from __future__ import annotations

import io
import os

import pytest

from forwarder.console.style import wants_colour


@pytest.fixture
def tty():
    master, slave = os.openpty()
    with os.fdopen(slave, "w") as stream:
        yield stream
    os.close(master)


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"TERM": "xterm-256color"}, True),
        ({"TERM": "xterm", "NO_COLOR": "1"}, False),
        ({"TERM": "xterm", "NO_COLOR": ""}, False),  # set at all means no colour
        ({"TERM": "dumb"}, False),
        ({}, False),  # no TERM: nothing known about the terminal
    ],
)
def test_colour_only_on_a_capable_terminal_without_no_color(tty, env, expected):
    assert wants_colour(tty, env) is expected


def test_no_colour_off_a_terminal():
    assert wants_colour(io.StringIO(), {"TERM": "xterm"}) is False
