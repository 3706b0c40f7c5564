"""URL checks: file: locations and S3 URIs read the way every store, quarantine and sink reads them."""

from __future__ import annotations

import pytest

from forwarder.urls import local_path, location_scheme, parse_s3_uri


@pytest.mark.parametrize(
    "location, path",
    [
        ("/srv/state", "/srv/state"),
        ("relative/dir", "relative/dir"),
        ("file:///srv/state", "/srv/state"),
        ("file://localhost/srv/a%20b", "/srv/a b"),
        ("file:relative/dir", "relative/dir"),
        ("FILE:///srv/x", "/srv/x"),
    ],
)
def test_a_local_path_from_a_path_or_a_file_uri(location, path):
    assert local_path(location) == path


@pytest.mark.parametrize(
    "location", ["file://remotehost/state", "file:///srv?x=1", "file:///srv#f", "file:", "file://", ""]
)
def test_a_file_uri_that_names_no_local_path_is_refused(location):
    with pytest.raises(ValueError):
        local_path(location)


def test_a_huge_host_is_quoted_cut_short():
    with pytest.raises(ValueError) as err:
        local_path("file://" + "h" * 1_000_000 + "/x")
    assert len(str(err.value)) < 500


def test_schemes_and_s3_uris():
    assert location_scheme("S3://b/p") == "s3" and location_scheme("/srv") == "file"
    assert parse_s3_uri("s3://bucket/p/", "X") == ("bucket", "p")
    with pytest.raises(ValueError, match="X for S3 must look like"):
        parse_s3_uri("s3:///p", "X")
