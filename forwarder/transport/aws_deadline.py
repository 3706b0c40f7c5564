"""botocore's side of ``aws.call``'s total deadline: connections the watchdog of forwarder.deadline
can reach, and no retry of an attempt it cut.

botocore bounds each socket read (``read_timeout``), not a response: an endpoint trickling its answer
would hold a call, and then its retries, far past the HTTP timeout. Imported with boto3 only.
botocore has no public hook to its connection pools: what this writes of its private parts is
checked at import (``_check_botocore``), and what a client holds when it is watched.
"""

from __future__ import annotations

from typing import Any

import botocore
from botocore.awsrequest import AWSHTTPConnectionPool, AWSHTTPSConnectionPool
from botocore.exceptions import BotoCoreError
from botocore.httpsession import URLLib3Session

from .. import deadline
from . import watched
from .hooks import Hook, require


def _check_botocore(made: URLLib3Session) -> None:
    """Raise UnsupportedLibrary unless ``watch`` can do its work in this botocore: every pool manager
    of a session (``made``: one new session), direct or through a proxy, shares the pool table of
    the session, which ``watch`` writes."""
    version = botocore.__version__
    require(
        (
            Hook(made, "_pool_classes_by_scheme"),
            Hook(made, "_manager"),
            Hook(made, "_get_proxy_manager", ("proxy_url",)),
            Hook(AWSHTTPConnectionPool, "ConnectionCls"),
            Hook(AWSHTTPSConnectionPool, "ConnectionCls"),
        ),
        "botocore",
        version,
    )
    table = made._pool_classes_by_scheme
    proxied = made._get_proxy_manager("http://127.0.0.1:9")  # made, never connected
    shared = (
        Hook(made._manager, "pool_classes_by_scheme", same=table),
        Hook(proxied, "pool_classes_by_scheme", same=table),
    )
    require(shared, "botocore", version)


_check_botocore(URLLib3Session())


class DeadlineExceeded(BotoCoreError):
    """The whole answer took longer than the client's HTTP timeout (an endpoint trickling it)."""

    fmt = "{message}"  # deadline.cut_message: the call, the deadline, the step it was cut at


class NoProgress(BotoCoreError):
    """A listing that says there is more but hands back no new token to read it with."""

    fmt = "{what}: answered a truncated listing without a new continuation token"


class _Cut(Exception):
    """Ends a call the watchdog cut, from inside botocore, before it retries."""


_POOLS = watched.watched_pools(AWSHTTPConnectionPool, AWSHTTPSConnectionPool)


def watch(client: Any) -> None:
    """Make a new ``client``'s connections reachable by the watchdog of the call in progress."""
    # botocore has no public hook to its connection pools: the pool classes are swapped in the one
    # dict its pool managers (proxied ones too) share, before the client makes any connection.
    require((Hook(client, "_endpoint"),), "botocore", botocore.__version__)
    require((Hook(client._endpoint, "http_session"),), "botocore", botocore.__version__)  # known there now
    client._endpoint.http_session._pool_classes_by_scheme.update(_POOLS)
    for event in ("before-send", "needs-retry"):  # before each try, and after each one
        client.meta.events.register_first(event, _end_if_cut, unique_id=f"forwarder-deadline-{event}")


def _end_if_cut(operation: Any = None, response: Any = None, **_: Any) -> None:
    """Try nothing more once the watchdog has cut the call, and forget the last try's socket (back in
    the pool, soon another call's), unless it answered with a body still to be read (a GetObject that
    succeeded: a failed try's error body was read whole, and its socket went back to the pool)."""
    call = deadline.current()
    if call is not None:
        if call.cut.is_set():
            raise _Cut()  # the call ends, the socket forgotten with it: the step it was cut at stays
        streaming = getattr(operation, "has_streaming_output", False)
        if not (streaming and response is not None and response[0].status_code < 300):
            call.attach(None)
