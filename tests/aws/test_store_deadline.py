"""The S3 and DynamoDB state stores against an endpoint that never answers: a load and a commit each
end at FORWARDER_HTTP_TIMEOUT with a StateError naming the object or item (not botocore's 60 s read
timeout times its retries), and a stop request ends them sooner."""

from __future__ import annotations

import pytest

from forwarder import stop
from forwarder.errors import ConflictError, StateError
from forwarder.state import open_store
from tests.aws.conftest import connections
from tests.hostile.test_aws_deadline import outcome_of  # what a call raised, on a guarded thread
from tests.state.contract import KEY, T0_US, delivered, make_record

STORES = {
    "s3": ("s3://quiet/p", "state object s3://quiet/p/streams/user%2Falice@example.com.json", "S3"),
    "dynamodb": (
        "dynamodb://quiet",
        "state dynamodb://quiet item 'stream#user/alice@example.com'",
        "DynamoDB",
    ),
}
ACTIONS = {
    "load": ("read", lambda store: store.load(KEY)),
    "commit": ("write", lambda store: store.commit(KEY, delivered(make_record("a", T0_US)), None)),
}


@pytest.mark.parametrize("kind", sorted(STORES))
@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_a_silent_endpoint_ends_a_state_call_at_the_http_timeout(silent, kind, action):
    location, names, service = STORES[kind]
    doing, call = ACTIONS[action]
    store = open_store(location, timeout_seconds=1)

    error = outcome_of(lambda: call(store))

    assert isinstance(error, StateError) and not isinstance(error, ConflictError), repr(error)
    assert str(error).startswith(f"cannot {doing} {names}: {service} ")
    assert str(error).endswith("no complete response within 1 s (HTTP timeout)")
    assert connections(silent) == 1  # cut at the deadline: botocore retried none


@pytest.mark.parametrize("kind", sorted(STORES))
def test_a_stop_request_ends_a_state_call_before_its_deadline(silent, kind):
    store = open_store(STORES[kind][0], timeout_seconds=600)

    try:
        error = outcome_of(lambda: store.load(KEY), meanwhile=stop.request)
    finally:
        stop.reset()

    assert isinstance(error, stop.Stopped), repr(error)  # not a StateError: the run abandons, uncommitted
