"""The plugin registry (forwarder/plugins.py): lazy import, and errors that name the variable."""

from __future__ import annotations

import subprocess
import sys

import pytest

from forwarder.plugins import Registry

KINDS = Registry("FORWARDER_THING", "thing", {"b": "forwarder.jsonutil", "a": "forwarder.no_such_module"})


def test_a_known_key_loads_its_module():
    assert KINDS.load("b").__name__ == "forwarder.jsonutil"
    assert "b" in KINDS and "c" not in KINDS and KINDS.keys() == ["a", "b"]


def test_an_unknown_key_names_the_variable_and_the_choices():
    with pytest.raises(ValueError) as caught:
        KINDS.load("c")
    assert str(caught.value) == "FORWARDER_THING: thing 'c' is not supported (choose from a, b)"


def test_a_module_missing_from_the_build_is_said_so_naming_where():
    with pytest.raises(ValueError) as caught:
        KINDS.load("a", "where 'x'")
    assert str(caught.value).startswith("where 'x': the a thing is not available in this build (No module")


def test_choosing_imports_only_the_chosen_module():
    code = (
        "import sys; from forwarder.sinks import REGISTRY; REGISTRY.load('file'); "
        "print(sorted(m for m in sys.modules if m.startswith('forwarder.sinks.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "forwarder.sinks.file" in out and "forwarder.sinks.hec" not in out
