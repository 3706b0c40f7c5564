"""Build the Splunk add-on package: ``dist/TA-fortra-emailauth-<version>.tar.gz``.

``ucc-gen`` (splunk-add-on-ucc-framework, pinned, in ``.venv-ucc`` made by ``make``) builds the add-on
from ``splunk_app/globalConfig.json`` and ``splunk_app/package/``: configuration and inputs pages,
REST handlers, the modular input's script, conf files. The Sigma detections become
``default/savedsearches.conf`` when ``tools/compile_detections.py`` exists. ``lib/`` gets the
forwarder, the add-on's ``handlers`` modules and the pure-Python dependencies (solnlib and
splunktaucclib for the UCC parts). Those are installed with pip for
Python 3.9 from pure wheels only (splunk-sdk ships an sdist, so its wheel is built first), which
keeps compiled code out and versions that still run on Splunk's Python 3.9. The installed set is
cached under ``build/splunk-lib/`` by a hash of the requirement list, so rebuilds need no network.
Forwarder modules that import boto3 are left out; the build fails on any compiled file.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Callable, Iterator, List

from runtime_modules import SPLUNK_ENTRIES, closure, files

ROOT = Path(__file__).resolve().parent.parent
APP_ID = "TA-fortra-emailauth"
REQUIREMENTS = (
    # Bounded as pyproject.toml bounds them: forwarder/transport overrides their private hooks.
    "requests>=2.28,<3",
    "urllib3>=1.26,<3",
    "idna",
    "certifi",
    "charset-normalizer",
    "splunk-sdk",
    "python-json-logger",
    # What UCC's handlers and the input use; solnlib 8 pulls compiled grpcio, 7.0.0 is pure Python.
    "solnlib==7.0.0",
    "splunktaucclib==8.2.0",
    # pip judges environment markers by the Python running it, not --python-version: name the
    # dependencies that only Python 3.9 needs.
    "typing_extensions",
)
TARGET_PYTHON = "3.9"
UCC_GEN = Path(os.environ.get("UCC_GEN") or ROOT / ".venv-ucc" / "bin" / "ucc-gen")
DETECTIONS = ROOT / "tools" / "compile_detections.py"
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
        # --no-warn-conflicts: pip would judge the target against the venv running it (types-requests
        # wants urllib3 2, splunklib's tree 1.26), two environments that never meet
        "install", "--target", str(target), "--no-compile", "--no-warn-conflicts", "--only-binary=:all:",
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


def _sources() -> Iterator[Path]:
    """The modules the input and the add-on's handlers can import (tools/runtime_modules.py), less
    those needing boto3: the add-on keeps no AWS state or sink."""
    for relative in sorted(files(closure(SPLUNK_ENTRIES))):
        if not imports_aws(ROOT / relative):
            yield ROOT / relative


def _ignore(_directory: str, names: List[str]) -> List[str]:
    return [n for n in names if n == "__pycache__" or n.endswith(_COMPILED) or n == ".complete"]


def _ignore_vendored(directory: str, names: List[str]) -> List[str]:
    """The dependencies' own test suites (certifi/tests) are not needed to run."""
    return _ignore(directory, names) + [n for n in names if n == "tests" and Path(directory, n).is_dir()]


def build_epoch() -> int:
    """The build number and every file time: SOURCE_DATE_EPOCH, else the last commit's time."""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return int(os.environ["SOURCE_DATE_EPOCH"])
    done = subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=ROOT, capture_output=True, text=True)
    return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


def ucc_build(out: Path) -> Path:
    if not UCC_GEN.exists():
        raise SystemExit(f"{UCC_GEN} is missing: `make splunk-app` installs the pinned ucc-gen")
    done = subprocess.run(
        [str(UCC_GEN), "build", "--source", str(ROOT / "splunk_app" / "package"),
         "--config", str(ROOT / "splunk_app" / "globalConfig.json"), "--ta-version", version(),
         "--output", str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"ucc-gen failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return out / APP_ID


def stage(app_dir: Path, lib_cache: Path, detections: Path = DETECTIONS) -> None:
    built = ucc_build(app_dir.parent / "ucc")
    shutil.copytree(built, app_dir, ignore=_ignore)
    # ucc-gen stamps the clock into app.conf's build and the pages' static paths (Splunk's cache
    # buster): one build number from the sources instead, so the same sources give the same package.
    epoch = build_epoch()
    conf = app_dir / "default" / "app.conf"
    conf.write_text(re.sub(r"(?m)^build = .*$", f"build = {epoch}", conf.read_text(encoding="utf-8")))
    for page in (app_dir / "appserver" / "templates").glob("*.html"):
        page.write_text(re.sub(r"/static/@\d+/", f"/static/@{epoch}/", page.read_text(encoding="utf-8")))
    if detections.exists():
        savedsearches = app_dir / "default" / "savedsearches.conf"
        subprocess.run([sys.executable, str(detections), "--splunk", str(savedsearches)], check=True)
    lib = app_dir / "lib"
    shutil.copytree(vendored_lib(lib_cache), lib, ignore=_ignore_vendored, dirs_exist_ok=True)
    for path in _sources():
        dest = lib / path.relative_to(ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    compiled = [str(p) for p in app_dir.rglob("*") if p.suffix in _COMPILED]
    if compiled:
        raise SystemExit(f"compiled files would be packaged: {compiled}")


def _normalizer(epoch: int) -> Callable[[tarfile.TarInfo], tarfile.TarInfo]:
    def normalize(info: tarfile.TarInfo) -> tarfile.TarInfo:
        # AppInspect wants no world-writable files and no stray owners; scripts in bin/ stay
        # executable. One time for every file: the same sources give the same package.
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = epoch
        executable = info.isdir() or "/bin/" in info.name
        info.mode = 0o755 if executable else 0o644
        return info

    return normalize


def build(out_dir: Path, lib_cache: Path, detections: Path = DETECTIONS) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    package = out_dir / f"{APP_ID}-{version()}.tar.gz"
    normalize = _normalizer(build_epoch())
    with tempfile.TemporaryDirectory() as tmp:
        app_dir = Path(tmp) / APP_ID
        stage(app_dir, lib_cache, detections)
        with (
            open(package, "wb") as raw,
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz,
            tarfile.open(fileobj=gz, mode="w") as tar,
        ):
            for path in [app_dir, *sorted(app_dir.rglob("*"))]:
                arcname = str(Path(APP_ID) / path.relative_to(app_dir))
                tar.add(str(path), arcname=arcname, recursive=False, filter=normalize)
    return package


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--lib-cache", type=Path, default=ROOT / "build" / "splunk-lib")
    args = parser.parse_args()
    print(build(args.out, args.lib_cache))


if __name__ == "__main__":
    main()
