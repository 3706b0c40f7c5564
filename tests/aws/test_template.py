"""template.yaml: translated by aws-sam-translator as CloudFormation would, and linted by cfn-lint
with no error or warning, both as the SAM template and as the translated CloudFormation."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from cfnlint.api import lint_file
from cfnlint.decode import decode
from samtranslator.translator.transform import transform

from forwarder.config import EVERYWHERE, FANOUT, LAMBDA, VARIABLES, read

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
    fragment["Globals"]["Function"]["CodeUri"] = "s3://artifacts/forwarder.zip"
    return transform(fragment, {**REQUIRED, **parameters}, NoManagedPolicies())


def problems(path: Path):
    return [f"{m.rule.id} {m.message} ({m.linenumber})" for m in lint_file(path)]


def test_the_sam_template_lints_clean():
    assert problems(TEMPLATE) == []


@pytest.mark.parametrize("backend", ["dynamodb", "s3"])
@pytest.mark.parametrize("mode", ["single", "fanout"])
@pytest.mark.parametrize(
    "tenants", ["", "arn:aws:secretsmanager:us-east-1:123456789012:secret:tenants-AbCdEf"]
)
def test_the_translated_template_lints_clean(sam, tmp_path, backend, mode, tenants):
    out = tmp_path / "cloudformation.json"
    translated = translate(sam, StateBackend=backend, Mode=mode, TenantsSecretArn=tenants)
    out.write_text(json.dumps(translated, indent=1))
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
    assert sam["Parameters"]["ScheduleMinutes"]["Default"] == 5


@pytest.mark.parametrize("mode", ["single", "fanout"])
def test_the_runs_are_told_the_rate_of_their_rule(sam, mode):
    """FORWARDER_SCHEDULE_INTERVAL sizes a run's budget and the revisit bounds: it is the rule's rate,
    from one parameter, in every function of either mode."""
    resources = translate(sam, Mode=mode, ScheduleMinutes="15")["Resources"]
    rules = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Events::Rule"]
    functions = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Lambda::Function"]
    assert rules and functions
    for rule in rules:
        assert rule["ScheduleExpression"] == {"Fn::Sub": "rate(${ScheduleMinutes} minutes)"}
    for function in functions:
        interval = function["Environment"]["Variables"]["FORWARDER_SCHEDULE_INTERVAL"]
        assert interval == {"Fn::Sub": "${ScheduleMinutes}m"}
    for minutes in (5, 60):  # the parameter's bounds give a valid rate and interval
        assert (
            read({"FORWARDER_SCHEDULE_INTERVAL": f"{minutes}m"}, "FORWARDER_SCHEDULE_INTERVAL")
            == minutes * 60
        )


def check_environment(env, allowed):
    """Every variable is in the configuration table and applies where it is set; every literal value
    is one the table accepts; no secret is set in the template (they come from secrets)."""
    table = {v.name: v for v in VARIABLES}
    assert set(env) <= set(table)
    assert {table[name].where for name in env} <= allowed
    assert not [name for name in env if table[name].secret]
    for name, value in env.items():
        if isinstance(value, str):
            read({name: value}, name)  # ConfigError if the template's value is one the table refuses


def test_every_environment_variable_is_a_known_setting(sam):
    env = sam["Resources"]["ForwarderFunction"]["Properties"]["Environment"]["Variables"]
    check_environment(env, {EVERYWHERE, LAMBDA})


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
        if r["Type"] == "AWS::CloudWatch::Alarm" and r.get("Condition") != "FanOut"
    }
    assert set(alarms) == {"Errors", "Throttles", "NewestRecordAgeSeconds"}
    lag = alarms["NewestRecordAgeSeconds"]
    assert lag["Namespace"] == "EmailAuthForwarder"  # what handlers.aws_lambda writes
    assert lag["TreatMissingData"] == "breaching"  # no run at all is unhealthy too


# -- fan-out mode ----------------------------------------------------------------------------------


def fanout_resources(sam):
    resources = translate(sam, Mode="fanout")["Resources"]
    return {k: v for k, v in resources.items() if v.get("Condition") != "Single"}


def test_fanout_planner_on_the_schedule_and_workers_behind_a_fifo_queue(sam):
    resources = fanout_resources(sam)
    planner = resources["PlannerFunction"]["Properties"]
    assert (
        planner["Handler"] == "handlers.aws_planner.handler" and planner["ReservedConcurrentExecutions"] == 1
    )
    assert (
        resources["PlannerFunctionScheduledRun"]["Properties"]["Targets"][0]["RetryPolicy"][
            "MaximumRetryAttempts"
        ]
        == 0
    )
    worker = resources["WorkerFunction"]["Properties"]
    assert worker["Handler"] == "handlers.aws_worker.handler"
    mapping = next(
        r["Properties"] for r in resources.values() if r["Type"] == "AWS::Lambda::EventSourceMapping"
    )
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["ScalingConfig"]["MaximumConcurrency"] == {"Ref": "WorkerConcurrency"}
    assert sam["Parameters"]["WorkerConcurrency"]["Default"] == 10 and mapping["BatchSize"] == 1
    queue = resources["WorkQueue"]["Properties"]
    assert queue["FifoQueue"] is True and queue["ContentBasedDeduplication"] is False
    assert queue["VisibilityTimeout"] >= 3 * worker["Timeout"]  # a live worker's item never reappears
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": ["WorkDeadLetterQueue", "Arn"]}
    assert resources["WorkDeadLetterQueue"]["Properties"]["FifoQueue"] is True
    alarm = resources["WorkDeadLetterAlarm"]["Properties"]
    assert alarm["Namespace"] == "AWS/SQS" and alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
    for name in ("PlannerFunction", "WorkerFunction"):
        env = sam["Resources"][name]["Properties"]["Environment"]["Variables"]
        check_environment(env, {EVERYWHERE, LAMBDA, FANOUT})
        assert env["FORWARDER_QUEUE_URL"] == {"Ref": "WorkQueue"}


def statements(role):
    return [s for p in role["Properties"]["Policies"] for s in p["PolicyDocument"]["Statement"]]


def actions(role):
    found = set()
    for statement in statements(role):
        text = json.dumps(statement.get("Action"))
        found |= {a for a in text.split('"') if ":" in a}
        for branch in ("Fn::If",):
            if branch in statement:
                found |= {a for a in json.dumps(statement[branch]).split('"') if ":" in a and "/" not in a}
    return found


def test_fanout_roles_reach_only_what_each_function_needs(sam):
    resources = fanout_resources(sam)
    planner, worker = resources["PlannerRole"], resources["WorkerRole"]
    for role in (planner, worker):
        assert '"Resource": "*"' not in json.dumps(role)
        assert "dynamodb:Scan" not in actions(role) and "s3:*" not in actions(role)
    assert {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:SendMessage"} <= actions(worker)
    assert "sqs:ReceiveMessage" not in actions(planner) and "dynamodb:DeleteItem" not in actions(planner)
    assert "s3:PutObject" in actions(worker)  # quarantine


def test_tenants_secret_and_its_prefix_replace_the_single_credentials(sam):
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:tenants-AbCdEf"
    resources = translate(sam, TenantsSecretArn=arn, CredentialsSecretArn="")["Resources"]
    text = json.dumps(resources["ForwarderRole"])
    assert '"Ref": "TenantsSecretArn"' in text and "secret:${TenantSecretsPrefix}*" in text
    env = sam["Resources"]["ForwarderFunction"]["Properties"]["Environment"]["Variables"]
    assert env["FORWARDER_TENANTS"] == {
        "Fn::If": ["HasTenants", {"Fn::Sub": "secretsmanager:${TenantsSecretArn}"}, ""]
    }


def test_the_security_lake_layer_goes_to_every_function_when_given(sam, tmp_path):
    """Each function loads the sink's configuration, so each gets pyarrow when a layer is named."""
    layer = "arn:aws:lambda:us-east-1:123456789012:layer:emailauth-pyarrow:3"
    chosen = {"Fn::If": ["HasSecurityLakeLayer", [{"Ref": "SecurityLakeLayerArn"}], {"Ref": "AWS::NoValue"}]}
    for mode, names in (("single", ["ForwarderFunction"]), ("fanout", ["PlannerFunction", "WorkerFunction"])):
        given = translate(sam, Mode=mode, SecurityLakeLayerArn=layer)
        assert [given["Resources"][n]["Properties"]["Layers"] for n in names] == [chosen] * len(names)
        out = tmp_path / f"{mode}.json"
        out.write_text(json.dumps(given, indent=1))
        assert problems(out) == []


SENTINEL = {
    "SinkUri": "sentinel+https://emailauth-a1b2.eastus-1.ingest.monitor.azure.com",
    "SentinelRuleId": "dcr-0123456789abcdef0123456789abcdef",
    "AzureTenantId": "72f988bf-86f1-41af-91ab-2d7cd011db47",
    "AzureClientId": "11111111-2222-3333-4444-555555555555",
    "AzureClientSecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:azure-AbCdEf",
}
SECOPS = {
    "SinkUri": "secops+https://chronicle.us.rep.googleapis.com",
    "Format": "udm",
    "SecOpsProject": "my-secops-project",
    "SecOpsRegion": "us",
    "SecOpsInstance": "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0",
    "SecOpsKeySecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:secops-key-AbCdEf",
}


def evaluated(value, template, parameters):
    """``value`` with the template's conditions, Refs and simple Subs worked out for ``parameters``
    (defaults otherwise), an ``AWS::NoValue`` leaving its key out: what CloudFormation would set."""
    given = {n: p.get("Default") for n, p in template["Parameters"].items()} | {**REQUIRED, **parameters}

    def condition(name):
        return truth(template["Conditions"][name])

    def truth(node):
        ((op, arg),) = node.items()
        if op == "Fn::Not":
            return not truth(arg[0])
        if op == "Fn::Equals":
            return work(arg[0]) == work(arg[1])
        assert op == "Condition", op
        return condition(arg)

    def work(node):
        if isinstance(node, list):
            return [v for v in (work(item) for item in node) if v is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if set(node) == {"Fn::If"}:
            name, yes, no = node["Fn::If"]
            return work(yes if condition(name) else no)
        if set(node) == {"Ref"}:
            return NO_VALUE if node["Ref"] == "AWS::NoValue" else given.get(node["Ref"], f"<{node['Ref']}>")
        if set(node) == {"Fn::Sub"} and isinstance(node["Fn::Sub"], str):
            return re.sub(
                r"\$\{([A-Za-z:.]+)\}", lambda m: str(given.get(m[1], f"<{m[1]}>")), node["Fn::Sub"]
            )
        return {k: v for k, v in ((k, work(v)) for k, v in node.items()) if v is not NO_VALUE}

    return work(value)


NO_VALUE = object()
FUNCTIONS = {"single": ["ForwarderFunction"], "fanout": ["PlannerFunction", "WorkerFunction"]}


@pytest.mark.parametrize("mode", ["single", "fanout"])
@pytest.mark.parametrize(
    "sink, expected",
    [
        (
            SENTINEL,
            {
                "FORWARDER_SENTINEL_RULE_ID": SENTINEL["SentinelRuleId"],
                "FORWARDER_AZURE_TENANT_ID": SENTINEL["AzureTenantId"],
                "FORWARDER_AZURE_CLIENT_ID": SENTINEL["AzureClientId"],
                "FORWARDER_AZURE_CLIENT_SECRET_SECRET": f"secretsmanager:{SENTINEL['AzureClientSecretArn']}",
            },
        ),
        (
            SECOPS,
            {
                "FORWARDER_SECOPS_PROJECT": "my-secops-project",
                "FORWARDER_SECOPS_REGION": "us",
                "FORWARDER_SECOPS_INSTANCE": SECOPS["SecOpsInstance"],
                "FORWARDER_SECOPS_CREDENTIALS": f"secretsmanager:{SECOPS['SecOpsKeySecretArn']}",
            },
        ),
    ],
    ids=["sentinel", "secops"],
)
def test_sentinel_and_secops_parameters_set_their_settings_and_only_those_given(
    sam, tmp_path, mode, sink, expected
):
    translated = translate(sam, Mode=mode, **sink)
    out = tmp_path / "cloudformation.json"
    out.write_text(json.dumps(translated, indent=1))
    assert problems(out) == []
    secret = sink.get("AzureClientSecretArn") or sink["SecOpsKeySecretArn"]
    for name in FUNCTIONS[mode]:
        variables = translated["Resources"][name]["Properties"]["Environment"]["Variables"]
        env = {k: v for k, v in evaluated(variables, sam, sink).items() if k in SINK_VARIABLES and v}
        assert env == expected
        check_environment(env, {EVERYWHERE, LAMBDA})
        role = translated["Resources"][name]["Properties"]["Role"]["Fn::GetAtt"][0]
        assert secret in json.dumps(evaluated(translated["Resources"][role], sam, sink)), "the role reads it"
        unset = evaluated(variables, sam, {})
        assert [k for k in unset if k in SINK_VARIABLES and unset[k] != ""] == [], "an empty one set"


SINK_VARIABLES = {
    v.name
    for v in VARIABLES
    if v.name.startswith(("FORWARDER_SENTINEL", "FORWARDER_AZURE", "FORWARDER_SECOPS"))
}


def test_the_sinks_formats_are_offered():
    template, _ = decode(str(TEMPLATE))
    formats = set(template["Parameters"]["Format"]["AllowedValues"])
    assert {"ocsf", "udm"} <= formats
