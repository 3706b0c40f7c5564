"""boto3 plumbing shared by the AWS sinks, state stores, quarantine and credentials, and the S3
object layout (date partitions, NDJSON PUT) the S3 sink and the S3 quarantine share.

Everything imports boto3 lazily, so the CLI and the Splunk add-on never load it.
"""

from __future__ import annotations

import gzip
import os
import threading
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Set, Tuple, Type, TypeVar

from . import deadline
from .errors import ConfigError, SinkError
from .extras import INSTALL_AWS
from .timeutil import from_us
from .urls import parse_s3_uri as parse_s3_uri  # its home is urls: the configuration checks it too

T = TypeVar("T")

_THROTTLED = frozenset(
    {"Throttling", "ThrottlingException", "SlowDown", "RequestTimeout", "RequestLimitExceeded"}
)
# A conditional S3 write (If-Match / If-None-Match) refused because the object is not the version
# presented. 412: the condition failed; 409: a concurrent conditional write to the same key is in
# flight; NoSuchKey: If-Match on an object that is gone.
CONFLICT_CODES = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey", "412", "409"})
# Clients are made once per process and service: creating one costs a few hundred milliseconds of
# CPU (a fan-out worker opens its store, queue and tenants document on every invocation). The key
# holds the AWS_* environment a client is built from (region, endpoints, credentials, profile), so
# a changed environment gets a new client.
_clients: Dict[Tuple[Any, ...], Any] = {}
_clients_lock = threading.Lock()  # _clients; a client is built outside it and the first one made is kept


def client(service: str, timeout_seconds: float = 60.0, attempts: int = 6) -> Any:
    """A client with standard retries, ``attempts`` tries per call, the first included (by default
    botocore's five retries); region, credentials and endpoint come from the environment.

    Each client gets its own session: boto3's default session is not safe to create clients from
    in several threads at once, and streams run in threads. A client, once made, is thread-safe.
    """
    key = (
        service,
        timeout_seconds,
        attempts,
        *sorted(i for i in os.environ.items() if i[0].startswith("AWS_")),
    )
    with _clients_lock:
        made = _clients.get(key)
    if made is not None:
        return made
    try:
        import boto3
        from botocore.config import Config

        from .transport import aws_deadline
    except ImportError:  # a setting the configuration check did not know reached AWS
        raise ConfigError(
            [f"AWS {service} needs boto3, which this installation lacks: {INSTALL_AWS}"]
        ) from None

    config = Config(
        retries={"mode": "standard", "total_max_attempts": attempts},
        connect_timeout=10,
        read_timeout=timeout_seconds,
    )
    made = boto3.session.Session().client(service, config=config)
    aws_deadline.watch(made)
    with _clients_lock:
        return _clients.setdefault(key, made)


def call(client: Any, operation: str, what: str, **params: Any) -> Any:
    """``client.<operation>(**params)`` (a client from :func:`client`), its retries included, ended at
    the client's HTTP timeout, or within a quarter second of a stop request (stop.Stopped; during
    botocore's backoff between tries, when that wait ends). At the deadline it raises a transport
    failure naming it, so the batch stays uncommitted."""
    return _within_deadline(client, what, lambda: getattr(client, operation)(**params))


def read_object(client: Any, bucket: str, key: str, what: str) -> Tuple[bytes, str]:
    """The body of ``s3://bucket/key`` and its ETag, GetObject and the body's read both within the
    deadline of :func:`call` (the answer's socket stays watched until the body is read: ``aws_deadline``)."""

    def work() -> Tuple[bytes, str]:
        answer = client.get_object(Bucket=bucket, Key=key)
        return answer["Body"].read(), str(answer.get("ETag", ""))

    return _within_deadline(client, what, work)


def pages(
    client: Any, operation: str, what: str, more: Callable[[Dict[str, Any]], Any], resume: str, **params: Any
) -> Iterator[Dict[str, Any]]:
    """Every page of a listing, each fetched by :func:`call`. ``more(page)`` is the token of the next
    page (None after the last), passed back as the parameter ``resume``. A listing that says "more"
    without a token it has not handed out already is refused (``aws_deadline.NoProgress``): a peer
    answering the same page forever would otherwise hold the reader past every deadline."""
    from .transport import aws_deadline

    handed: Set[str] = set()
    while True:
        page = call(client, operation, what, **params)
        yield page
        token = more(page)
        if token is None:
            return
        seen = repr(token)
        if not token or seen in handed:
            raise aws_deadline.NoProgress(what=what)
        handed.add(seen)
        params[resume] = token


def s3_keys(client: Any, bucket: str, prefix: str) -> Iterator[str]:
    """The key of every object under ``prefix`` (ListObjectsV2, page by page: :func:`pages`)."""

    def more(page: Dict[str, Any]) -> Any:
        return page.get("NextContinuationToken", "") if page.get("IsTruncated") else None

    listing = pages(
        client, "list_objects_v2", "S3 ListObjectsV2", more, "ContinuationToken", Bucket=bucket, Prefix=prefix
    )
    for page in listing:
        for item in page.get("Contents", []):
            yield str(item["Key"])


def _within_deadline(client: Any, what: str, work: Callable[[], T]) -> T:
    from .transport import aws_deadline

    seconds = client.meta.config.read_timeout
    with deadline.watching(what, seconds) as watched:
        try:
            return work()
        except Exception:
            if not watched.cut.is_set():
                raise
    raise aws_deadline.DeadlineExceeded(message=deadline.cut_message(watched, what, seconds))


def failures() -> Tuple[Type[Exception], ...]:
    """The exceptions a boto3 call raises for a service or transport failure."""
    from botocore.exceptions import BotoCoreError, ClientError

    return (BotoCoreError, ClientError)


def error_code(exc: Exception) -> str:
    """The AWS error code of a service error ("" for anything else, such as a transport error)."""
    response = getattr(exc, "response", None)
    return str(response.get("Error", {}).get("Code", "")) if isinstance(response, dict) else ""


def message(exc: Exception) -> str:
    """The AWS error message of a service error ("" for anything else)."""
    response = getattr(exc, "response", None)
    return str(response.get("Error", {}).get("Message", "")) if isinstance(response, dict) else ""


def reason(exc: Exception) -> str:
    """What went wrong in a boto3 call, safe to show when the answer may hold a secret: the AWS error
    code, the deadline's own message (``aws_deadline``), or else only the exception's type (botocore's
    messages may quote the body it could not parse)."""
    from .transport import aws_deadline

    if isinstance(exc, (aws_deadline.DeadlineExceeded, aws_deadline.NoProgress)):
        return str(exc)
    return error_code(exc) or type(exc).__name__


def status(exc: Exception) -> int:
    """The HTTP status of a service error's answer (0 for anything else)."""
    response = getattr(exc, "response", None)
    return int(response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0) if response else 0


def sink_error(exc: Exception, doing: str) -> SinkError:
    """A SinkError from a boto3 failure: retryable for throttling, 5xx and transport errors only."""
    if not getattr(exc, "response", None):  # no answer at all: a connection or timeout error
        return SinkError(f"{doing} failed: {exc}", retryable=True)
    answered, code = status(exc), error_code(exc)
    return SinkError(
        f"{doing} failed: {exc}", retryable=answered >= 500 or answered == 429 or code in _THROTTLED
    )


_DENIED = frozenset({"403", "AccessDenied", "AccessDeniedException"})
_MISSING = frozenset({"404", "NoSuchBucket", "ResourceNotFoundException"})


def probe_call(client: Any, operation: str, what: str, where: str, **params: Any) -> Optional[Any]:
    """``call`` for `check`'s sink probes: the answer, or None when access is denied (which does not
    prove a write fails: a probe's action needs another permission than the write's). A missing
    ``where`` or any other failure is a SinkError naming what to check."""
    try:
        return call(client, operation, what, **params)
    except failures() as exc:
        code = error_code(exc)
        if code in _DENIED:
            return None
        if code in _MISSING:
            raise SinkError(f"{where} does not exist; check FORWARDER_SINK and AWS_REGION") from exc
        raise SinkError(
            f"{what} on {where} failed: {reason(exc)}; check FORWARDER_SINK and the AWS credentials"
        ) from exc


def s3_partition(prefix: str, time_us: int) -> str:
    """``<prefix>/year=YYYY/month=MM/day=DD/`` of the UTC day of ``time_us``: Hive-style, so Athena,
    Glue and Spark can prune partitions."""
    day = from_us(time_us)
    path = f"year={day.year:04d}/month={day.month:02d}/day={day.day:02d}/"
    return f"{prefix}/{path}" if prefix else path


def put_s3_ndjson(
    client: Any,
    bucket: str,
    key: str,
    lines: Sequence[bytes],
    compress: bool,
    kms_key_id: Optional[str],
    if_match: Optional[str] = None,
) -> None:
    """PUT the lines as one object (:func:`put_s3_object`); ``compress`` gzips the body; ``if_match``
    (an ETag) makes it replace only that version (else a failure with a code in ``CONFLICT_CODES``)."""
    body = b"".join(lines)
    extra: Dict[str, str] = {"ContentType": "application/x-ndjson"}
    if if_match is not None:
        extra["IfMatch"] = if_match
    if compress:
        body = gzip.compress(body, compresslevel=6, mtime=0)
        extra["ContentEncoding"] = "gzip"
    put_s3_object(client, bucket, key, body, kms_key_id, **extra)


def put_s3_object(
    client: Any, bucket: str, key: str, body: bytes, kms_key_id: Optional[str], **extra: str
) -> None:
    """PUT ``body`` as ``s3://bucket/key`` with the PutObject parameters ``extra``, encrypted at rest
    (SSE-KMS with ``kms_key_id``, else SSE-S3 asked for explicitly). Only an answer with an ETag counts
    as stored (a proxy's empty 200 does not): else a retryable SinkError."""
    if kms_key_id:
        extra.update(ServerSideEncryption="aws:kms", SSEKMSKeyId=kms_key_id)
    else:
        extra["ServerSideEncryption"] = "AES256"
    reply = call(client, "put_object", "S3 PutObject", Bucket=bucket, Key=key, Body=body, **extra)
    if not (isinstance(reply, dict) and reply.get("ETag")):  # S3's proof that it stored the object
        raise SinkError(f"S3 answered the PUT of s3://{bucket}/{key} without an ETag", retryable=True)
