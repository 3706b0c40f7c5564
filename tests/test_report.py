"""RunReport.to_dict: each stream is its StreamReport's fields, as dataclasses.asdict gives them."""

from __future__ import annotations

import dataclasses

from forwarder.report import RunReport, StreamReport


def test_each_stream_of_the_report_is_every_field_of_its_stream_report_in_order():
    stream = StreamReport("user/a@example.com", fetched=3, new=1, shipped=1, strategy="offset")
    stream.watermark, stream.lag_seconds, stream.error = "2026-01-01T00:00:00Z", 1.5, "boom"
    report = RunReport(started="s", streams=[stream, StreamReport("domain/example.com")])

    shown = report.to_dict()["streams"]

    assert shown == [dataclasses.asdict(s) for s in report.streams]
    assert [list(s) for s in shown] == [[f.name for f in dataclasses.fields(StreamReport)]] * 2


def test_streams_that_failed_alike_are_one_failure_with_their_number():
    streams = [StreamReport(f"user/u{n}@example.com", error="down") for n in range(3)]
    streams += [StreamReport("domain/example.com", error="other"), StreamReport("user/fine@example.com")]
    report = RunReport(started="s", streams=streams)
    assert report.failures() == [("down", [s.stream for s in streams[:3]]), ("other", ["domain/example.com"])]
    assert report.failure_lines() == [
        "3 streams (user/u0@example.com, ...): down",
        "domain/example.com: other",
    ]
    assert report.to_dict()["failures"] == [
        {"error": "down", "streams": 3, "first": "user/u0@example.com"},
        {"error": "other", "streams": 1, "first": "domain/example.com"},
    ]
    assert [s["error"] for s in report.to_dict()["streams"]] == ["down"] * 3 + ["other", None]


def test_the_report_says_what_was_not_due_and_why_the_run_stopped():
    report = RunReport(started="s", not_due=["user/b@example.com"], stop_reason="deadline")
    shown = report.to_dict()
    assert shown["not_due"] == ["user/b@example.com"] and shown["stop_reason"] == "deadline"
