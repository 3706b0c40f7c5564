"""Assertions shared by the sink tests."""

from __future__ import annotations

from forwarder.events import Event, Rejection, SendResult


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
