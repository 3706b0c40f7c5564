"""Build the Splunk add-on package: ``dist/TA-fortra-emailauth-<version>.tar.gz``.

The package holds ``splunk_app/`` as it is (app.conf gets the version, ``savedsearches.conf`` the
detections compiled by ``compile_detections.py``), and in ``lib/`` the forwarder,
``handlers.splunk_input`` and the pure-Python dependencies. Those are installed with pip for
Python 3.9 from pure wheels only (splunk-sdk ships an sdist, so its wheel is built first), which
keeps compiled code out and versions that still run on Splunk's Python 3.9. The installed set is
cached under ``build/splunk-lib/`` by a hash of the requirement list, so rebuilds need no network.
Forwarder modules that import boto3 are left out; the build fails on any compiled file.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Iterator, List

from compile_detections import write_splunk  # beside this file; pySigma comes with the test extras

ROOT = Path(__file__).resolve().parent.parent
APP_ID = "TA-fortra-emailauth"
REQUIREMENTS = (
    "requests",
    "urllib3",
    "idna",
    "certifi",
    "charset-normalizer",
    "splunk-sdk",
    "python-json-logger",
    # pip judges environment markers by the Python running it, not --python-version: name the
    # dependencies that only Python 3.9 needs.
    "typing_extensions",
)
TARGET_PYTHON = "3.9"
_COMPILED = (".so", ".pyd", ".pyc", ".pyo", ".dll", ".dylib", ".exe")
_AWS = {"boto3", "botocore"}


def version() -> str:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'^version\s*=\s*"([^"]+)"', text, re.MULTILINE)
    if not found:
        raise SystemExit("pyproject.toml has no version")
    return found.group(1)


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *args], check=True)


def vendored_lib(cache: Path) -> Path:
    """The dependency tree for ``lib/``, installed once per requirement list."""
    key = hashlib.sha256("\n".join((TARGET_PYTHON, *REQUIREMENTS)).encode()).hexdigest()[:16]
    target = cache / key
    if (target / ".complete").exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    wheels = cache / f"wheels-{key}"
    _pip("wheel", "--no-deps", "--wheel-dir", str(wheels), "splunk-sdk")
    _pip(
        "install", "--target", str(target), "--no-compile", "--only-binary=:all:",
        "--python-version", TARGET_PYTHON, "--implementation", "py", "--abi", "none", "--platform", "any",
        "--find-links", str(wheels), *REQUIREMENTS,
    )  # fmt: skip
    shutil.rmtree(target / "bin", ignore_errors=True)  # console scripts are of no use in an add-on
    (target / ".complete").touch()
    return target


def imports_aws(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        if any(name.split(".")[0] in _AWS for name in names):
            return True
    return False


def _sources(package: Path) -> Iterator[Path]:
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" not in path.parts and not imports_aws(path):
            yield path


def _ignore(_directory: str, names: List[str]) -> List[str]:
    return [n for n in names if n == "__pycache__" or n.endswith(_COMPILED) or n == ".complete"]


def stage(app_dir: Path, lib_cache: Path) -> None:
    shutil.copytree(ROOT / "splunk_app", app_dir, ignore=_ignore)
    write_splunk(app_dir / "default" / "savedsearches.conf")  # the Sigma detections, disabled
    conf = app_dir / "default" / "app.conf"
    build = os.environ.get("SOURCE_DATE_EPOCH") or str(int(time.time()))
    conf.write_text(
        conf.read_text(encoding="utf-8").replace("@VERSION@", version()).replace("@BUILD@", build)
    )
    lib = app_dir / "lib"
    shutil.copytree(vendored_lib(lib_cache), lib, ignore=_ignore)
    for path in _sources(ROOT / "forwarder"):
        dest = lib / path.relative_to(ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    (lib / "handlers").mkdir()
    for name in ("__init__.py", "splunk_input.py"):
        shutil.copyfile(ROOT / "handlers" / name, lib / "handlers" / name)
    compiled = [str(p) for p in app_dir.rglob("*") if p.suffix in _COMPILED]
    if compiled:
        raise SystemExit(f"compiled files would be packaged: {compiled}")


def _normalize(info: tarfile.TarInfo) -> tarfile.TarInfo:
    # AppInspect wants no world-writable files and no stray owners; scripts in bin/ stay executable.
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    executable = info.isdir() or "/bin/" in info.name
    info.mode = 0o755 if executable else 0o644
    return info


def build(out_dir: Path, lib_cache: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    package = out_dir / f"{APP_ID}-{version()}.tar.gz"
    with tempfile.TemporaryDirectory() as tmp:
        app_dir = Path(tmp) / APP_ID
        stage(app_dir, lib_cache)
        with tarfile.open(package, "w:gz") as tar:
            tar.add(str(app_dir), arcname=APP_ID, filter=_normalize)
    return package


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--lib-cache", type=Path, default=ROOT / "build" / "splunk-lib")
    args = parser.parse_args()
    print(build(args.out, args.lib_cache))


if __name__ == "__main__":
    main()
