"""``secretsmanager:<secret id>``: the secret's text (SecretString)."""

from __future__ import annotations

from .. import aws


def fetch(name: str, timeout_seconds: float) -> str:
    try:
        secrets = aws.client("secretsmanager", timeout_seconds)
        response = aws.call(secrets, "get_secret_value", "Secrets Manager GetSecretValue", SecretId=name)
    except aws.failures() as exc:
        raise ValueError(aws.reason(exc)) from None
    if "SecretString" not in response:
        raise ValueError("the secret holds binary data, not text")
    return str(response["SecretString"])
