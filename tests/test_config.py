from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from forwarder.config import (
    EVERYWHERE,
    VARIABLES,
    Settings,
    default_of,
    load_settings,
    read,
    splunk_fields,
)
from forwarder.config.readme import markdown_table, with_table
from forwarder.errors import ConfigError
from forwarder.sinks.settings import SinkSettings

README = Path(__file__).resolve().parents[1] / "README.md"

BASE = {
    "FORWARDER_API_URL": "https://api.example.com",
    "FORWARDER_CLIENT_ID": "id",
    "FORWARDER_CLIENT_SECRET": "s3cr3t-value",
}


def problems(**env: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_settings({**BASE, **env})
    return info.value.problems


def test_defaults_follow_the_contract():
    s = load_settings(BASE)
    assert s.object_types == ("user", "domain")
    assert s.format == "ecs" and s.sink.uri == "stdout" and s.state == "./state"
    assert s.initial_lookback_s == 14 * 86400 and s.lookback_window_s == 3600
    assert s.token_path == "/v1/ep/token"


def test_every_problem_is_reported_at_once_naming_its_variable():
    found = problems(
        FORWARDER_API_URL="http://api.example.com",
        FORWARDER_OBJECT_TYPES="user,organisation",
        FORWARDER_FORMAT="xml",
        FORWARDER_INITIAL_LOOKBACK="fortnight",
        FORWARDER_CONCURRENCY="0",
        FORWARDER_SINK="kafka://broker",
        FORWARDER_USERS="alice@example.com,bob",
        FORWARDER_SINK_VERIFY_TLS="maybe",
    )
    names = [p.split(":")[0] for p in found]
    assert names == [
        "FORWARDER_API_URL",
        "FORWARDER_OBJECT_TYPES",
        "FORWARDER_USERS",
        "FORWARDER_FORMAT",
        "FORWARDER_SINK",
        "FORWARDER_SINK_VERIFY_TLS",
        "FORWARDER_INITIAL_LOOKBACK",
        "FORWARDER_CONCURRENCY",
    ]
    assert "loopback" in found[0]
    assert "'bob'" in found[2]


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080", "http://localhost:1", "http://[::1]:9"])
def test_plain_http_only_for_loopback(url):
    assert load_settings({**BASE, "FORWARDER_API_URL": url}).api_url == url


def test_credentials_required_unless_a_reference_is_given():
    env = {"FORWARDER_API_URL": "https://api.example.com"}
    with pytest.raises(ConfigError) as info:
        load_settings(env)
    assert [p.split(":")[0] for p in info.value.problems] == [
        "FORWARDER_CLIENT_ID",
        "FORWARDER_CLIENT_SECRET",
    ]
    s = load_settings({**env, "FORWARDER_CREDENTIALS": "secretsmanager:prod/emailauth"})
    assert s.credentials_ref == "secretsmanager:prod/emailauth"
    with pytest.raises(ConfigError) as info:
        load_settings({**env, "FORWARDER_CREDENTIALS": "vault:x"})
    assert info.value.problems == [
        "FORWARDER_CREDENTIALS: expected secretsmanager:<secret id> or ssm:<parameter name>"
    ]


def test_domains_become_unicode_lowercase_and_bad_ones_are_named():
    s = load_settings({**BASE, "FORWARDER_DOMAINS": "XN--BCHER-KVA.example, Example.COM., bücher.example"})
    assert s.domains == ("bücher.example", "example.com")
    assert "not a valid domain" in problems(FORWARDER_DOMAINS="bad..domain")[0]


def test_overlapping_or_malformed_filters_are_refused():
    assert "covered by 'user.'" in problems(FORWARDER_FILTERS="user.,user.login")[0]
    assert "filterable_action prefix" in problems(FORWARDER_FILTERS="User Login")[0]


def test_secrets_stay_out_of_repr_and_errors():
    s = load_settings({**BASE, "FORWARDER_SINK_TOKEN": "hec-token-value"})
    assert "s3cr3t-value" not in repr(s) and "hec-token-value" not in repr(s)
    assert s.secrets() == ["s3cr3t-value", "hec-token-value"]
    headers = {"FORWARDER_SINK_HEADERS": "X-Api-Key: k3y-value; Content-Type: application/json"}
    assert load_settings({**BASE, **headers}).secrets() == ["s3cr3t-value", "k3y-value"]  # not every "json"
    text = str(ConfigError(problems(FORWARDER_SINK="https://user:pw@host/x")))
    assert "pw" not in text.replace("put credentials", "")


def test_every_variable_has_help_and_secret_ones_have_no_default():
    for v in VARIABLES:
        assert v.name.startswith("FORWARDER_") and v.help
        if v.secret:
            assert v.default is None


def test_the_readme_documents_every_variable():
    readme = README.read_text(encoding="utf-8")
    missing = [v.name for v in VARIABLES if f"| `{v.name}` |" not in readme]
    assert missing == []


def test_the_readme_table_is_the_configuration_table():
    readme = README.read_text(encoding="utf-8")
    assert with_table(readme, markdown_table(VARIABLES)) == readme, "run python tools/config_table.py"
    # and the comparison sees a change: a table one variable short, or one help text edited
    assert with_table(readme, markdown_table(VARIABLES[:-1])) != readme
    edited = (dataclasses.replace(VARIABLES[0], help="edited"), *VARIABLES[1:])
    assert with_table(readme, markdown_table(edited)) != readme


def test_every_default_is_a_value_its_own_kind_accepts():
    for v in VARIABLES:
        if v.default is not None:
            assert read({}, v.name) is not None, v.name


def test_every_setting_is_filled_from_exactly_one_variable():
    fields = [v.field for v in VARIABLES if v.field]
    assert len(fields) == len(set(fields))
    # notices: found; api_proxy: given by the runtime (the Splunk add-on's Proxy page)
    settings = {f.name for f in dataclasses.fields(Settings)} - {"sink", "notices", "api_proxy"}
    # FORWARDER_HTTP_TIMEOUT and FORWARDER_MAX_ATTEMPTS also fill these
    # (and the chosen sink's own variables fill its options; its address is its URI, parsed)
    filled = {"timeout_seconds", "max_attempts", "options"}
    sink = {f.name for f in dataclasses.fields(SinkSettings) if f.init} - filled
    assert set(fields) == settings | {f"sink.{name}" for name in sink}
    assert all(v.where == EVERYWHERE for v in VARIABLES if v.field)


def test_flags_are_the_table_flag_column():
    from forwarder.cli import build_parser

    run = build_parser()._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    flags = {o for a in run._actions for o in a.option_strings if o.startswith("--")}
    assert {v.flag for v in VARIABLES if v.flag} <= flags
    assert "--page-limit" in flags and "--sink-token" not in flags and "--deadline-margin" not in flags
    assert [v.name for v in VARIABLES if v.flag and (v.secret or v.where != EVERYWHERE)] == []


def test_one_variable_reads_as_the_table_says():
    assert read({"FORWARDER_DEADLINE_MARGIN": " 2m "}, "FORWARDER_DEADLINE_MARGIN") == 120
    assert read({}, "FORWARDER_METRICS_NAMESPACE") == "EmailAuthForwarder"
    with pytest.raises(ConfigError) as info:
        read({"FORWARDER_TENANT_CONCURRENCY": "65"}, "FORWARDER_TENANT_CONCURRENCY")
    assert info.value.problems == ["FORWARDER_TENANT_CONCURRENCY: must be between 1 and 64, got 65"]


def test_an_elasticsearch_sink_takes_only_formats_with_a_timestamp():
    sink = {"FORWARDER_SINK": "elasticsearch+https://es.example.com:9200", "FORWARDER_SINK_TOKEN": "k"}
    assert load_settings({**BASE, **sink, "FORWARDER_FORMAT": "cef"}).format == "cef"
    found = problems(**sink, FORWARDER_FORMAT="ocsf")
    assert found == [
        "FORWARDER_FORMAT: 'ocsf' documents carry no @timestamp, which an Elasticsearch data stream "
        "requires; use ecs (or cef) with an Elasticsearch sink"
    ]


def test_a_sinks_own_rules_name_their_variable():
    found = problems(FORWARDER_SINK="hec+https://splunk.example.com:8088")
    assert len(found) == 1 and found[0].startswith("FORWARDER_SINK_TOKEN")
    found = problems(FORWARDER_SINK="https://collector.example.com/x", FORWARDER_SINK_ACCEPT_BODY="(")
    assert found[0].startswith("FORWARDER_SINK_ACCEPT_BODY")


def test_importing_config_loads_no_sink_and_neither_requests_nor_boto3():
    shared = ("forwarder.sinks.base", "forwarder.sinks.settings")  # the registry's own imports
    code = (
        "import json, sys, forwarder.config; print(json.dumps([m for m in sys.modules "
        "if m.split('.')[0] in ('requests', 'boto3', 'botocore') or m.startswith('forwarder.sinks.')]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert sorted(set(json.loads(out)) - set(shared)) == []


def test_settings_for_a_sink_load_that_sink_alone():
    """A run pays for its own sink's module: the others' (Google auth, parquet, AWS) stay unloaded."""
    code = (
        "import json, sys\n"
        "from forwarder.config import load_settings\n"
        "load_settings({'FORWARDER_API_URL': 'https://api.example.com', 'FORWARDER_CLIENT_ID': 'id',\n"
        "  'FORWARDER_CLIENT_SECRET': 'secret', 'FORWARDER_SINK': 'hec+https://splunk.example.com:8088',\n"
        "  'FORWARDER_SINK_TOKEN': 'token', 'FORWARDER_HEC_INDEX': 'mail'})\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('forwarder.sinks.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert [m for m in json.loads(out) if m.rpartition(".")[2] not in ("base", "settings", "http_post")] == [
        "forwarder.sinks.hec"
    ]


def test_another_sinks_variable_set_wrong_is_still_named():
    found = problems(FORWARDER_SINK="stdout", FORWARDER_HEC_ACK="maybe")
    assert [p.partition(":")[0] for p in found] == ["FORWARDER_HEC_ACK"]
    settings = load_settings({**BASE, "FORWARDER_SINK": "stdout", "FORWARDER_HEC_ACK": "true"})
    assert settings.sink.uri == "stdout"


def test_the_splunk_pages_feed_the_variables_the_table_names_with_its_defaults():
    config = json.loads((README.parent / "splunk_app" / "globalConfig.json").read_text(encoding="utf-8"))
    tabs = {t.get("name"): t for t in config["pages"]["configuration"]["tabs"]}
    pages = {"input": config["pages"]["inputs"]["services"][0], "account": tabs["account"]}
    for page, where in pages.items():
        fields = {e["field"]: e for e in where["entity"]}
        for key, name in splunk_fields(page).items():
            assert key in fields, f"the {page} page has no {key} field for {name}"
            shown, default = fields[key].get("defaultValue"), default_of(name)
            assert shown == default or not default, f"{page} {key}: {shown!r}, {name}: {default!r}"
    assert set(splunk_fields("input")) == {"object_types", "users", "domains", "filters"} | {
        "initial_lookback",
        "event_format",
    }


@pytest.mark.parametrize(
    "variable, value",
    [
        ("FORWARDER_STATE", "file://remotehost/state"),
        ("FORWARDER_STATE", "file:///srv/state?x=1"),
        ("FORWARDER_STATE", "file:"),
        ("FORWARDER_STATE", "s3://"),
        ("FORWARDER_STATE", "s3:///prefix"),
        ("FORWARDER_STATE", "dynamodb://"),
        ("FORWARDER_STATE", "kvstore://splunk:8089/app"),
        ("FORWARDER_QUARANTINE", "file://remotehost/quarantine"),
        ("FORWARDER_QUARANTINE", "file:"),
        ("FORWARDER_QUARANTINE", "s3://"),
        ("FORWARDER_QUARANTINE", "ftp://host/quarantine"),
        ("FORWARDER_SINK", "file://remotehost/events.ndjson"),
    ],
)
def test_a_location_that_names_nothing_usable_is_a_problem_of_its_variable(variable, value):
    """Before: a raw ValueError traceback (exit 1) when the run opened it, or a directory named
    after the host (quarantine); now refused with the settings, before any network call."""
    env = {variable: value, "FORWARDER_SPLUNK_TOKEN": "splunkd-session-key"}
    assert [p for p in problems(**env) if p.startswith(variable + ":") or p.startswith(variable + " ")]


@pytest.mark.parametrize(
    "variable, value",
    [
        ("FORWARDER_STATE", "file:///srv/state"),
        ("FORWARDER_STATE", "file://localhost/srv/state"),
        ("FORWARDER_STATE", "relative/state"),
        ("FORWARDER_STATE", "s3://bucket/prefix"),
        ("FORWARDER_STATE", "dynamodb://table/ns"),
        ("FORWARDER_QUARANTINE", "file:///srv/quarantine"),
        ("FORWARDER_QUARANTINE", "s3://bucket"),
    ],
)
def test_locations_that_name_a_place_are_accepted(variable, value):
    assert getattr(load_settings({**BASE, variable: value}), variable[len("FORWARDER_") :].lower()) == value


HUGE = "x" * 2_000_000


@pytest.mark.parametrize("variable", [v.name for v in VARIABLES])
@pytest.mark.parametrize("value", [HUGE, "a@b.example," + HUGE, "s3://" + HUGE, HUGE + "://x"])
def test_a_huge_value_of_any_variable_is_quoted_cut_short(variable, value):
    """Every problem quotes what it was given in a few hundred characters, whatever its size."""
    try:
        load_settings({**BASE, variable: value})
    except ConfigError as exc:
        assert sum(map(len, exc.problems)) < 2000, [p[:300] for p in exc.problems]
