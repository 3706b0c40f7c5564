"""Import a transport module in a fresh interpreter after changing a library the way a new version
could: what the import (or first use) says. The libraries of the test process stay untouched."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# remove(cls, name): the hook gone from the class and every class it inherits it from (a rename).
PRELUDE = """
def remove(cls, name):
    for klass in cls.__mro__:
        if name in vars(klass):
            delattr(klass, name)
"""


def outcome(change: str, use: str) -> subprocess.CompletedProcess:
    code = PRELUDE + textwrap.dedent(change) + "\n" + textwrap.dedent(use)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
