"""Assertions shared by the sink tests."""

from __future__ import annotations

from forwarder.events import Event, Rejection, SendResult


def only_rejection(result: SendResult, event: Event, delivered: int) -> Rejection:
    """The one rejection of ``result``, checked to be ``event`` with all else delivered."""
    assert result.delivered == delivered
    (rejection,) = result.rejected
    assert rejection.event is event
    return rejection
