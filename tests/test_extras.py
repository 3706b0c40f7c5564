"""A build without the ``aws`` extra (no boto3): every setting that needs it is a configuration
error (exit 2) naming the extra to install, found before any network call, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.e2e.helpers import cli, env_for
from tests.receivers.silent import Silent

INSTALL = "pip install 'emailauth-audit-forwarder[aws]'"
BLOCKER = """
import sys


class NoAws:
    '''boto3 and botocore are not installed, as after `pip install .` without the aws extra.'''

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("boto3", "botocore", "s3transfer"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoAws())
"""

AWS_SETTINGS = [
    ("FORWARDER_STATE", "s3://bucket/state"),
    ("FORWARDER_STATE", "dynamodb://table"),
    ("FORWARDER_QUARANTINE", "s3://bucket/quarantine"),
    ("FORWARDER_SINK", "s3://bucket/events"),
    ("FORWARDER_SINK", "firehose://stream"),
    ("FORWARDER_SINK", "securitylake://bucket/ext/emailauth"),
    ("FORWARDER_CREDENTIALS", "secretsmanager:emailauth/api"),
    ("FORWARDER_CREDENTIALS", "ssm:/emailauth/api"),
    ("FORWARDER_TENANTS", "s3://bucket/tenants.json"),
    ("FORWARDER_TENANTS", "secretsmanager:emailauth/tenants"),
    ("FORWARDER_SECOPS_CREDENTIALS", "secretsmanager:emailauth/secops-key"),
]


@pytest.fixture
def no_aws(tmp_path, monkeypatch):
    site = tmp_path / "no-aws"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    monkeypatch.setenv("PYTHONPATH", str(site))
    probe = subprocess.run([sys.executable, "-c", "import boto3"], capture_output=True, text=True)
    assert "No module named 'boto3'" in probe.stderr  # the blocker works


# every command with each setting it reads
COMMANDS = [(["run"], s) for s in AWS_SETTINGS] + [(["check"], s) for s in AWS_SETTINGS]
COMMANDS += [(["state", "show"], s) for s in AWS_SETTINGS if s[0] == "FORWARDER_STATE"]
COMMANDS += [(["quarantine", "list"], s) for s in AWS_SETTINGS if s[0] == "FORWARDER_QUARANTINE"]


@pytest.mark.parametrize("command, setting", COMMANDS)
def test_a_setting_that_needs_boto3_names_the_extra_to_install(no_aws, tmp_path, command, setting):
    variable, value = setting
    with Silent() as api:
        env = env_for(api.url, "stdout", str(tmp_path / "state"), FORWARDER_USERS="a@b.example")
        env[variable] = value
        result = cli(*command, env=env, cwd=tmp_path)
        assert not api.accepted  # before any network call
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stderr
    assert INSTALL in result.stderr and variable in result.stderr


def test_without_an_aws_setting_nothing_asks_for_boto3(no_aws, tmp_path):
    env = env_for("https://127.0.0.1:9", "stdout", str(tmp_path / "state"), FORWARDER_USERS="a@b.example")
    result = cli("state", "show", env=env, cwd=tmp_path)
    assert result.returncode == 0 and INSTALL not in result.stdout + result.stderr


def test_the_message_is_the_same_for_every_runtime():
    from forwarder.extras import missing_problem

    assert missing_problem("FORWARDER_SINK", "firehose://", modules=("no_such_module_x",)) == (
        f"FORWARDER_SINK: firehose:// needs boto3, which this installation lacks: {INSTALL}"
    )
    assert missing_problem("FORWARDER_SINK", "firehose://", modules=("json",)) is None


def test_without_pyarrow_the_security_lake_sink_names_its_extra(monkeypatch):
    from forwarder import extras
    from forwarder.sinks import sink_problems
    from forwarder.sinks.settings import SinkSettings

    monkeypatch.setattr(extras, "PARQUET_MODULES", ("no_such_module_x",))
    settings = SinkSettings(uri="securitylake://bucket/ext/emailauth")
    assert sink_problems(settings, "ocsf") == [
        "FORWARDER_SINK: securitylake:// writes Parquet with pyarrow, which this installation lacks: "
        "pip install 'emailauth-audit-forwarder[aws,securitylake]' (in Lambda, the layer template.yaml's "
        "SecurityLakeLayerArn names)"
    ]
