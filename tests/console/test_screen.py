"""The status line: redrawn in place, messages above it, none off a terminal."""

from __future__ import annotations

import io

from forwarder.console.screen import Screen


def test_the_status_line_is_redrawn_in_place_and_messages_go_above_it():
    out = io.StringIO()
    screen = Screen(out, live=True)
    screen.status("streams 1/3")
    screen.status("s 2")
    screen.message("warning: slow")
    screen.clear()
    wipe = "\r" + " " * 3 + "\r"
    assert out.getvalue() == "\rstreams 1/3" + "\rs 2" + " " * 8 + wipe + "warning: slow\n" + "\rs 2" + wipe


def test_no_status_line_off_a_terminal():
    out = io.StringIO()
    screen = Screen(out, live=False)
    screen.status("streams 1/3")
    screen.message("error: x")
    assert out.getvalue() == "error: x\n"
