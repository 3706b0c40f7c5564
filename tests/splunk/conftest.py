"""The built add-on package, extracted, and helpers to run its bin/ script the way splunkd does."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Dict, Optional
from xml.sax.saxutils import escape, quoteattr

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import build_splunk_app  # noqa: E402

APP = build_splunk_app.APP_ID
PY39_PATH = "/root/.pyenv/versions/3.9.18/bin/python3.9"
PY313 = "/root/.pyenv/versions/3.13.0/bin/python3.13"
# Splunk's oldest bundled Python where this machine has one; the venv's Python otherwise, so the
# behaviour is still tested (`make compat39` says when no 3.9 exists).
PY39 = PY39_PATH if os.path.exists(PY39_PATH) else sys.executable
PYTHONS = [pytest.param(sys.executable, id="venv")] + [
    pytest.param(
        p,
        id=Path(p).name,
        marks=pytest.mark.skipif(
            not os.path.exists(p), reason=f"no {Path(p).name} here ({p}): pyenv install it"
        ),
    )
    for p in (PY39_PATH, PY313)
]


def build_package(out: Path, detections: Path = build_splunk_app.DETECTIONS) -> Path:
    try:
        return build_splunk_app.build(out, ROOT / "build" / "splunk-lib", detections)
    except SystemExit as exc:  # ucc-gen missing or failing: say so instead of ending the session
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_package(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="session")
def app_dir(package: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("installed")
    with tarfile.open(package) as tar:
        tar.extractall(target)
    return target / APP


def run_script(
    app_dir: Path, python: str, args: list, stdin: str = "", splunk_home: Optional[Path] = None
) -> subprocess.CompletedProcess:
    """Run bin/ as splunkd does; ``-S`` keeps the venv's site-packages out: only lib/ and the stdlib
    (``-B``: the extracted package stays as built)."""
    env: Dict[str, str] = {"PATH": os.environ.get("PATH", "")}
    if splunk_home is not None:
        env["SPLUNK_HOME"] = str(splunk_home)
    return subprocess.run(
        [python, "-S", "-B", str(app_dir / "bin" / "emailauth_audit.py"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _params(params: Dict[str, str]) -> str:
    return "".join(f"<param name={quoteattr(k)}>{escape(v)}</param>" for k, v in params.items())


def validation_xml(splunkd_url: str, key: str, checkpoint: Path, name: str, params: Dict[str, str]) -> str:
    return (
        f"<items><server_host>test</server_host><server_uri>{splunkd_url}</server_uri>"
        f"<session_key>{key}</session_key><checkpoint_dir>{checkpoint}</checkpoint_dir>"
        f"<item name={quoteattr(name)}>{_params(params)}</item></items>"
    )


def input_xml(splunkd_url: str, key: str, checkpoint: Path, name: str, params: Dict[str, str]) -> str:
    return (
        f"<input><server_host>test</server_host><server_uri>{splunkd_url}</server_uri>"
        f"<session_key>{key}</session_key><checkpoint_dir>{checkpoint}</checkpoint_dir>"
        f"<configuration><stanza name={quoteattr('emailauth_audit://' + name)} app={quoteattr(APP)}>"
        f"{_params(params)}</stanza></configuration></input>"
    )
