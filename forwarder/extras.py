"""Optional dependencies (the extras of pyproject.toml): the settings that need one, and the
configuration problem naming the extra to install when it is missing. A build without the ``aws``
extra (``pip install .``, the Splunk add-on) runs every setting that does not reach AWS."""

from __future__ import annotations

import functools
import importlib
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

PACKAGE = "emailauth-audit-forwarder"
AWS_MODULES = ("boto3", "botocore")
INSTALL_AWS = f"pip install '{PACKAGE}[aws]'"
PARQUET_MODULES = ("pyarrow", "pyarrow.parquet")
INSTALL_SECURITYLAKE = f"pip install '{PACKAGE}[aws,securitylake]'"

# Settings whose value, by how it starts, is reached through boto3.
AWS_VALUES: Dict[str, Tuple[str, ...]] = {
    "FORWARDER_STATE": ("s3://", "dynamodb://"),
    "FORWARDER_QUARANTINE": ("s3://",),
    "FORWARDER_SINK": ("s3://", "firehose://", "securitylake://"),
    "FORWARDER_CREDENTIALS": ("secretsmanager:", "ssm:"),
    "FORWARDER_TENANTS": ("s3://", "secretsmanager:", "ssm:"),
    "FORWARDER_SECOPS_CREDENTIALS": ("secretsmanager:", "ssm:"),
}


@functools.cache
def _importable(modules: Tuple[str, ...]) -> bool:
    try:
        for name in modules:
            importlib.import_module(name)
    except ImportError:
        return False
    return True


def missing_problem(variable: str, kind: str, modules: Tuple[str, ...] = AWS_MODULES) -> Optional[str]:
    """The problem of ``variable`` set to a ``kind`` of value (``s3://``) that needs ``modules``
    when they cannot be imported; None when they can."""
    if _importable(modules):
        return None
    return f"{variable}: {kind} needs boto3, which this installation lacks: {INSTALL_AWS}"


def parquet_problem(variable: str, kind: str) -> Optional[str]:
    """The problem of ``variable`` set to a ``kind`` of value that writes Parquet when pyarrow cannot
    be imported (the ``securitylake`` extra); None when it can."""
    if _importable(PARQUET_MODULES):
        return None
    return (
        f"{variable}: {kind} writes Parquet with pyarrow, which this installation lacks: "
        f"{INSTALL_SECURITYLAKE} (in Lambda, the layer template.yaml's SecurityLakeLayerArn names)"
    )


def aws_problems(env: Mapping[str, str], variables: Iterable[str]) -> List[str]:
    """The problems of those ``variables`` in ``env`` whose value needs boto3 while it is missing."""
    problems = []
    for variable in variables:
        value = (env.get(variable) or "").strip().lower()
        kind = next((k for k in AWS_VALUES[variable] if value.startswith(k)), None)
        problem = missing_problem(variable, kind) if kind else None
        if problem:
            problems.append(problem)
    return problems
