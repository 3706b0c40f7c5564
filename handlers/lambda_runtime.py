"""What a Lambda invocation offers every handler (the single run, the fan-out planner and worker):
its deadline, its function's name, and the exception that fails it."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional


class RunFailed(Exception):
    """Raised to fail the invocation; the message is the report's summary (no secrets in it)."""


def deadline(context: Any, margin_s: float) -> Callable[[], bool]:
    """True once less than ``margin_s`` of the invocation is left (never without a Lambda context)."""
    remaining: Optional[Callable[[], int]] = getattr(context, "get_remaining_time_in_millis", None)
    if remaining is None:
        return lambda: False
    margin_ms = margin_s * 1000
    return lambda: remaining() < margin_ms


def function_name(context: Any, env: Mapping[str, str]) -> str:
    return getattr(context, "function_name", None) or env.get("AWS_LAMBDA_FUNCTION_NAME", "local")
