"""Store names derived from stream keys, bounded to what the store takes: a file name 255 bytes, an S3
key 1,024 bytes, a DynamoDB partition key 2,048 bytes. A stream key has no bound of its own (a user's
address is whatever the users endpoint lists).

A store encodes a key its own way (``name``). When that fits and holds no ``mark``, it is the name, so
the names every existing short key had stay as they were and no state moves. Otherwise the name is its
readable start, cut short, then ``mark`` and a hash of the whole key: stable, and collision-safe as long
as the store's own encoding of a key that fits never holds ``mark`` (a name holding it is always the
hashed kind, so a key cannot be chosen to look like another key's shortened name). Such a name cannot
be read back: the stream's document names its key (``stream``), where ``keys()`` reads it.
"""

from __future__ import annotations

import hashlib

# The S3 and DynamoDB stores' mark: S3's encoding always escapes it, and DynamoDB's names are the keys
# as they are, where no address or domain holds it (IDNA maps it to "...").
MARK = "\u2026"
HASH_CHARS = 32  # hex digits of SHA-256 kept: 128 bits, no accidental collision
READABLE_BYTES = 200  # of the name kept in front of the hash
MIN_ROOM = len(MARK.encode("utf-8")) + HASH_CHARS  # the least room for a name (S3, DynamoDB)


def bounded(name: str, key: str, limit: int, mark: str) -> str:
    """``name`` (the store's encoding of ``key``) if it is at most ``limit`` UTF-8 bytes and holds no
    ``mark``; else its start (whole characters only), ``mark`` and a hash of ``key``, within ``limit``.
    ValueError when ``limit`` leaves no room even for the hash."""
    if mark not in name and len(name.encode("utf-8")) <= limit:
        return name
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:HASH_CHARS]
    room = min(READABLE_BYTES, limit - len(mark.encode("utf-8")) - HASH_CHARS)
    if room < 0:
        raise ValueError(f"{limit} bytes are left for a stream's name, too few for even its hash")
    start = name.encode("utf-8")[:room].decode("utf-8", "ignore")  # a character cut in two is dropped
    return start + mark + digest


def is_bounded(name: str, mark: str) -> bool:
    """Whether ``name`` is the hashed kind (its key is only in the document)."""
    return mark in name
