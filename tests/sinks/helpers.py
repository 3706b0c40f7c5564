"""Assertions shared by the sink tests."""

from __future__ import annotations

import json
from typing import Any

from forwarder.events import Event, Rejection, SendResult
from forwarder.sinks import sink_options
from forwarder.sinks.settings import SinkSettings
from tests.receivers.http_collector import LoopbackReceiver, Reply


class NoEtag(LoopbackReceiver):
    """Something in front of S3 (a proxy, a misconfigured endpoint) answering 200 with no ETag."""

    def answer(self, method: str, target: str, headers: dict, raw: bytes) -> Reply:
        return 200, b"", {}


def only_rejection(result: SendResult, event: Event, delivered: int) -> Rejection:
    """The one rejection of ``result``, checked to be ``event`` with all else delivered."""
    assert result.delivered == delivered
    (rejection,) = result.rejected
    assert rejection.event is event
    return rejection


def firehose_into_bucket(stream: str, bucket: str) -> None:
    """A moto Firehose delivery stream writing into a new S3 bucket."""
    import boto3

    boto3.client("s3").create_bucket(Bucket=bucket)
    boto3.client("firehose").create_delivery_stream(
        DeliveryStreamName=stream,
        ExtendedS3DestinationConfiguration={
            "RoleARN": "arn:aws:iam::123456789012:role/firehose",
            "BucketARN": f"arn:aws:s3:::{bucket}",
            "Prefix": "audit/",
        },
    )


def lake_objects(bucket: str) -> dict:
    """Every Security Lake object in ``bucket``: key -> its rows as written, read back with pyarrow,
    the JSON-text columns (``securitylake.JSON_PATHS``) parsed again and the nulls Parquet gives for
    fields a row did not have left out, so each row reads as the OCSF event it was."""
    import io

    import boto3
    import pyarrow.parquet as pq

    s3 = boto3.client("s3")
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    keys = [item["Key"] for page in pages for item in page.get("Contents", [])]
    found = {}
    for key in sorted(keys):
        table = pq.read_table(io.BytesIO(s3.get_object(Bucket=bucket, Key=key)["Body"].read()))
        found[key] = [as_written(row) for row in table.to_pylist()]
    return found


def as_written(row: dict) -> dict:
    import json

    from forwarder.sinks.securitylake import JSON_PATHS

    row = without_nulls(row)
    for path in JSON_PATHS:
        holder = row
        for step in path[:-1]:
            holder = holder.get(step) if isinstance(holder, dict) else None
        if isinstance(holder, dict) and path[-1] in holder:
            holder[path[-1]] = json.loads(holder[path[-1]])
    return row


def without_nulls(value):
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def event(n: int) -> Event:
    return Event(f"{n:064x}", 1_767_323_045_000_000 + n, json.dumps({"n": n, "msg": "héllo"}).encode())


CEF = Event("c" * 64, 0, b"CEF:0|V|P|1|a|b|3|msg=x", is_json=False)
# The sinks' own settings by their former SinkSettings names -> the variable that fills them.
OPTION_VARIABLES = {
    "index": "FORWARDER_HEC_INDEX",
    "sourcetype": "FORWARDER_HEC_SOURCETYPE",
    "source": "FORWARDER_HEC_SOURCE",
    "host": "FORWARDER_HEC_HOST",
    "hec_ack": "FORWARDER_HEC_ACK",
    "http_body": "FORWARDER_HTTP_BODY",
    "accept_body": "FORWARDER_SINK_ACCEPT_BODY",
    "es_namespace": "FORWARDER_ES_NAMESPACE",
    "syslog_max_message_bytes": "FORWARDER_SYSLOG_MAX_MESSAGE",
    "secops_project": "FORWARDER_SECOPS_PROJECT",
    "secops_region": "FORWARDER_SECOPS_REGION",
    "secops_instance": "FORWARDER_SECOPS_INSTANCE",
    "secops_credentials": "FORWARDER_SECOPS_CREDENTIALS",
    "sentinel_rule_id": "FORWARDER_SENTINEL_RULE_ID",
    "sentinel_stream": "FORWARDER_SENTINEL_STREAM",
    "azure_tenant_id": "FORWARDER_AZURE_TENANT_ID",
    "azure_client_id": "FORWARDER_AZURE_CLIENT_ID",
    "azure_client_secret": "FORWARDER_AZURE_CLIENT_SECRET",
    "azure_authority": "FORWARDER_AZURE_AUTHORITY",
    "securitylake_account_id": "FORWARDER_SECURITYLAKE_ACCOUNT_ID",
}


def sink_settings(**values: Any) -> SinkSettings:
    """SinkSettings as configuration builds them: the shared fields, and the chosen sink's own options
    from the values of its variables (given here by the short names of ``OPTION_VARIABLES``)."""
    own = {OPTION_VARIABLES[k]: values.pop(k) for k in list(values) if k in OPTION_VARIABLES}
    return SinkSettings(**values, options=sink_options(values["uri"], own))
