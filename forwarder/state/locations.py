"""What a state location names, read without opening it: the parts each store opens, or a
ValueError saying what is wrong. Light (no store module, no boto3, no requests), so the
configuration checks every location before any network call and the stores parse it the same way."""

from __future__ import annotations

from typing import Callable, Dict, Optional, Tuple
from urllib.parse import unquote, urlsplit

from ..logs import quoted
from ..urls import local_path, location_scheme, parse_s3_uri


def s3_parts(location: str) -> Tuple[str, str]:
    """(bucket, prefix) of ``s3://bucket`` or ``s3://bucket/prefix``."""
    return parse_s3_uri(location, "the state location")


def dynamodb_parts(location: str) -> Tuple[str, str]:
    """(table, namespace) of ``dynamodb://table`` or ``dynamodb://table/namespace``."""
    parts = urlsplit(location)
    table, namespace = parts.netloc, parts.path.strip("/")
    if parts.scheme.lower() != "dynamodb" or not table or parts.query or "#" in namespace:
        raise ValueError("expected dynamodb://table or dynamodb://table/namespace")
    return table, namespace


def kvstore_parts(location: str) -> Tuple[str, str, str, str]:
    """(host:port, app, collection, scope) of ``kvstore://host:port/<app>/<collection>/<scope>``."""
    parts = urlsplit(location)
    path = [unquote(p) for p in parts.path.split("/")[1:]]
    if parts.scheme != "kvstore" or not parts.hostname or len(path) != 3 or not all(path) or parts.query:
        raise ValueError("a KV store location must look like kvstore://host:8089/<app>/<collection>/<scope>")
    app, collection, scope = path
    return parts.netloc, app, collection, scope


_READERS: Dict[str, Callable[[str], object]] = {
    "file": local_path,
    "s3": s3_parts,
    "dynamodb": dynamodb_parts,
    "kvstore": kvstore_parts,
}


def location_problem(location: str) -> Optional[str]:
    """What is wrong with ``location`` as a state location, checked without opening it; None if fine."""
    scheme = location_scheme(location)
    read = _READERS.get(scheme)
    if read is None:
        return (
            f"unknown scheme {quoted(scheme)} (use a directory path, file://, s3://bucket/prefix, "
            "dynamodb://table or kvstore://host:port/app/collection/scope)"
        )
    try:
        read(location)
    except ValueError as exc:
        return str(exc)
    return None
