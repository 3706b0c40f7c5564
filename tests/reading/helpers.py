"""Reading a source through without a reader's feedback, as the tests of the sources do."""

from __future__ import annotations

from typing import Any, List, Tuple

from forwarder.reading.pages import ReadEnd, Source


def read_through(source: Source) -> Tuple[List[Any], ReadEnd]:
    """Every record ``source`` yields, and how its read ended."""
    items: List[Any] = []
    while True:
        try:
            page = next(source)
        except StopIteration as stop:
            return items, stop.value
        items += page.items
