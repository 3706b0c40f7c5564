"""Masking: every registered secret, in every form text may carry it, is replaced in log lines."""

from __future__ import annotations

import io
import json
import logging

import pytest

from forwarder import logs

SECRETS = ["tok\r\nen-with-crlf", "tök€n-non-latin-1", "quote'and\"both", "back\\slash\ttab"]


@pytest.fixture(autouse=True)
def registered():
    logs.register_secrets(SECRETS)


@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize(
    "shown",
    [
        lambda s: s,
        repr,  # an exception's message quotes a header value with !r
        ascii,
        lambda s: json.dumps(s),
        lambda s: json.dumps(s, ensure_ascii=False),
        lambda s: repr(repr(s)),  # a repr inside a repr (an exception's args)
    ],
    ids=["raw", "repr", "ascii", "json", "json-unicode", "repr-of-repr"],
)
def test_every_escaped_form_is_masked_in_text_and_in_a_json_log_line(secret, shown):
    text = f"header value: {shown(secret)}"
    assert "***" in logs.redact(text)
    assert not [form for form in _pieces(secret) if form in logs.redact(text)]
    out = io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    logs.configure(stream=out)
    try:
        logging.getLogger("test").warning("failed", extra={"error": text})
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    line = out.getvalue()
    assert "***" in line and not [form for form in _pieces(secret) if form in line], line


def _pieces(secret: str) -> list[str]:
    """The runs of the secret between the characters an escape rewrites: none may survive."""
    return [p for p in secret.replace("\r\n", "\0").replace("'", "\0").split("\0") if len(p) >= 4]


def test_a_quoted_value_of_any_size_is_cut_and_says_how_long_it_was():
    huge = "x" * 5_000_000
    shown = logs.quoted(huge)
    assert len(shown) < 2 * logs.QUOTE_LIMIT and "5000000 characters" in shown
    assert shown.startswith("'xxx")
    assert logs.quoted("alice@example.com") == "'alice@example.com'"
    assert logs.quoted(["a", 1]) == "['a', 1]"
    assert len(logs.quoted(list(range(1_000_000)))) < 2 * logs.QUOTE_LIMIT
    assert logs.clip("short") == "short" and len(logs.clip("y" * 10_000, 300)) < 350


@pytest.mark.parametrize("at", range(logs.QUOTE_LIMIT - 30, logs.QUOTE_LIMIT + 5))
def test_a_secret_across_the_cut_leaves_no_part_of_it(at):
    secret = "s3cr3t-token-value-of-some-length"  # registered below, longer than the overlap
    logs.register_secrets([secret])
    text = "a" * at + secret + "b" * 1000
    for shown in (logs.quoted(text), logs.clip(text, logs.QUOTE_LIMIT)):
        assert not [secret[:n] for n in range(4, len(secret)) if secret[:n] in shown], shown


def test_a_token_registered_early_in_a_run_is_still_masked_while_the_bound_holds():
    secrets = logs.Secrets(max_tokens=8)
    secrets.register(["client-secret-of-the-run"])
    secrets.register_tokens(["token-number-0000"])
    secrets.register_tokens([f"token-number-{n:04}" for n in range(1, 8)])  # the bound, reached
    assert secrets.redact("sent token-number-0000 and token-number-0007") == "sent *** and ***"
    secrets.register_tokens([f"token-number-{n:04}" for n in range(8, 10_000)])  # a long-running process
    assert len(secrets.forms()) <= len(logs.secret_forms("client-secret-of-the-run")) + 8 * max(
        len(logs.secret_forms(f"token-number-{n:04}")) for n in range(10_000)
    )
    assert secrets.redact("client-secret-of-the-run") == "***"  # a configuration secret is never dropped
    assert [secrets.redact(f"token-number-{n:04}") for n in range(9_992, 10_000)] == ["***"] * 8
    assert secrets.redact("token-number-0000") == "token-number-0000"  # the least recently used: dropped


def test_a_token_in_use_outlives_the_newer_tokens_that_fill_the_registry():
    secrets = logs.Secrets(max_tokens=4)
    secrets.register_tokens(["the-token-in-use"])
    for n in range(100):
        secrets.register_tokens([f"tenant-token-{n}"])
        secrets.register_tokens(["the-token-in-use"])  # handed out again: the most recently used
    assert secrets.redact("Bearer the-token-in-use") == "Bearer ***"
    assert secrets.redact("tenant-token-0") == "tenant-token-0"


def test_the_process_registry_is_bounded_by_max_tokens():
    assert logs.SECRETS.max_tokens == logs.MAX_TOKENS
    logs.register_tokens([f"flooding-token-{n}" for n in range(3 * logs.MAX_TOKENS)])
    assert logs.redact("flooding-token-0") == "flooding-token-0"
    assert logs.redact(f"flooding-token-{3 * logs.MAX_TOKENS - 1}") == "***"
    assert all(logs.redact(s) != s for s in SECRETS)  # the configuration secrets stay
