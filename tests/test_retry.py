"""The retry loop tells a failure worth retrying once (not once per try, batch or stream), names its
cause in words, and keeps the library's own text for DEBUG."""

from __future__ import annotations

import logging

from forwarder import causes, retry
from tests.fakes import Waits


def policy(attempts: int) -> retry.RetryPolicy:
    return retry.RetryPolicy(attempts=attempts, sleep=Waits())  # no test waits for real time


def refused() -> None:
    raise ConnectionRefusedError(111, "Connection refused")


def test_the_same_retry_is_told_once_at_warning_and_then_at_debug(caplog):
    failures = []
    caplog.set_level(logging.DEBUG, logger="forwarder.retry")
    for _ in range(3):  # three batches failing alike
        retry.call(policy(3), refused, failures.append, "POST to X", where="h:1")
    told = [r for r in caplog.records if r.getMessage() == "POST to X failed, retrying"]
    assert [r.levelno for r in told] == [logging.WARNING] + [logging.DEBUG] * 5
    assert told[0].error == "h:1 refused the connection (nothing listens on that port)"  # type: ignore[attr-defined]
    assert [f.cause.kind for f in failures] == [causes.REFUSED] * 3 and failures[0].attempts == 3
    library = [
        r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG and "Errno" in r.getMessage()
    ]
    assert library and all(m.startswith("POST to X: ConnectionRefusedError") for m in library)


def test_another_cause_or_a_new_run_is_told_again(caplog):
    caplog.set_level(logging.WARNING, logger="forwarder.retry")
    tries = policy(2)
    retry.call(tries, refused, lambda f: None, "POST to X", where="h:1")
    retry.call(tries, refused, lambda f: None, "POST to X", where="h:2")
    retry.reset_notices()  # what each run does first
    retry.call(tries, refused, lambda f: None, "POST to X", where="h:1")
    assert len(caplog.records) == 3


def test_an_answer_worth_retrying_has_no_transport_cause():
    failures = []

    def busy() -> None:
        raise retry.TryAgain("HTTP 503")

    retry.call(policy(2), busy, failures.append, "GET y")
    assert failures[0].problem == "HTTP 503" and failures[0].cause is None


def test_the_policy_s_sleep_is_the_wait_between_tries_and_honours_retry_after():
    waits = Waits()

    def busy() -> None:
        raise retry.TryAgain("HTTP 503", retry_after=0.25)

    retry.call(retry.RetryPolicy(attempts=3, sleep=waits), busy, lambda f: None, "GET z")
    assert waits == [0.25, 0.25]  # between the three tries, as the peer asked
