"""An HTTP sink behind HTTP_PROXY (read by requests on each request, the sinks do not pin it): a
receiver trickling its status line and headers through the proxy is cut at the sink's deadline."""

from __future__ import annotations

import time

import pytest

from forwarder import retry
from forwarder.errors import SinkError
from forwarder.sinks.http_ndjson import HttpNdjsonSink
from forwarder.sinks.settings import SinkSettings
from tests.hostile.test_lying_receivers import event
from tests.receivers.forward_proxy import ForwardProxy, behind
from tests.receivers.trickling_peer import TricklingPeer


def test_a_receiver_trickling_through_the_proxy_is_cut_at_the_deadline(monkeypatch):
    with ForwardProxy() as proxy, TricklingPeer() as receiver:
        behind(monkeypatch, proxy.url)
        sink = HttpNdjsonSink(
            SinkSettings(uri=f"{receiver.url}/ingest", timeout_seconds=1),
            retry_policy=retry.RetryPolicy(attempts=1),
        )
        started = time.monotonic()
        with pytest.raises(SinkError, match="no complete response within 1 s"):
            sink.send([event(1)])
        assert time.monotonic() - started < 6  # the trickled reply takes ~14 s
    assert proxy.relayed == [f"POST {receiver.url}/ingest"]
