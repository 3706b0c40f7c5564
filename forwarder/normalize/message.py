"""The one-line summary of an audit record (ECS ``message``, CEF ``msg``, OCSF ``message``)."""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Tuple

from .memo import text_cache

_PHRASES = {
    "user.login": "logged in",
    "user.update": "updated user",
    "user.update_roles": "changed roles of",
    "domain.create": "created domain",
    "domain.update": "updated domain",
    "domain.destroy": "deleted domain",
}
_MESSAGE_MAX = 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")  # all of them fail str.isprintable


def message(headline: str, action: str, display: Optional[str], audit: Mapping[str, Any], listed: str) -> str:
    """One line: who did what to what (``headline``), and the gist of the change. ``action`` is the
    filterable action, ``display`` the record's action as text (``changes.as_text``), ``audit`` the
    event's ``emailauth.audit``, ``listed`` its changes' names (``shape.Shape.listed``)."""
    dmarc = audit.get("dmarc")
    if "roles" in audit:
        roles = audit["roles"]
        added, removed = roles["added"], roles["removed"]
        plus = "+" + " +".join(added) if added else ""  # "+a +b": joined in C, no f-string per role
        minus = "-" + " -".join(removed) if removed else ""
        diff = f"{plus} {minus}" if plus and minus else plus or minus or "no change"
        return _line(headline, diff, dmarc)
    if display and display != action:
        detail: Optional[str] = display
    else:
        detail = listed if "changes" in audit else None
    if dmarc and (dmarc["weakened"] or dmarc["visibility_reduced"]):
        return _line(headline, detail, dmarc)
    return _summary((headline, detail))


def _line(headline: str, detail: Optional[str], dmarc: Optional[Mapping[str, Any]]) -> str:
    # Only the detail is made one line here: ``headline`` made the headline so, the DMARC reasons are
    # codes, and no run of control characters spans the printable ": " between them.
    text = headline if detail is None else f"{headline}: {_one_line(detail)}"
    if dmarc and dmarc["weakened"]:
        text += " (DMARC weakened: " + ", ".join(dmarc["weakened_reasons"]) + ")"
    if dmarc and dmarc["visibility_reduced"]:
        text += " (DMARC reports lost: " + ", ".join(dmarc["visibility_reasons"]) + ")"
    return text if len(text) <= _MESSAGE_MAX else text[: _MESSAGE_MAX - 1] + "…"


def _one_line(text: str) -> str:
    """``text`` with each run of control characters (line breaks among them) made one space."""
    return text if text.isprintable() else _CONTROL.sub(" ", text)


# The line of most records: a trail repeats its users, objects and actions, a kind of change its keys.
@text_cache(4096)
def _summary(key: Tuple[str, Optional[str]]) -> str:
    """``_line`` of a headline and a detail, without DMARC findings."""
    return _line(*key, None)


def headline(actor: Optional[str], action: str, target: Optional[str]) -> str:
    """Who did what to what, on one line (a subject's: cached). ``actor`` is the record's user as text
    (``changes.as_text``), ``target`` its object as shown (``subject``: a domain with its Unicode
    form), ``action`` the filterable one."""
    actor = actor or "unknown user"
    phrase = _PHRASES.get(action) or f"performed {action or 'an unknown action'}"
    target = target or ""
    if action == "user.login" or not target:
        return _one_line(f"{actor} {phrase}")
    return _one_line(f"{actor} {phrase} {target}" if action in _PHRASES else f"{actor} {phrase} on {target}")
