"""What the commands share: settings from the environment and the flags that override it (both from
the configuration table), tenants, the output style, and opening a location as a configuration check."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Dict, List, Mapping, Optional, TypeVar

from ..config import VARIABLES, Settings, load_settings, parse_log_format
from ..config.readme import plain
from ..console.session import wants_text
from ..console.style import Style, wants_colour
from ..errors import ConfigError
from ..tenants import Tenant, load_tenants, select

T = TypeVar("T")
QUIET_HELP = "print errors only: no progress, summary or warnings; the exit code says the rest"


def add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """A flag for every variable the table gives one (every setting but secrets and the Lambda-only
    ones: a command line is visible to every user of the machine)."""
    group = parser.add_argument_group("settings (each overrides its FORWARDER_* variable)")
    for v in VARIABLES:
        if v.flag:
            default = f" (default {v.default})" if v.default else ""
            group.add_argument(v.flag, dest=v.name, metavar="VALUE", help=f"{plain(v.help)}{default}")


def add_tenant_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tenant", metavar="NAME", help="only this tenant of FORWARDER_TENANTS (default: all)"
    )


def env_of(args: argparse.Namespace, base: Mapping[str, str] = os.environ) -> Dict[str, str]:
    """``base`` with the variables the command line's flags override."""
    env = dict(base)
    for v in VARIABLES:
        value = getattr(args, v.name, None)
        if value is not None:
            env[v.name] = value
    return env


def settings_of(args: argparse.Namespace) -> Settings:
    return load_settings(env_of(args))


def log_format_of(env: Mapping[str, str]) -> str:
    """FORWARDER_LOG_FORMAT for the commands that do not load every setting (demo, state)."""
    try:
        return parse_log_format(env.get("FORWARDER_LOG_FORMAT"))
    except ValueError as exc:
        raise ConfigError([str(exc)]) from None


def tables(log_format: str, args: argparse.Namespace) -> Optional[Style]:
    """The style for tables on stdout, or None for the machine form (--json, or not a terminal)."""
    if args.json or not wants_text(log_format, sys.stdout):
        return None
    return Style(wants_colour(sys.stdout, os.environ))


def tenants_of(args: argparse.Namespace) -> Optional[List[Tenant]]:
    """The tenants to work on (``--tenant`` picks one), or None without FORWARDER_TENANTS."""
    tenants = load_tenants(env_of(args))
    name = getattr(args, "tenant", None)
    if tenants is None:
        if name:
            raise ConfigError(
                ["--tenant: FORWARDER_TENANTS is not set, so there are no tenants to choose from"]
            )
        return None
    return select(tenants, name)


def opened(opener: Callable[[str], T], location: str, variable: str) -> T:
    """``opener(location)``, a bad location being a configuration problem (exit 2), not a traceback."""
    try:
        return opener(location)
    except ValueError as exc:
        message = str(exc)
        raise ConfigError([message if message.startswith(variable) else f"{variable}: {message}"]) from None
