"""The S3 quarantine's tests use the AWS resources made per test on the moto server."""

from __future__ import annotations

from tests.aws.conftest import bucket, silent  # noqa: F401 - the AWS tests' fixtures, shared
