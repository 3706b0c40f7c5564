"""The run summary at a terminal says what the schedule skipped and why a run stopped."""

from __future__ import annotations

from forwarder.console.style import Style
from forwarder.console.views import run_summary, state_table
from forwarder.report import RunReport


def test_the_summary_names_streams_not_due_and_the_reason_a_run_stopped():
    report = RunReport(
        started="s",
        not_started=["user/c@x"],
        not_due=["user/a@x", "user/b@x"],
        stop_reason="budget: 8 API calls spent (FORWARDER_RUN_BUDGET_CALLS)",
    )
    text = run_summary(report, Style(colour=False), elapsed_s=1.0, api_calls=8)
    assert "1 streams not started (budget: 8 API calls spent (FORWARDER_RUN_BUDGET_CALLS))" in text
    assert "2 streams not due" in text


def test_the_state_table_marks_the_streams_of_the_org_wide_answers():
    row = {"watermark": None, "lag_seconds": None, "ids_in_window": 0, "delivered_total": 0}
    rows = [{**row, "stream": "user/*", "org_wide": True}, {**row, "stream": "user/a@x"}]
    lines = state_table("here", rows, Style(colour=False)).splitlines()
    assert [line.split()[:2] for line in lines[2:]] == [["user/*", "(org-wide)"], ["user/a@x", "never"]]
