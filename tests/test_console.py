"""The runtimes without a terminal never load the console package."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["handlers.aws_lambda", "handlers.splunk_input"])
def test_the_lambda_and_splunk_runtimes_do_not_load_the_console(module):
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.startswith('forwarder.')))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    loaded = eval(result.stdout)
    assert "forwarder.app" in loaded  # the import did load the forwarder
    assert not [m for m in loaded if m.startswith("forwarder.console")]
