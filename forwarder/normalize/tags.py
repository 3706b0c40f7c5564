"""TXT record text as DNS tools print it, and the ``tag=value`` lists of DKIM and DMARC records.

One record may be printed as several quoted strings (``"v=DKIM1; p=MIIB..." "...rest"``): TXT
strings hold at most 255 characters, so long records such as 2048-bit DKIM keys are split. The
receiver joins the strings without a space; so do we, for every record kind.
"""

from __future__ import annotations

from typing import Any, Dict, Optional


def unquote(text: str) -> str:
    """The record as the receiver reads it: outer quotes removed, ``"a" "b"`` strings joined."""
    body = text.strip()
    if len(body) >= 2 and body[0] == body[-1] == '"':
        body = body[1:-1]
    return body.replace('" "', "")


def parse_tags(text: str) -> Dict[str, str]:
    """``tag=value`` pairs in order: names lowercased, values trimmed, the first of a repeated tag wins.

    Lenient on purpose (segments without ``=`` are skipped): each record kind judges validity.
    """
    tags: Dict[str, str] = {}
    for segment in unquote(text).split(";"):
        name, sep, value = segment.partition("=")
        name = name.strip().lower()
        if sep and name and name not in tags:
            tags[name] = value.strip()
    return tags


def removal_reason(after: Optional[str]) -> str:
    """Why a valid record is gone: blank or absent text removed it, other text made it invalid."""
    return "record_invalid" if after and after.strip() else "record_removed"


def side_fields(out: Dict[str, Any], before: Any, after: Any) -> Dict[str, Any]:
    """``out`` with the ``before`` and ``after`` objects of a record change's fields: each side's own
    ``fields()``, a side without a record (None) left out."""
    if before is not None:
        out["before"] = before.fields()
    if after is not None:
        out["after"] = after.fields()
    return out
