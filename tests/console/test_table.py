"""Console tables: alignment, colour and missing values."""

from __future__ import annotations

from forwarder.console.style import Style
from forwarder.console.table import Painted, table
from tests.console.terminal import ANSI


def test_table_aligns_numbers_right_and_colour_does_not_move_columns():
    rows = [["alpha", 5, Painted("ok", ("green",))], ["b", 12345, Painted("FAIL", ("red", "bold"))]]
    plain = table(["name", "count", "state"], rows, Style(False))
    assert plain.splitlines() == ["name    count  state", "alpha       5  ok", "b      12,345  FAIL"]
    coloured = table(["name", "count", "state"], rows, Style(True))
    assert "\x1b[32mok" in coloured
    assert ANSI.sub("", coloured) == plain


def test_a_coloured_number_stays_right_aligned():
    rows = [[Painted("1", ("red",))], [250]]
    assert table(["failed"], rows, Style(False)).splitlines() == ["failed", "     1", "   250"]


def test_missing_values_show_as_a_dash_and_keep_a_numeric_column_right_aligned():
    assert table(["n"], [[None], [1000]], Style(False)).splitlines() == ["    n", "    -", "1,000"]
