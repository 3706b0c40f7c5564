"""The hook check: each kind of change a library could make to a hook it relies on is told, by name."""

from __future__ import annotations

import pytest

from forwarder.errors import ForwarderError
from forwarder.transport.hooks import Hook, UnsupportedLibrary, problems, require


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
