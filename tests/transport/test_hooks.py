"""The hook check: each kind of change a library could make to a hook it relies on is told, by name."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import pytest

from forwarder.errors import ForwarderError
from forwarder.transport.hooks import BOUNDS, Hook, UnsupportedLibrary, problems, require


class Library:
    """A stand-in for a library class at the version the overrides were written against."""

    table: dict = {}

    def _new_conn(self):
        return None

    def _put_conn(self, conn):
        return None

    def getresponse(self, *args, **kwargs):
        return None


class Renamed:
    """The same library a version later: one hook renamed, one taking a new parameter."""

    def _new_connection(self):
        return None

    def _put_conn(self, conn, pool):
        return None

    def getresponse(self, buffering, *args, **kwargs):
        return None


HOOKS = (
    Hook(Library, "_new_conn", ("self",)),
    Hook(Library, "_put_conn", ("self", "conn")),
    Hook(Library, "getresponse"),  # passed everything on as it came: any parameters do
)


def test_the_version_written_against_passes():
    assert problems(HOOKS) == []
    require(HOOKS, "lib", "1.0")


def test_a_missing_hook_and_a_changed_signature_each_fail_naming_library_version_and_hook():
    moved = [Hook(Renamed, h.name, h.params) for h in HOOKS]
    assert problems(moved) == [
        f"{__name__}.Renamed._new_conn is missing",
        f"{__name__}.Renamed._put_conn takes (self, conn, pool), not (self, conn)",
    ]
    with pytest.raises(UnsupportedLibrary) as raised:
        require(moved, "lib", "2.0")
    message = str(raised.value)
    assert message.startswith("lib 2.0 is not a version the forwarder's deadline watchdog supports")
    assert "Renamed._new_conn is missing" in message and "Renamed._put_conn takes" in message
    assert "pyproject.toml's bounds" in message
    assert isinstance(raised.value, ForwarderError)  # the CLI reports it as one line, no traceback


def test_an_attribute_an_instance_holds_and_a_table_that_must_be_shared():
    made = Library()
    made.pool = {}
    assert problems([Hook(made, "pool"), Hook(made, "table", same=Library.table)]) == []
    assert problems([Hook(made, "poolmanager")]) == [f"{__name__}.Library.poolmanager is missing"]
    assert problems([Hook(made, "table", same={})]) == [
        f"{__name__}.Library.table is no longer the table the forwarder writes"
    ]
    assert problems([Hook(made, "pool", ("self",))]) == [f"{__name__}.Library.pool is not callable"]


def test_the_bounds_named_in_the_message_are_pyproject_s_and_the_installed_versions_keep_them():
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    specs = BOUNDS.split(": ", 1)[1].split(", ")
    assert [spec.split(">=")[0] for spec in specs] == ["requests", "urllib3", "botocore", "PySocks"]
    for spec in specs:
        assert f'"{spec}' in pyproject, spec  # the same lower and upper bound (a marker may follow)
        name, bounds = spec.split(">=")
        low, high = bounds.split(",<")
        installed = tuple(int(part) for part in re.findall(r"\d+", version(name))[:2])
        assert tuple(int(part) for part in low.split(".")) <= installed < (int(high),), (name, installed)
