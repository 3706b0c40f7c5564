"""Aligned text tables: numbers right-aligned with thousands separators, colour applied after padding
so escape codes never skew the columns."""

from __future__ import annotations

import re
from typing import List, NamedTuple, Sequence, Tuple, Union

from .style import Style


class Painted(NamedTuple):
    """A cell shown in colour (names from ``Style.paint``)."""

    text: str
    names: Tuple[str, ...]


Cell = Union[str, int, float, None, Painted]


_NUMBER = re.compile(r"^-?[\d,]+(\.\d+)?$")


def _is_number(cell: Cell) -> bool:
    if isinstance(cell, Painted):
        return bool(_NUMBER.match(cell.text))
    return cell is None or isinstance(cell, (int, float))


def _text(cell: Cell) -> str:
    if cell is None:
        return "-"
    if isinstance(cell, Painted):
        return cell.text
    if isinstance(cell, bool):
        return str(cell).lower()
    if isinstance(cell, int):
        return f"{cell:,}"
    if isinstance(cell, float):
        return f"{cell:,.1f}"
    return cell


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    style: Style,
    *,
    indent: int = 0,
) -> str:
    """The rows under ``headers``, columns two spaces apart; a column holding numbers is right-aligned.
    Nothing is cut: a long last column wraps in the terminal rather than lose a reason."""
    texts = [[_text(c) for c in row] for row in rows]
    numeric = [bool(rows) and all(_is_number(row[i]) for row in rows) for i in range(len(headers))]
    widths = [max([len(h)] + [len(t[i]) for t in texts]) for i, h in enumerate(headers)]
    lines: List[str] = []

    def line(cells: Sequence[str], paint: Sequence[Tuple[str, ...]]) -> str:
        out = []
        for i, text in enumerate(cells):
            last = i == len(cells) - 1
            padded = text.rjust(widths[i]) if numeric[i] else text if last else text.ljust(widths[i])
            out.append(style.paint(padded, *paint[i]) if paint[i] else padded)
        return " " * indent + "  ".join(out)

    lines.append(line(list(headers), [("bold",)] * len(headers)))
    for row, text in zip(rows, texts):
        lines.append(line(text, [c.names if isinstance(c, Painted) else () for c in row]))
    return "\n".join(lines) + "\n"
