"""Fixtures every sink test module uses."""

from __future__ import annotations

import pytest

from forwarder import retry


@pytest.fixture
def waits(monkeypatch):
    """Every backoff pause the sink asks for, instead of sleeping."""
    pauses: list[float] = []
    monkeypatch.setattr(retry, "sleep", pauses.append)
    return pauses
