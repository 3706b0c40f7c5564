"""Splunk's own package checks: the built package passes AppInspect (precert mode, cloud tags)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# SPLUNK_APPINSPECT may name the tool in a venv of its own (its pins are old: chardet 3, bs4 4.10).
APPINSPECT = (
    os.environ.get("SPLUNK_APPINSPECT")
    or shutil.which("splunk-appinspect")
    or str(Path(sys.executable).with_name("splunk-appinspect"))
)


def test_appinspect_precert_cloud_reports_no_failure_and_no_error(package, tmp_path):
    if not Path(APPINSPECT).exists():
        pytest.fail("splunk-appinspect is not installed: pip install splunk-appinspect (needs libmagic1)")
    report = tmp_path / "appinspect.json"
    done = subprocess.run(
        [APPINSPECT, "inspect", str(package), "--mode", "precert", "--included-tags", "cloud",
         "--output-file", str(report)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert report.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    summary = json.loads(report.read_text())["summary"]
    problems = [
        f"{check['name']}: {message['message']}"
        for group in json.loads(report.read_text())["reports"][0]["groups"]
        for check in group["checks"]
        if check["result"] in ("failure", "error")
        for message in check["messages"]
    ]
    assert summary["failure"] == 0 and summary["error"] == 0, problems
