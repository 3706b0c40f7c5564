"""The work queue and the secrets read at Lambda start against an endpoint that never answers: each
ends at FORWARDER_HTTP_TIMEOUT (not botocore's 60 s read timeout times its retries) with an error
naming the queue or the secret, botocore retrying nothing."""

from __future__ import annotations

import pytest

from forwarder import credentials
from forwarder.app import credentials_for
from forwarder.config import load_settings
from forwarder.errors import ConfigError
from forwarder.fanout.queue import QueueError
from forwarder.fanout.settings import load_fanout_settings
from forwarder.fanout.workitem import WorkItem
from forwarder.tenants import load_tenants
from handlers.aws_lambda import environment
from tests.aws.conftest import connections
from tests.hostile.test_aws_deadline import outcome_of  # what a call raised, on a guarded thread

QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/work.fifo"
DEADLINE = "no complete response within 1 s (HTTP timeout)"
SECRETS = {
    "secretsmanager:forwarder/api": "Secrets Manager GetSecretValue",
    "ssm:/forwarder/api": "SSM GetParameter",
}


@pytest.fixture(autouse=True)
def empty_cache():
    credentials.forget()
    yield
    credentials.forget()


def test_a_silent_queue_ends_a_send_at_the_http_timeout(silent):
    env = {"FORWARDER_QUEUE_URL": QUEUE, "FORWARDER_HTTP_TIMEOUT": "1"}
    queue = load_fanout_settings(env).queue()  # as the planner and the worker make it
    item = WorkItem("acme", "c1", 0, ("user/u0@acme.example",), (), ())

    error = outcome_of(lambda: queue.send([item]))

    assert isinstance(error, QueueError), repr(error)
    assert str(error) == f"cannot queue work on {QUEUE}: SQS SendMessageBatch: {DEADLINE}"
    assert connections(silent) == 1  # cut at the deadline: botocore retried none


@pytest.mark.parametrize("ref", sorted(SECRETS))
def test_a_silent_secret_store_ends_the_credentials_read_at_the_http_timeout(silent, ref):
    env = {"FORWARDER_API_URL": "https://api.example.com", "FORWARDER_CREDENTIALS": ref}
    settings = load_settings({**env, "FORWARDER_HTTP_TIMEOUT": "1"})

    error = outcome_of(lambda: credentials_for(settings))

    assert isinstance(error, ConfigError), repr(error)
    assert error.problems == [f"FORWARDER_CREDENTIALS: cannot read {ref}: {SECRETS[ref]}: {DEADLINE}"]
    assert connections(silent) == 1


READERS = {  # what the Lambda handlers read first, before any setting is parsed
    "FORWARDER_SINK_TOKEN_SECRET": environment,
    "FORWARDER_TENANTS": load_tenants,
}


@pytest.mark.parametrize("variable", sorted(READERS))
def test_a_silent_secret_store_ends_a_read_at_lambda_start_at_the_http_timeout(silent, variable):
    ref = "secretsmanager:forwarder/other"
    env = {variable: ref, "FORWARDER_HTTP_TIMEOUT": "1"}

    error = outcome_of(lambda: READERS[variable](env))

    assert isinstance(error, ConfigError), repr(error)
    assert error.problems == [f"{variable}: cannot read {ref}: Secrets Manager GetSecretValue: {DEADLINE}"]
    assert connections(silent) == 1
