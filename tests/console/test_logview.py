"""Log lines on the console: readable, with their fields, secrets masked."""

from __future__ import annotations

import io
import logging

from forwarder.console.logview import ConsoleHandler
from forwarder.console.screen import Screen
from forwarder.console.style import Style
from forwarder.logs import register_secrets


def test_log_lines_are_readable_with_their_fields_and_secrets_masked():
    register_secrets(["pa55word-for-console"])
    out = io.StringIO()
    handler = ConsoleHandler(Screen(out, live=False), Style(False))
    logger = logging.getLogger("tests.console.readable")
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)  # whatever level an earlier test's Console left on the root logger
    try:
        logger.warning("api answered %s, retrying", 429, extra={"path": "/v1/cp/audits", "wait_s": 1.5})
        logger.error("sink refused", extra={"detail": "token pa55word-for-console is invalid", "empty": ""})
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("stream failed unexpectedly", extra={"stream": "user/a@b.example"})
    finally:
        logger.removeHandler(handler)
    assert out.getvalue().splitlines() == [
        "warning: api answered 429, retrying (path=/v1/cp/audits, wait_s=1.5)",
        "error: sink refused (detail=token *** is invalid)",
        "error: stream failed unexpectedly (stream=user/a@b.example): ValueError: boom",
    ]
