"""The S3 and DynamoDB stores' tests use the AWS resources made per test on the moto server."""

from __future__ import annotations

from tests.aws.conftest import bucket, table  # noqa: F401 - the AWS tests' fixtures, shared
