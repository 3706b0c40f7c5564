"""The retry loop tells a failure worth retrying once (not once per try, batch or stream), names its
cause in words, and keeps the library's own text for DEBUG."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import List

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


def test_a_pace_makes_policies_that_wait_in_it():
    waits = Waits()

    def busy() -> None:
        raise retry.TryAgain("HTTP 429", retry_after=2.0)

    tries = retry.Pace(sleep=waits).policy(4)
    retry.call(tries, busy, lambda f: None, "GET z")
    assert (tries.attempts, waits) == (4, [2.0, 2.0, 2.0])


# A patch of the module's ``sleep`` reaches nothing: every policy and rate limiter holds its wait from
# when it was made. A wait is handed in (``RetryPolicy(sleep=)``, a run's ``pace=``), never patched.
PATCH_OF_THE_WAIT = re.compile(
    r"""setattr\(\s*(?:forwarder\.)?retry\s*,\s*["']sleep["']"""  # monkeypatch.setattr(retry, "sleep", f)
    r"""|\bretry\.sleep\s*=(?!=)"""  # retry.sleep = f
    r"""|["']forwarder\.retry\.sleep["']"""  # mock.patch("forwarder.retry.sleep")
)
TESTS = Path(__file__).resolve().parent


def patches_of_the_wait(root: Path) -> List[str]:
    """``path:line`` of every patch of ``forwarder.retry.sleep`` in the test modules under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == Path(__file__).resolve():
            continue  # the patterns above
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PATCH_OF_THE_WAIT.search(line):
                found.append(f"{path.relative_to(root)}:{number}")
    return found


def test_no_test_patches_the_retry_wait():
    assert patches_of_the_wait(TESTS) == [], "hand the wait in: RetryPolicy(sleep=...) or pace=Pace(...)"


def test_every_way_of_patching_the_wait_is_seen(tmp_path):
    (tmp_path / "test_patching.py").write_text(
        'monkeypatch.setattr(retry, "sleep", waits.append)\n'
        "monkeypatch.setattr(forwarder.retry, 'sleep', f)\n"
        "saved, retry.sleep = retry.sleep, lambda s: None\n"
        "retry.sleep = saved\n"
        'with mock.patch("forwarder.retry.sleep"):\n'
    )
    (tmp_path / "test_handing.py").write_text(
        "policy = retry.RetryPolicy(sleep=waits)\nrun_once(settings, pace=retry.Pace(sleep=retry.sleep))\n"
        "assert policy.sleep == retry.sleep\n"
    )
    assert patches_of_the_wait(tmp_path) == [f"test_patching.py:{n}" for n in range(1, 6)]
