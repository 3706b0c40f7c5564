"""template.yaml: translated by aws-sam-translator as CloudFormation would, and linted by cfn-lint
with no error or warning, both as the SAM template and as the translated CloudFormation."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from cfnlint.api import lint_file
from cfnlint.decode import decode
from samtranslator.translator.transform import transform

from forwarder.config import VARIABLES

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"
REQUIRED = {
    "ApiUrl": "https://api.example.com",
    "CredentialsSecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:forwarder-api-AbCdEf",
    "SinkUri": "hec+https://splunk.example.com:8088",
}


class NoManagedPolicies:
    """The template names no SAM policy templates or managed policies by name: nothing to look up."""

    def load(self) -> dict:
        return {}


@pytest.fixture(autouse=True)
def region(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # the translator builds ARNs for a region
    monkeypatch.setenv("AWS_REGION", "us-east-1")


@pytest.fixture(scope="module")
def sam():
    template, problems = decode(str(TEMPLATE))
    assert not problems, problems
    return template


def translate(sam, **parameters):
    fragment = copy.deepcopy(json.loads(json.dumps(sam)))
    # what `sam package` / `sam deploy` do with the local CodeUri
    fragment["Resources"]["ForwarderFunction"]["Properties"]["CodeUri"] = "s3://artifacts/forwarder.zip"
    return transform(fragment, {**REQUIRED, **parameters}, NoManagedPolicies())


def problems(path: Path):
    return [f"{m.rule.id} {m.message} ({m.linenumber})" for m in lint_file(path)]


def test_the_sam_template_lints_clean():
    assert problems(TEMPLATE) == []


@pytest.mark.parametrize("backend", ["dynamodb", "s3"])
def test_the_translated_template_lints_clean(sam, tmp_path, backend):
    out = tmp_path / "cloudformation.json"
    out.write_text(json.dumps(translate(sam, StateBackend=backend), indent=1))
    assert problems(out) == []


def test_the_function_and_its_schedule(sam):
    resources = translate(sam)["Resources"]
    function = resources["ForwarderFunction"]["Properties"]
    assert function["Runtime"] in ("python3.12", "python3.13")
    assert function["Architectures"] == ["arm64"]
    assert function["Handler"] == "handlers.aws_lambda.handler"
    assert function["ReservedConcurrentExecutions"] == 1
    assert 60 < function["Timeout"] < 300  # under the default 5-minute schedule
    rule = resources["ForwarderFunctionScheduledRun"]["Properties"]
    target = rule["Targets"][0]
    assert target["RetryPolicy"]["MaximumRetryAttempts"] == 0
    assert "DeadLetterConfig" in target
    invoke = next(r for r in resources.values() if r["Type"] == "AWS::Lambda::EventInvokeConfig")
    assert invoke["Properties"]["MaximumRetryAttempts"] == 0
    assert sam["Parameters"]["ScheduleExpression"]["Default"] == "rate(5 minutes)"


def test_every_environment_variable_is_a_known_setting(sam):
    env = sam["Resources"]["ForwarderFunction"]["Properties"]["Environment"]["Variables"]
    lambda_only = {"FORWARDER_SINK_TOKEN_SECRET", "FORWARDER_DEADLINE_MARGIN", "FORWARDER_METRICS_NAMESPACE"}
    assert set(env) - {v.name for v in VARIABLES} <= lambda_only
    assert "FORWARDER_CLIENT_SECRET" not in env and "FORWARDER_SINK_TOKEN" not in env  # secrets stay secret


def test_state_table_and_bucket_are_locked_down(sam):
    resources = translate(sam)["Resources"]
    table = resources["StateTable"]["Properties"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["SSESpecification"]["SSEEnabled"] is True
    assert table["TimeToLiveSpecification"] == {"AttributeName": "lease_expires", "Enabled": True}
    bucket = resources["DataBucket"]["Properties"]
    assert bucket["VersioningConfiguration"]["Status"] == "Enabled"
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    statement = resources["DataBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"][0]
    assert statement["Effect"] == "Deny" and statement["Condition"]["Bool"]["aws:SecureTransport"] == "false"


def test_the_role_reaches_only_its_own_resources(sam):
    role = translate(sam)["Resources"]["ForwarderRole"]["Properties"]
    text = json.dumps(role["Policies"])
    assert '"Resource": "*"' not in text
    actions = {a for p in role["Policies"] for a in json.dumps(p["PolicyDocument"]).split('"') if ":" in a}
    assert "dynamodb:Scan" not in actions and "s3:*" not in actions


def test_alarms_on_errors_throttles_and_lag(sam):
    resources = translate(sam)["Resources"]
    alarms = {
        r["Properties"]["MetricName"]: r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
    }
    assert set(alarms) == {"Errors", "Throttles", "NewestRecordAgeSeconds"}
    lag = alarms["NewestRecordAgeSeconds"]
    assert lag["Namespace"] == "EmailAuthForwarder"  # what handlers.aws_lambda writes
    assert lag["TreatMissingData"] == "breaching"  # no run at all is unhealthy too
