"""``ssm:<parameter name>``: the parameter's value (a SecureString is decrypted)."""

from __future__ import annotations

from .. import aws


def fetch(name: str, timeout_seconds: float) -> str:
    try:
        ssm = aws.client("ssm", timeout_seconds)
        parameter = aws.call(ssm, "get_parameter", "SSM GetParameter", Name=name, WithDecryption=True)
    except aws.failures() as exc:
        raise ValueError(aws.reason(exc)) from None
    return str(parameter["Parameter"]["Value"])
