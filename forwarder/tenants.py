"""The tenants document (``FORWARDER_TENANTS``): many organizations in one installation.

A tenant is one organization of the platform: its own API credentials, streams, state namespace,
quarantine folder, metrics dimension and, optionally, its own index (HEC), data-stream namespace
(Elasticsearch), request rate or key prefix (S3 sink). Which variables a tenant sets, and which are
only a tenant's, the configuration table says (``Variable.tenant``); every other setting comes from the
environment as usual.
Each tenant's ``Settings`` is built by ``config.settings_from`` from the base environment with the
tenant's fields laid over it, under their own names, so a tenant's values pass exactly the checks a
single install's do and each problem names the tenant's field.

Without ``FORWARDER_TENANTS`` there are no tenants: the environment describes one organization and
its state keys are the un-namespaced ones they always were.

The document::

    {"tenants": [
      {"name": "acme", "credentials": "secretsmanager:forwarder/acme",
       "api_url": "https://api.example.com", "users": ["a@acme.example"], "domains": ["acme.example"],
       "filters": ["user.login"], "hec_index": "acme", "es_namespace": "acme", "s3_prefix": "acme/"}
    ]}

Validation is pure and collects every problem of every tenant, each naming the tenant and field.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .config import VARIABLES, Settings, Variable, default_of, load_settings, read, settings_from
from .config.table import TENANT_ONLY
from .errors import ConfigError, Problem
from .extras import aws_problems
from .logs import clip, quoted
from .urls import local_path

VARIABLE = "FORWARDER_TENANTS"
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")  # a path segment, a DynamoDB key part, an SQS group id
NAMESPACE_ROOT = "tenant"
_NAMESPACE = re.compile(r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$")

_SPECIAL = ("name", "s3_prefix", "state_namespace")


@dataclass(frozen=True)
class Fields:
    """What the configuration table lets a tenant set: document field -> variable, and the variables
    that are each tenant's own (never inherited from the environment, refused there)."""

    variables: Dict[str, Variable]
    only: Tuple[str, ...]

    @classmethod
    def of(cls, table: Sequence[Variable]) -> Fields:
        mine = {v.tenant_field: v for v in table if v.tenant_field}
        return cls(mine, tuple(v.name for v in mine.values() if v.tenant == TENANT_ONLY))

    def named(self, entry: Mapping[str, Any]) -> Dict[str, str]:
        """Field -> variable, for the fields a tenant answers for: those ``entry`` sets, and the
        tenant-only ones (a problem with one, given or not, is the tenant's)."""
        return {f: v.name for f, v in self.variables.items() if f in entry or v.name in self.only}


FIELDS = Fields.of(VARIABLES)


@dataclass(frozen=True)
class Tenant:
    name: str
    settings: Settings
    namespace: str  # "" only for a tenant that keeps the single-install state keys


def namespaced(location: str, namespace: str) -> str:
    """``location`` (a directory, ``file://``, ``s3://bucket/prefix`` or ``dynamodb://table``) with
    ``namespace`` appended as a path; the location itself when the namespace is empty."""
    if not namespace:
        return location
    if "://" in location:
        return location.rstrip("/") + "/" + namespace
    return os.path.join(location, namespace)


def _sink_with_prefix(sink: str, prefix: str) -> str:
    bucket = sink[len("s3://") :].split("/", 1)[0]
    return f"s3://{bucket}/{prefix.strip('/')}"


def _one(
    index: int, entry: Any, base: Mapping[str, str], seen: Dict[str, int], fields: Fields
) -> Tuple[Optional[Tenant], List[Problem], List[Problem]]:
    """One tenant entry: (tenant or None, its own problems, problems of the shared environment)."""
    if not isinstance(entry, dict):
        return None, [Problem(f"tenants[{index}]", f"expected an object, got {type(entry).__name__}")], []
    name = entry.get("name")
    label = f"tenant {quoted(name)}" if isinstance(name, str) and name else f"tenants[{index}]"
    own: List[Problem] = []
    if not isinstance(name, str) or not NAME.match(name):
        own.append(
            Problem(
                f"{label}: name",
                f"required, 1-63 of a-z 0-9 _ - starting with a letter or digit (got {quoted(name)})",
            )
        )
    elif name in seen:
        own.append(Problem(f"{label}: name", f"also used by tenants[{seen[name]}]"))
    else:
        seen[name] = index
    known = sorted([*fields.variables, *_SPECIAL])
    unknown = sorted(set(entry) - set(known))
    own.extend(
        Problem(f"{label}: {clip(str(f))}", f"unknown field (known: {', '.join(known)})") for f in unknown
    )

    names = fields.named(entry)
    values: Dict[str, Any] = {k: v for k, v in base.items() if k not in fields.only}
    values.update((f, entry[f]) for f in names if f in entry)
    no_credentials = not any(f in entry for f in ("credentials", "client_id", "client_secret"))
    if no_credentials:
        own.append(Problem(f"{label}: credentials", "required (secretsmanager:<id> or ssm:<name>)"))

    default_namespace = f"{NAMESPACE_ROOT}/{name}" if isinstance(name, str) and NAME.match(name) else ""
    namespace = entry.get("state_namespace", default_namespace)
    if not isinstance(namespace, str) or (namespace and not _NAMESPACE.match(namespace)):
        own.append(
            Problem(f"{label}: state_namespace", "expected path segments of A-Z a-z 0-9 _ - joined by /")
        )
        namespace = default_namespace
    for kept in ("FORWARDER_STATE", "FORWARDER_QUARANTINE"):
        values[kept] = namespaced(base.get(kept) or default_of(kept), namespace)

    prefix = entry.get("s3_prefix")
    if prefix is not None:
        sink = (base.get("FORWARDER_SINK") or "").strip()
        if not isinstance(prefix, str) or not prefix.strip("/"):
            own.append(Problem(f"{label}: s3_prefix", "expected a non-empty key prefix"))
        elif not sink.lower().startswith("s3://"):
            own.append(Problem(f"{label}: s3_prefix", "FORWARDER_SINK is not an s3:// sink"))
        else:
            values["FORWARDER_SINK"] = _sink_with_prefix(sink, prefix)

    settings, mine, shared = _settings(label, values, names, no_credentials)
    own.extend(mine)
    if own or shared or settings is None or not isinstance(name, str):
        return None, own, shared
    return Tenant(name, settings, namespace), own, shared


def _settings(
    label: str, values: Mapping[str, Any], names: Mapping[str, str], no_credentials: bool
) -> Tuple[Optional[Settings], List[Problem], List[Problem]]:
    """A tenant's settings from ``values`` (the environment's, its fields under ``names``), or its
    own problems (those of its fields, named by the tenant) and those of the shared environment."""
    try:
        return settings_from(values, names), [], []
    except ConfigError as exc:
        found = exc.structured
    if no_credentials:  # already said: credentials required
        found = [p for p in found if p.variable not in ("client_id", "client_secret")]
    own = [Problem(f"{label}: {p.variable}", p.message) for p in found if p.variable in names]
    return None, own, [p for p in found if p.variable not in names]


def parse_tenants(doc: Any, base: Mapping[str, str], fields: Fields = FIELDS) -> List[Tenant]:
    """Every tenant of the document, checked; ConfigError listing every problem of every tenant.
    ``fields``: what a tenant may set (the configuration table's, unless a test gives another)."""
    entries = doc.get("tenants") if isinstance(doc, dict) else doc
    if not isinstance(entries, list) or not entries:
        raise ConfigError([f'{VARIABLE}: expected {{"tenants": [...]}} with at least one tenant'])
    problems: List[Problem] = []
    stray = [v for v in fields.only if (base.get(v) or "").strip()]
    problems.extend(Problem(v, f"set it per tenant in {VARIABLE}, not in the environment") for v in stray)
    shared: List[Problem] = []
    tenants: List[Tenant] = []
    seen: Dict[str, int] = {}
    for index, entry in enumerate(entries):
        tenant, own, common = _one(index, entry, base, seen, fields)
        problems.extend(own)
        shared.extend(p for p in common if p not in shared)
        if tenant is not None:
            tenants.append(tenant)
    owners: Dict[str, str] = {}
    for t in tenants:  # two tenants in one namespace would share (and overwrite) each other's state
        if t.namespace in owners:
            shown = quoted(t.namespace) if t.namespace else '"" (the un-namespaced state)'
            problems.append(
                Problem(
                    f"tenant {quoted(t.name)}: state_namespace",
                    f"{shown} is also tenant {quoted(owners[t.namespace])}'s",
                )
            )
        owners.setdefault(t.namespace, t.name)
    if problems or shared:
        raise ConfigError(shared + problems)
    return tenants


def read_document(ref: str, timeout_seconds: float = 60.0) -> Any:
    """The parsed document at ``ref``: a file path, ``s3://bucket/key``, ``secretsmanager:<id>`` or
    ``ssm:<name>``. ConfigError naming FORWARDER_TENANTS when it cannot be read or parsed;
    ``timeout_seconds`` (FORWARDER_HTTP_TIMEOUT) bounds a read from AWS whole."""
    kind = ref.split(":", 1)[0].lower()
    if kind in ("secretsmanager", "ssm"):
        from .credentials import load_secret

        text = load_secret(ref, VARIABLE, timeout_seconds=timeout_seconds)
    elif kind == "s3":
        text = _read_s3(ref, timeout_seconds)
    else:
        try:
            path = local_path(ref)
        except ValueError as exc:
            raise ConfigError([f"{VARIABLE}: {exc}"]) from None
        try:
            with open(os.path.expanduser(path), encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                [f"{VARIABLE}: cannot read {clip(path)}: {getattr(exc, 'strerror', None) or clip(str(exc))}"]
            ) from None
    try:
        return json.loads(text)
    except ValueError as exc:
        # Only the position: the parser's message may quote the document, which may hold secrets.
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise ConfigError([f"{VARIABLE}: {clip(ref)} is not valid JSON{where}"]) from None


def _read_s3(ref: str, timeout_seconds: float) -> str:
    from . import aws

    try:
        bucket, key = aws.parse_s3_uri(ref, VARIABLE)
    except ValueError as exc:
        raise ConfigError([str(exc)]) from None
    if not key:
        raise ConfigError([f"{VARIABLE}: {clip(ref)} names a bucket, not an object"])
    try:
        body, _ = aws.read_object(aws.client("s3", timeout_seconds), bucket, key, "S3 GetObject")
    except aws.failures() as exc:
        raise ConfigError(
            [f"{VARIABLE}: cannot read {clip(ref)}: {aws.error_code(exc) or clip(str(exc))}"]
        ) from None
    try:
        return str(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError([f"{VARIABLE}: {clip(ref)} is not UTF-8 text"]) from None


def load_tenants(env: Mapping[str, str]) -> Optional[List[Tenant]]:
    """The tenants ``FORWARDER_TENANTS`` names, or None for a single-organization install."""
    ref = (env.get(VARIABLE) or "").strip()
    if not ref:
        return None
    missing = aws_problems(env, [VARIABLE])
    if missing:
        raise ConfigError(missing)
    return parse_tenants(read_document(ref, read(env, "FORWARDER_HTTP_TIMEOUT")), env)


def select(tenants: Sequence[Tenant], name: Optional[str]) -> List[Tenant]:
    """All tenants, or the one named; ConfigError naming the known ones otherwise."""
    if name is None:
        return list(tenants)
    chosen = [t for t in tenants if t.name == name]
    if not chosen:
        known = ", ".join(t.name for t in tenants)
        raise ConfigError([f"--tenant: no tenant {quoted(name)} in {VARIABLE} (tenants: {known})"])
    return chosen


SINGLE = "default"


def tenants_or_single(env: Mapping[str, str]) -> List[Tenant]:
    """The document's tenants, or the environment's one organization as tenant ``default`` with
    the un-namespaced state a single install has always used (so moving to fan-out re-sends nothing)."""
    tenants = load_tenants(env)
    return tenants if tenants is not None else [Tenant(SINGLE, load_settings(env), "")]
