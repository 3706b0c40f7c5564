"""The tenants document: every problem of every tenant at once, each naming tenant and field;
per-tenant locations and sink settings; reading it from a file.

Each tenant's FORWARDER_MAX_RPS (``max_rps``, the environment's by default) holds that tenant's
API requests to its own token bucket: counted at the simulator, per tenant, in a window of virtual
time. The buckets' clock stands still except when a bucket waits: the wait moves it on, as if
waited, and a wait past the window's end refuses the request. So a bucket of rate ``r`` and burst
``b`` (= max(1, r)) lets exactly ``floor(b + r * WINDOW_S)`` requests through, and nothing sleeps.
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import replace

import pytest

from forwarder import app
from forwarder.config import EVERYWHERE, VARIABLES
from forwarder.config.table import PER_TENANT, SHARED, TENANT_ONLY
from forwarder.errors import ConfigError, Problem
from forwarder.retry import Pace
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.sinks.elasticsearch import ElasticOptions
from forwarder.sinks.hec import HecOptions
from forwarder.streams import Stream
from forwarder.tenants import FIELDS, Fields, load_tenants, namespaced, parse_tenants, read_document, select

BASE = {
    "FORWARDER_API_URL": "https://api.example.com",
    "FORWARDER_STATE": "dynamodb://forwarder-state",
    "FORWARDER_QUARANTINE": "s3://data/quarantine",
    "FORWARDER_SINK": "hec+https://splunk.example.com:8088",
    "FORWARDER_SINK_TOKEN": "hec-token",
}


def tenant(name, **fields):
    return {"name": name, "credentials": f"secretsmanager:forwarder/{name}", **fields}


def problems_of(doc, base=BASE):
    with pytest.raises(ConfigError) as err:
        parse_tenants(doc, base)
    return err.value.problems


def test_each_tenant_gets_its_own_settings_and_namespaced_locations():
    doc = {
        "tenants": [
            tenant("acme", users=["A@acme.example"], hec_index="acme", filters="user.login"),
            tenant("globex", api_url="https://eu.api.example.com", domains=["xn--bcher-kva.example"]),
        ]
    }
    acme, globex = parse_tenants(doc, BASE)
    assert (
        acme.settings.users == ("A@acme.example",)
        and acme.settings.sink.options_of(HecOptions).index == "acme"
    )
    assert acme.settings.filters == ("user.login",) and acme.settings.api_url == "https://api.example.com"
    assert acme.settings.state == "dynamodb://forwarder-state/tenant/acme"
    assert acme.settings.quarantine == "s3://data/quarantine/tenant/acme"
    assert acme.settings.credentials_ref == "secretsmanager:forwarder/acme"
    assert globex.settings.api_url == "https://eu.api.example.com"
    assert (
        globex.settings.domains == ("bücher.example",)
        and globex.settings.sink.options_of(HecOptions).index is None
    )
    assert globex.settings.state == "dynamodb://forwarder-state/tenant/globex"


def test_every_problem_of_every_tenant_is_named_at_once():
    doc = {
        "tenants": [
            tenant("acme", api_url="http://api.example.com", users=["not-an-email"]),
            {"name": "Bad Name", "client_id": "x"},
            tenant("acme"),
            tenant("globex", concurrency="many", colour="red", s3_prefix="g/"),
            "nope",
        ]
    }
    problems = problems_of(doc)
    expected = [
        "tenant 'acme': api_url: must use https",
        "tenant 'acme': users: 'not-an-email' is not an email address",
        "tenant 'Bad Name': name: required",
        "tenant 'Bad Name': client_secret: required",
        "tenant 'acme': name: also used by tenants[0]",
        "tenant 'globex': concurrency: expected a whole number",
        "tenant 'globex': colour: unknown field",
        "tenant 'globex': s3_prefix: FORWARDER_SINK is not an s3:// sink",
        "tenants[4]: expected an object",
    ]
    for text in expected:
        assert any(p.startswith(text) for p in problems), (text, problems)


def test_each_problem_is_structured_naming_the_tenant_and_its_field_or_the_shared_variable():
    with pytest.raises(ConfigError) as err:
        parse_tenants({"tenants": [tenant("acme", hec_index=["x"])]}, {**BASE, "FORWARDER_FORMAT": "xml"})
    assert [p.variable for p in err.value.structured] == ["FORWARDER_FORMAT", "tenant 'acme': hec_index"]
    assert err.value.structured[1] == Problem("tenant 'acme': hec_index", "expected text")


def test_a_shared_problem_is_named_once_by_its_variable():
    problems = problems_of({"tenants": [tenant("a"), tenant("b")]}, {**BASE, "FORWARDER_FORMAT": "xml"})
    assert [p for p in problems if p.startswith("FORWARDER_FORMAT")] == [problems[0]]
    assert len(problems) == 1


def test_credentials_and_streams_are_per_tenant_only():
    problems = problems_of({"tenants": [tenant("a")]}, {**BASE, "FORWARDER_USERS": "x@y.example"})
    assert problems == ["FORWARDER_USERS: set it per tenant in FORWARDER_TENANTS, not in the environment"]
    problems = problems_of({"tenants": [{"name": "a"}]})
    assert problems[0].startswith("tenant 'a': credentials: required")


def test_s3_prefix_and_es_namespace_per_tenant():
    base = {**BASE, "FORWARDER_SINK": "s3://siem-lake/emailauth"}
    [one] = parse_tenants({"tenants": [tenant("acme", s3_prefix="/acme/audit/", es_namespace="acme")]}, base)
    assert one.settings.sink.uri == "s3://siem-lake/acme/audit"
    # the namespace is an Elasticsearch sink's own option: it reaches the settings of one
    base = {**BASE, "FORWARDER_SINK": "elasticsearch+https://es.example.com:9200"}
    [one] = parse_tenants({"tenants": [tenant("acme", es_namespace="acme")]}, base)
    assert one.settings.sink.options_of(ElasticOptions).namespace == "acme"


def test_one_tenant_may_keep_the_single_install_state_keys():
    doc = {"tenants": [tenant("legacy", state_namespace=""), tenant("new")]}
    legacy, new = parse_tenants(doc, BASE)
    assert legacy.settings.state == "dynamodb://forwarder-state" and legacy.namespace == ""
    assert new.settings.state == "dynamodb://forwarder-state/tenant/new"
    both = {"tenants": [tenant("a", state_namespace=""), tenant("b", state_namespace="")]}
    assert problems_of(both) == [
        "tenant 'b': state_namespace: \"\" (the un-namespaced state) is also tenant 'a''s"
    ]
    clash = {"tenants": [tenant("a"), tenant("b", state_namespace="tenant/a")]}
    assert problems_of(clash) == ["tenant 'b': state_namespace: 'tenant/a' is also tenant 'a''s"]
    assert any(
        "state_namespace" in p for p in problems_of({"tenants": [tenant("a", state_namespace="../x")]})
    )


@pytest.mark.parametrize(
    "location,expected",
    [
        ("./state", "./state/tenant/a"),
        ("file:///var/lib/fwd/", "file:///var/lib/fwd/tenant/a"),
        ("s3://b/p", "s3://b/p/tenant/a"),
        ("s3://b", "s3://b/tenant/a"),
        ("dynamodb://t", "dynamodb://t/tenant/a"),
    ],
)
def test_namespaced_locations(location, expected):
    assert namespaced(location, "tenant/a") == expected
    assert namespaced(location, "") == location


def test_the_document_from_a_file_and_selecting_a_tenant(tmp_path):
    path = tmp_path / "tenants.json"
    path.write_text(json.dumps({"tenants": [tenant("a"), tenant("b")]}))
    tenants = load_tenants({**BASE, "FORWARDER_TENANTS": str(path)})
    assert [t.name for t in select(tenants, None)] == ["a", "b"]
    assert [t.name for t in select(tenants, "b")] == ["b"]
    with pytest.raises(ConfigError, match=r"no tenant 'c' .*\(tenants: a, b\)"):
        select(tenants, "c")
    assert load_tenants(BASE) is None


def test_an_unreadable_document_names_the_variable_and_never_quotes_it(tmp_path):
    with pytest.raises(ConfigError, match="FORWARDER_TENANTS: cannot read"):
        read_document(str(tmp_path / "missing.json"))
    path = tmp_path / "broken.json"
    path.write_text('{"tenants": [{"client_secret": "s3cr3t-value" oops')
    with pytest.raises(ConfigError) as err:
        read_document(str(path))
    assert "line 1 column" in str(err.value) and "s3cr3t" not in str(err.value)


def test_the_fields_a_tenant_may_set_are_the_tables():
    per_tenant = {v.tenant_field: v.name for v in VARIABLES if v.tenant != SHARED}
    assert FIELDS.variables.keys() == per_tenant.keys()
    assert {f: v.name for f, v in FIELDS.variables.items()} == per_tenant
    assert set(FIELDS.only) == {v.name for v in VARIABLES if v.tenant == TENANT_ONLY}
    assert {"max_rps", "hec_index", "api_url"} <= set(per_tenant) and "sink" not in per_tenant
    # what load_settings reads: a tenant's value reaches its Settings
    assert all((v.field or v.sink_option) and v.where == EVERYWHERE for v in VARIABLES if v.tenant != SHARED)


def test_a_new_per_tenant_variable_needs_only_its_table_entry():
    doc = {"tenants": [tenant("acme", page_limit=50), tenant("globex")]}
    assert any(p.startswith("tenant 'acme': page_limit: unknown field") for p in problems_of(doc))
    table = tuple(replace(v, tenant=PER_TENANT) if v.name == "FORWARDER_PAGE_LIMIT" else v for v in VARIABLES)
    acme, globex = parse_tenants(doc, {**BASE, "FORWARDER_PAGE_LIMIT": "100"}, Fields.of(table))
    assert acme.settings.page_limit == 50 and globex.settings.page_limit == 100  # the environment's
    bad = {"tenants": [tenant("acme", page_limit=0)]}
    with pytest.raises(ConfigError) as err:
        parse_tenants(bad, BASE, Fields.of(table))
    assert err.value.problems == ["tenant 'acme': page_limit: must be between 1 and 10000, got 0"]

    only = tuple(replace(v, tenant=TENANT_ONLY) if v.name == "FORWARDER_PAGE_LIMIT" else v for v in VARIABLES)
    with pytest.raises(ConfigError) as err:
        parse_tenants(doc, {**BASE, "FORWARDER_PAGE_LIMIT": "100"}, Fields.of(only))
    assert err.value.problems == [
        "FORWARDER_PAGE_LIMIT: set it per tenant in FORWARDER_TENANTS, not in the environment"
    ]


def test_each_tenant_sets_its_own_rate_limit_the_environments_by_default():
    inline = {"client_id": "id", "client_secret": "secret-value"}
    doc = {
        "tenants": [
            {"name": "acme", "max_rps": 0.5, **inline},
            {"name": "globex", **inline},
            {"name": "initech", "max_rps": "3", **inline},
        ]
    }
    tenants = parse_tenants(doc, {**BASE, "FORWARDER_MAX_RPS": "10"})
    # What each tenant's client then holds to, in a bucket of its own: test_rate_per_tenant.py.
    assert [t.settings.max_rps for t in tenants] == [0.5, 10.0, 3.0]
    bad = problems_of({"tenants": [tenant("acme", max_rps=-1), tenant("globex", max_rps=[1])]})
    assert [p.split(":")[:2] for p in bad] == [["tenant 'acme'", " max_rps"], ["tenant 'globex'", " max_rps"]]


HUGE = "x" * 5_000_000


@pytest.mark.parametrize(
    "doc",
    [
        {"tenants": [tenant(HUGE)]},
        {"tenants": [tenant("acme", users=[HUGE])]},
        {"tenants": [tenant("acme", domains=[HUGE])]},
        {"tenants": [tenant("acme", filters=[HUGE.upper()])]},
        {"tenants": [tenant("acme", concurrency=HUGE)]},
        {"tenants": [tenant("acme", initial_lookback=HUGE)]},
        {"tenants": [tenant("acme", api_url=HUGE)]},
        {"tenants": [tenant("acme", **{HUGE: 1})]},
    ],
)
def test_a_huge_value_is_quoted_cut_short(doc):
    """Before: a 50 MB tenant name was quoted twice in its error, 105 MB on stderr."""
    found = problems_of(doc)
    assert found and sum(map(len, found)) < 2000, [p[:300] for p in found]


def test_a_huge_tenant_name_asked_for_is_quoted_cut_short():
    with pytest.raises(ConfigError) as err:
        select(parse_tenants({"tenants": [tenant("acme")]}, BASE), HUGE)
    assert len(str(err.value)) < 2000


WINDOW_S = 10.1  # off every rate's step, so no request starts exactly at the window's end
ENVIRONMENT_RPS = 1.0  # FORWARDER_MAX_RPS: the rate of a tenant that sets none
RATES = {"acme": 0.5, "globex": None, "initech": 4.0, "umbrella": 2.0}  # max_rps per tenant
CAP = 200  # requests a tenant may try: an unlimited client would stop here, not loop forever


class WindowOver(Exception):
    """A bucket would start the request after the window's end."""


class VirtualTime:
    """The clock of every bucket, and the wait they call (the runs' ``Pace``)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.end = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        if self.now + seconds > self.end:
            raise WindowOver()
        self.now += seconds


def allowed(rate: float) -> int:
    return math.floor(max(1.0, rate) + rate * WINDOW_S)


def test_each_tenant_is_held_to_its_own_max_rps_in_its_own_bucket():
    virtual = VirtualTime()
    org = generate_org(3)
    user = org.users[0].email
    with contextlib.ExitStack() as servers:
        sims = {name: servers.enter_context(Simulator(org)) for name in RATES}
        base = {
            "FORWARDER_API_URL": "https://unused.example",
            "FORWARDER_STATE": "./state",
            "FORWARDER_SINK": "stdout://",
            "FORWARDER_MAX_RPS": f"{ENVIRONMENT_RPS:g}",
        }
        doc = {
            "tenants": [
                {
                    "name": name,
                    "api_url": sims[name].base_url,
                    "client_id": DEMO_CLIENT_ID,
                    "client_secret": DEMO_CLIENT_SECRET,
                    **({} if rate is None else {"max_rps": rate}),
                }
                for name, rate in RATES.items()
            ]
        }
        tenants = parse_tenants(doc, base)
        pace = Pace(sleep=virtual.sleep, clock=virtual.clock)  # every tenant's bucket waits in it
        # built at once, as tenants' runs are
        clients = [app.build_client(t.settings, pace=pace) for t in tenants]
        for client in clients:  # each tenant in a window of its own, one after another
            virtual.end = virtual.now + WINDOW_S
            with pytest.raises(WindowOver):
                for _ in range(CAP):  # the token request first, then audits pages
                    client.audits(Stream("user", user), {}, 5, 0)
            client.close()
        seen = {name: len(sim.requests) for name, sim in sims.items()}

    expected = {name: allowed(ENVIRONMENT_RPS if rate is None else rate) for name, rate in RATES.items()}
    assert expected == {"acme": 6, "globex": 11, "initech": 44, "umbrella": 22}
    assert seen == expected
