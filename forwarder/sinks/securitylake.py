"""Amazon Security Lake sink: ``securitylake://<bucket>/ext/<source>[/<source version>]``, OCSF only
(``FORWARDER_FORMAT=ocsf``), as Parquet objects of custom sources (docs/mapping.md, README "Amazon
Security Lake").

* Sources. Security Lake takes one OCSF class per custom source, so ``<source>`` (at most 12 of
  ``A-Z a-z 0-9 _ -``) names four: ``<source>-auth`` (Authentication 3002), ``<source>-account``
  (Account Change 3001), ``<source>-access`` (User Access Management 3005) and ``<source>-entity``
  (Entity Management 3004), each within the API's 20 characters (``SOURCES``).
* Rows. Custom sources take OCSF 1.3 and earlier: each 1.8 event is written in its 1.3 form
  (``normalize.ocsf_1_3``); its free-form ``unmapped`` and ``entity(_result).data`` as JSON text.
* Key. ``ext/<source>-<class>/[<version>/]region=<region>/accountId=<account>/eventDay=<YYYYMMDD>/
  <digest>.zstd.parquet``, the partition layout the user guide gives custom sources: the region of
  the S3 client (``AWS_REGION``), the account of ``FORWARDER_SECURITYLAKE_ACCOUNT_ID`` (``external``
  by default, the guide's advice for records of a source outside AWS; ``sts``: the caller's account),
  the UTC day of the record. One object per class and day of a batch, its rows sorted by time; the
  digest is a SHA-256 over its sorted event ids (``s3.batch_digest``), so an object sent again after
  a crash or a failure overwrites itself.
* Proof. A batch counts as delivered once every one of its objects was answered with an ETag
  (``aws.put_s3_object``); any failure fails the whole batch. Its keys (``object_keys``) are
  journaled before the first PUT (delivery/journal.py): the next run reads back the objects a cut
  batch left (``held_by``: their rows' ``metadata.uid``, checked against the key's digest) and
  records those events as delivered, so they are not written again in other objects. An event that
  is not an OCSF event of those four classes is refused for good (quarantine) without being sent.
* Size. Batches are shared by every stream and large (``DEFAULT_MAX_EVENTS``, ``DEFAULT_MAX_BYTES``
  of OCSF JSON: a few MiB of Parquet); a partly filled one waits ``linger_s`` for more before it is
  written, so a run makes few objects: the guide asks for one every 5 minutes to a day per source.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple
from urllib.parse import SplitResult

from .. import aws
from ..errors import SinkError
from ..events import Event, Rejection, SendResult
from ..extras import parquet_problem
from ..jsonutil import loads
from ..kinds import Text
from ..logs import quoted
from ..normalize.ocsf_1_3 import downgrade
from ..normalize.ocsf_classes import ACCOUNT_CHANGE, AUTHENTICATION, ENTITY_MANAGEMENT, USER_ACCESS
from ..retry import RetryPolicy
from ..timeutil import from_us
from ..variables import PER_TENANT, Variable
from .parquet import struct_field, to_parquet
from .s3 import batch_digest, ids_digest
from .settings import SinkOptions, SinkSettings, option

log = logging.getLogger(__name__)

# class_uid -> (the source's suffix, the API's event class name for create-custom-log-source, if any)
SOURCES: Dict[int, Tuple[str, Optional[str]]] = {
    AUTHENTICATION: ("auth", "AUTHENTICATION"),
    ACCOUNT_CHANGE: ("account", "ACCOUNT_CHANGE"),
    USER_ACCESS: ("access", None),  # the API's list of event classes has no User Access Management
    ENTITY_MANAGEMENT: ("entity", "ENTITY_MANAGEMENT_AUDIT"),
}
# Custom sources hold the four IAM classes above; the health event (Application Lifecycle) has none,
# and a refusal logged every run would only be noise.
TAKES_HEALTH_EVENTS = False
MAX_SOURCE_NAME = 20  # CreateCustomLogSource: the provider role's name must stay within 64 characters
MAX_BASE = MAX_SOURCE_NAME - max(len(suffix) + 1 for suffix, _ in SOURCES.values())
JSON_PATHS = (("unmapped",), ("entity", "data"), ("entity_result", "data"))
# Two batches in flight: a crash leaves at most 2 x 6,000 events to recover, which the delivered-ids
# index (state.delivered.MAX_IDS, 12,000: a test keeps them in step) holds whole (delivery/journal.py);
# 16 MiB of OCSF JSON is about 10,000 events.
DEFAULT_MAX_EVENTS = 6_000
DEFAULT_MAX_BYTES = 16 * 1024 * 1024  # of OCSF JSON: ~50 MB parsed, two in flight fit a 512 MB Lambda
LINGER_S = 30.0


@dataclass(frozen=True)
class SecurityLakeOptions(SinkOptions):
    # the accountId partition: a 12-digit account, "external[_<id>]" or "sts"
    account_id: str = option(
        Variable(
            "FORWARDER_SECURITYLAKE_ACCOUNT_ID",
            "Security Lake sink: the `accountId=` partition of its objects: `external` (the user guide's "
            "advice for records from outside AWS), `external_<id>`, a 12-digit AWS account id, or `sts` "
            "(the account of the sink's credentials, from STS GetCallerIdentity)",
            Text(),
            "external",
            tenant=PER_TENANT,
        )
    )


Options = SecurityLakeOptions
_BASE = re.compile(r"^[A-Za-z0-9_-]+$")
_VERSION = re.compile(r"^[A-Za-z0-9._-]{1,32}$")
_ACCOUNT = re.compile(r"^(\d{12}|external(_[A-Za-z0-9_-]{1,64})?|sts)$")
SHAPE = "securitylake://<bucket>/ext/<source name>[/<source version>]"


def parse_uri(parts: SplitResult) -> Tuple[str, str, Optional[str]]:
    """(bucket, source base name, source version or None) of the URI; ValueError naming FORWARDER_SINK."""
    segments = [s for s in parts.path.split("/") if s]
    if (
        parts.scheme.lower() != "securitylake"
        or not parts.netloc
        or parts.query
        or parts.fragment
        or len(segments) not in (2, 3)
        or segments[0] != "ext"
    ):
        raise ValueError(
            f"FORWARDER_SINK for Security Lake must look like {SHAPE} (got {quoted(parts.geturl())})"
        )
    base = segments[1]
    if not _BASE.match(base) or len(base) > MAX_BASE:
        raise ValueError(
            f"FORWARDER_SINK: the Security Lake source name {quoted(base)} must be 1 to {MAX_BASE} of "
            f"A-Z a-z 0-9 _ -: it becomes {len(SOURCES)} custom sources, <name>-<class>, of at most "
            f"{MAX_SOURCE_NAME} characters each"
        )
    version = segments[2] if len(segments) == 3 else None
    if version is not None and not _VERSION.match(version):
        raise ValueError(
            f"FORWARDER_SINK: the Security Lake source version {quoted(version)} must be 1 to 32 of "
            "A-Z a-z 0-9 . _ -"
        )
    return parts.netloc, base, version


def source_names(base: str) -> Dict[int, str]:
    """class_uid -> the custom source's name."""
    return {class_uid: f"{base}-{suffix}" for class_uid, (suffix, _) in SOURCES.items()}


def account_problem(account: str) -> Optional[str]:
    if _ACCOUNT.match(account):
        return None
    return (
        f"FORWARDER_SECURITYLAKE_ACCOUNT_ID must be a 12-digit AWS account id, external, "
        f"external_<id> or sts (got {quoted(account)})"
    )


def event_day(time_us: int) -> str:
    return from_us(time_us).strftime("%Y%m%d")


def object_key(
    source: str, version: Optional[str], region: str, account: str, events: Sequence[Event]
) -> str:
    day = event_day(min(event.time_us for event in events))  # one day's events: any gives it
    place = f"{version}/" if version else ""
    return (
        f"ext/{source}/{place}region={region}/accountId={account}/eventDay={day}/"
        f"{batch_digest(events)}.zstd.parquet"
    )


def rows_by_object(
    batch: Sequence[Event], rows: bool = True
) -> Tuple[Dict[Tuple[int, str], List[Tuple[Event, Dict[str, Any]]]], List[Rejection]]:
    """The batch's events in their OCSF 1.3 form (with ``rows``; else as parsed), grouped by
    (class_uid, eventDay), and the events refused: not a JSON OCSF event of a class this sink writes."""
    groups: Dict[Tuple[int, str], List[Tuple[Event, Dict[str, Any]]]] = {}
    rejected: List[Rejection] = []
    for event in batch:
        try:
            doc = loads(event.body) if event.is_json else None
        except ValueError:
            doc = None
        class_uid = doc.get("class_uid") if isinstance(doc, dict) else None
        if not isinstance(doc, dict) or not isinstance(class_uid, int) or class_uid not in SOURCES:
            rejected.append(Rejection(event, "not an OCSF event of a class Security Lake sources take here"))
            continue
        row = downgrade(doc) if rows else doc
        groups.setdefault((class_uid, event_day(event.time_us)), []).append((event, row))
    return groups, rejected


class SecurityLakeSink:
    name = "securitylake"
    linger_s = LINGER_S

    def __init__(self, settings: SinkSettings, client: Any = None, sts: Any = None) -> None:
        self.bucket, self.base, self.version = parse_uri(settings.address)
        self.sources = source_names(self.base)
        self.max_batch_events = settings.batch_events or DEFAULT_MAX_EVENTS
        self.max_batch_bytes = settings.batch_bytes or DEFAULT_MAX_BYTES
        self.max_in_flight = 2  # keys come from the ids, so concurrent batches are safe; memory bounds it
        self._kms_key_id = settings.sse_kms_key_id
        account = settings.options_of(SecurityLakeOptions).account_id
        self._account: Optional[str] = None if account == "sts" else account
        self._lock = threading.Lock()  # _account, found once
        self._client = client or aws.client("s3", settings.timeout_seconds, settings.max_attempts)
        self._sts = sts
        self._timeout = settings.timeout_seconds
        self._attempts = settings.max_attempts

    def __repr__(self) -> str:
        return f"SecurityLakeSink(bucket={self.bucket!r}, source={self.base!r})"

    def region(self) -> str:
        region = getattr(self._client.meta, "region_name", None)
        if not region:
            raise SinkError("the Security Lake sink needs the lake's region: set AWS_REGION", retryable=False)
        return str(region)

    def account(self) -> str:
        """The accountId partition: the setting, or with ``sts`` the caller's account (asked once)."""
        with self._lock:
            if self._account is None:
                sts = self._sts or aws.client("sts", self._timeout, self._attempts)
                try:
                    answer = aws.call(sts, "get_caller_identity", "STS GetCallerIdentity")
                except aws.failures() as exc:
                    raise aws.sink_error(
                        exc, "STS GetCallerIdentity (FORWARDER_SECURITYLAKE_ACCOUNT_ID=sts)"
                    ) from exc
                account = str(answer.get("Account", "")) if isinstance(answer, dict) else ""
                if not re.match(r"^\d{12}$", account):
                    raise SinkError(f"STS GetCallerIdentity answered no account id (got {quoted(account)})")
                self._account = account
            return self._account

    def _key(self, class_uid: int, events: Sequence[Event]) -> str:
        return object_key(self.sources[class_uid], self.version, self.region(), self.account(), events)

    def object_keys(self, batch: Sequence[Event]) -> List[str]:
        """The keys ``send(batch)`` writes (delivery/journal.py)."""
        groups, _ = rows_by_object(batch, rows=False)
        return [self._key(uid, [event for event, _ in pairs]) for (uid, _), pairs in sorted(groups.items())]

    def held_by(self, key: str) -> Optional[List[str]]:
        """The event ids (``metadata.uid``) of the rows of the object ``key``; None if there is none,
        or if its rows are not the events its key's digest names (not an object of this sink)."""
        try:
            body, _ = aws.read_object(self._client, self.bucket, key, "S3 GetObject")
        except aws.failures() as exc:
            if aws.error_code(exc) in ("NoSuchKey", "404"):
                return None
            if aws.error_code(exc) in ("AccessDenied", "403") or aws.status(exc) == 403:
                # Without s3:GetObject (and s3:ListBucket, else a missing key is a 403 too) nothing is
                # proven: its events go again, as they did before the journal, and the run goes on.
                log.warning(
                    "a pending object could not be read back; its rows may land twice: grant the "
                    "forwarder s3:GetObject and s3:ListBucket on the lake's ext/ prefix",
                    extra={"key": key},
                )
                return None
            raise aws.sink_error(exc, f"reading s3://{self.bucket}/{key}") from exc
        try:
            ids = [str(uid) for uid in struct_field(body, "metadata", "uid")]
        except ValueError:
            ids = []
        if not ids or key.rsplit("/", 1)[-1] != f"{ids_digest(ids)}.zstd.parquet":
            log.warning("a pending object does not hold the events its key names", extra={"key": key})
            return None
        return ids

    def send(self, batch: Sequence[Event]) -> SendResult:
        groups, rejected = rows_by_object(batch)
        for (class_uid, _), pairs in sorted(groups.items()):
            pairs.sort(key=lambda pair: pair[0].time_us)  # by time: the guide's order within an object
            key = self._key(class_uid, [event for event, _ in pairs])
            try:
                body = to_parquet([row for _, row in pairs], JSON_PATHS)
            except ValueError as exc:
                raise SinkError(f"cannot write s3://{self.bucket}/{key} as Parquet: {exc}") from exc
            try:
                aws.put_s3_object(
                    self._client,
                    self.bucket,
                    key,
                    body,
                    self._kms_key_id,
                    ContentType="application/vnd.apache.parquet",
                )
            except aws.failures() as exc:
                raise aws.sink_error(exc, f"writing s3://{self.bucket}/{key}") from exc
        return SendResult(delivered=len(batch) - len(rejected), rejected=rejected)

    def probe(self) -> str:
        """HeadBucket on the lake's bucket, the region and the account the keys will name (STS
        GetCallerIdentity with ``sts``). A 403 on HeadBucket is said, not failed: writing needs only
        s3:PutObject under the sources' prefixes, which a custom source's provider role grants."""
        where = f"Security Lake bucket s3://{self.bucket}"
        region, account = self.region(), self.account()
        names = ", ".join(self.sources[uid] for uid in sorted(self.sources))
        found = aws.probe_call(self._client, "head_bucket", "S3 HeadBucket", where, Bucket=self.bucket)
        reached = (
            "exists and these credentials reach it (HeadBucket)"
            if found is not None
            else "HeadBucket denied (a provider role may write its sources' prefixes only; the first "
            "batch proves it)"
        )
        return f"{where}: {reached}; objects go to ext/{{{names}}}/ under region={region}/accountId={account}"

    def close(self) -> None:
        pass


def validate(settings: SinkSettings) -> None:
    parse_uri(settings.address)
    for problem in (
        account_problem(settings.options_of(SecurityLakeOptions).account_id),
        parquet_problem("FORWARDER_SINK", "securitylake://"),
    ):
        if problem:
            raise ValueError(problem)


def format_problem(event_format: str, settings: SinkSettings) -> Optional[str]:
    if event_format == "ocsf":
        return None
    return f"the Security Lake sink takes OCSF only: set FORWARDER_FORMAT=ocsf (got {quoted(event_format)})"


def open_sink(settings: SinkSettings, retry_policy: Optional[RetryPolicy] = None) -> SecurityLakeSink:
    """Writes to the lake's bucket, whose retries are the AWS client's: ``retry_policy`` has nothing
    to pace here."""
    return SecurityLakeSink(settings)
