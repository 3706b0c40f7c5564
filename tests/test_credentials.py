"""API credentials and sink tokens from Secrets Manager and SSM on the moto server."""

from __future__ import annotations

import json

import boto3
import pytest

from forwarder import credentials
from forwarder.app import credentials_for
from forwarder.config import load_settings
from forwarder.errors import ConfigError

SECRET = "s3cr3t-client-secret-value"
PAIR = json.dumps({"client_id": "client-1", "client_secret": SECRET})


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def empty_cache():
    credentials.forget()
    yield
    credentials.forget()


def test_from_secrets_manager_by_name_and_arn(aws):
    arn = boto3.client("secretsmanager").create_secret(Name="forwarder/api", SecretString=PAIR)["ARN"]
    for ref in ("secretsmanager:forwarder/api", f"secretsmanager:{arn}"):
        creds = credentials.load_credentials(ref)
        assert (creds.client_id, creds.client_secret) == ("client-1", SECRET)
        assert SECRET not in repr(creds)


def test_from_an_ssm_secure_string(aws):
    boto3.client("ssm").put_parameter(Name="/forwarder/api", Value=PAIR, Type="SecureString")
    creds = credentials.load_credentials("ssm:/forwarder/api")
    assert creds.client_secret == SECRET


def test_settings_with_a_reference_use_it(aws):
    boto3.client("ssm").put_parameter(Name="/forwarder/api", Value=PAIR, Type="SecureString")
    env = {"FORWARDER_API_URL": "https://api.example.com", "FORWARDER_CREDENTIALS": "ssm:/forwarder/api"}
    assert credentials_for(load_settings(env)).client_id == "client-1"


def test_cached_for_a_bounded_time(aws):
    client = boto3.client("secretsmanager")
    client.create_secret(Name="api", SecretString=PAIR)
    clock = Clock()
    assert credentials.load_credentials("secretsmanager:api", clock).client_id == "client-1"
    client.update_secret(SecretId="api", SecretString=json.dumps({"client_id": "c2", "client_secret": "x"}))
    clock.now += credentials.CACHE_SECONDS - 1
    assert credentials.load_credentials("secretsmanager:api", clock).client_id == "client-1"  # warm
    clock.now += 1
    assert credentials.load_credentials("secretsmanager:api", clock).client_id == "c2"  # refreshed
    client.update_secret(SecretId="api", SecretString=PAIR)
    credentials.forget()
    assert credentials.load_credentials("secretsmanager:api", clock).client_id == "client-1"


@pytest.mark.parametrize(
    "value",
    [
        f"not json {SECRET}",
        json.dumps({"client_id": "c"}),
        json.dumps({"client_id": "c", "client_secret": ""}),
        json.dumps([SECRET]),
    ],
)
def test_a_malformed_secret_is_named_but_never_shown(aws, value):
    boto3.client("secretsmanager").create_secret(Name="api", SecretString=value)
    with pytest.raises(ConfigError) as err:
        credentials.load_credentials("secretsmanager:api")
    assert "FORWARDER_CREDENTIALS: secretsmanager:api must hold JSON" in str(err.value)
    assert SECRET not in str(err.value)


def test_missing_secret_and_parameter_name_the_reference(aws):
    with pytest.raises(ConfigError, match="FORWARDER_CREDENTIALS: cannot read secretsmanager:nope: Resource"):
        credentials.load_credentials("secretsmanager:nope")
    with pytest.raises(ConfigError, match="cannot read ssm:/nope: ParameterNotFound"):
        credentials.load_credentials("ssm:/nope")


def test_sink_token_as_text_or_json(aws):
    client = boto3.client("secretsmanager")
    client.create_secret(Name="plain", SecretString="hec-token-1\n")
    client.create_secret(Name="json", SecretString=json.dumps({"token": "hec-token-2"}))
    client.create_secret(Name="other", SecretString=json.dumps({"password": "hec-token-3"}))
    assert credentials.load_token("secretsmanager:plain") == "hec-token-1"
    assert credentials.load_token("secretsmanager:json") == "hec-token-2"
    with pytest.raises(ConfigError, match=r"FORWARDER_SINK_TOKEN_SECRET: .* without a token field") as err:
        credentials.load_token("secretsmanager:other")
    assert "hec-token-3" not in str(err.value)


@pytest.mark.parametrize("ref", ["vault:x", "secretsmanager:", "ssm"])
def test_unknown_reference_kinds_are_refused(ref):
    with pytest.raises(ConfigError, match="expected secretsmanager:<secret id> or ssm:<parameter name>"):
        credentials.load_credentials(ref)
