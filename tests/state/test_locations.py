"""State locations read without opening them: the parts each store opens, or what is wrong."""

from __future__ import annotations

import pytest

from forwarder.state.locations import dynamodb_parts, kvstore_parts, location_problem, s3_parts


def test_the_parts_each_store_opens():
    assert s3_parts("s3://bucket/a/b/") == ("bucket", "a/b")
    assert dynamodb_parts("dynamodb://table/tenant/acme") == ("table", "tenant/acme")
    assert kvstore_parts("kvstore://splunk:8089/app/coll/scope%2F1") == (
        "splunk:8089",
        "app",
        "coll",
        "scope/1",
    )


@pytest.mark.parametrize(
    "location, problem",
    [
        ("file://otherhost/state", "not on 'otherhost'"),
        ("file:", "must name a path"),
        ("", "empty"),
        ("s3://", "must look like s3://bucket/prefix"),
        ("dynamodb://", "expected dynamodb://table"),
        ("dynamodb://table?x=1", "expected dynamodb://table"),
        ("kvstore://splunk:8089/app", "kvstore://host:8089/<app>/<collection>/<scope>"),
        ("ftp://host/state", "unknown scheme 'ftp'"),
    ],
)
def test_what_is_wrong_is_said(location, problem):
    assert problem in (location_problem(location) or "")


@pytest.mark.parametrize(
    "location", ["./state", "/srv/state", "file:///srv/state", "file://localhost/srv", "file:rel", "s3://b"]
)
def test_usable_locations_have_no_problem(location):
    assert location_problem(location) is None
