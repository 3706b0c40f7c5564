"""What each package holds: the wheel the library, the Lambda package and the add-on their runtime's
closure (the add-on's own contents are checked on the built package in tests/splunk)."""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import zipfile

import pytest
from runtime_modules import LAMBDA_ENTRIES, ROOT, SPLUNK_ENTRIES, closure, prune

NEVER_AT_RUNTIME = (
    "forwarder.sim",
    "forwarder.cli",
    "forwarder.console",
    "forwarder.demo",
    "forwarder.check",
)


def test_the_lambda_entries_are_the_templates_handlers_and_the_builds():
    template = (ROOT / "template.yaml").read_text()
    handlers = {h.rpartition(".")[0] for h in re.findall(r"Handler: (\S+)", template)}
    assert handlers == set(LAMBDA_ENTRIES)
    built = re.search(r"^LAMBDA_ENTRIES\s*:=\s*(.+)$", (ROOT / "mk" / "aws.mk").read_text(), re.M)
    assert built is not None and built.group(1).split() == list(LAMBDA_ENTRIES)


@pytest.mark.parametrize("entries", [LAMBDA_ENTRIES, SPLUNK_ENTRIES], ids=["lambda", "splunk"])
def test_no_runtime_reaches_the_simulator_the_cli_or_the_console(entries):
    found = closure(entries)
    assert set(entries) <= found and "forwarder.pipeline" in found
    assert not [m for m in found if m.startswith(NEVER_AT_RUNTIME)]
    other = SPLUNK_ENTRIES if entries == LAMBDA_ENTRIES else LAMBDA_ENTRIES
    assert not found & set(other)


def test_a_registry_ships_every_plugin_it_can_name():
    found = closure(LAMBDA_ENTRIES)
    sinks = {p.stem for p in (ROOT / "forwarder" / "sinks").glob("*.py")} - {"__init__"}
    assert {f"forwarder.sinks.{s}" for s in sinks} <= found


def test_a_pruned_lambda_tree_imports_every_module_it_holds_and_nothing_else(tmp_path):
    shutil.copytree(ROOT / "forwarder", tmp_path / "forwarder", ignore=shutil.ignore_patterns("__pycache__"))
    prune(tmp_path, LAMBDA_ENTRIES)
    held = sorted(
        ".".join(p.relative_to(tmp_path).with_suffix("").parts).removesuffix(".__init__")
        for p in tmp_path.rglob("*.py")
    )
    assert set(held) == closure(LAMBDA_ENTRIES)
    script = tmp_path / "imports.py"
    script.write_text(
        "import importlib, sys\n"
        "for m in sys.argv[1:]:\n"
        "    importlib.import_module(m)\n"
        "try:\n"
        "    import forwarder.sim\n"
        "except ModuleNotFoundError:\n"
        "    print('no simulator')\n"
        "else:\n"
        "    print(forwarder.sim.__path__, sys.path)\n"
    )
    # -S: no .pth files, so not the editable install of the whole tree; the dependencies stay reachable
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), *site.getsitepackages()])}
    done = subprocess.run([sys.executable, "-S", str(script), *held], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "no simulator"


def test_the_wheel_installs_the_forwarder_package_only(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("*.whl")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"forwarder"}


def test_the_lambda_package_carries_every_extra_its_sinks_need_but_pyarrow_which_is_a_layer():
    """The SecOps sink signs with cryptography (the google extra): installed with the package.
    pyarrow (the securitylake extra, 89 MB) is the layer template.yaml's SecurityLakeLayerArn names."""
    build = (ROOT / "mk" / "aws.mk").read_text()
    installed = re.search(r'^\s+"\$\$\(ls build/lambda-wheel/\*\.whl\)\[([a-z,]+)\]"$', build, re.M)
    assert installed is not None and set(installed.group(1).split(",")) == {"aws", "google"}
    assert "pyarrow==$(PYARROW_VERSION)" in build
    assert "SecurityLakeLayerArn" in (ROOT / "template.yaml").read_text()
    needed = {
        m for m in closure(LAMBDA_ENTRIES) if m in ("forwarder.sinks.secops", "forwarder.sinks.securitylake")
    }
    assert needed == {"forwarder.sinks.secops", "forwarder.sinks.securitylake"}
