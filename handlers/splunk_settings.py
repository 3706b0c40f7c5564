"""What the add-on's configuration pages saved, read through solnlib as UCC add-ons do.

Accounts live in ``ta_fortra_emailauth_account.conf`` with the client secret in ``storage/passwords``
(UCC's realm per conf file); proxy and log level in ``ta_fortra_emailauth_settings.conf``
([proxy], [logging]), the proxy password encrypted the same way. Problems become ``SettingsError``
with a message naming the page to fix, never a traceback or a secret.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Dict, Optional
from urllib.parse import quote, urlsplit

from solnlib import conf_manager
from splunklib import binding

from forwarder.config import default_of
from forwarder.logs import quoted, register_secrets

APP = "TA-fortra-emailauth"
REST_ROOT = "ta_fortra_emailauth"
ACCOUNT_CONF = f"{REST_ROOT}_account"
SETTINGS_CONF = f"{REST_ROOT}_settings"
COLLECTION = f"{REST_ROOT}_checkpoints"  # the KV store collection of the inputs' checkpoints
DEFAULT_TOKEN_PATH = default_of("FORWARDER_TOKEN_PATH")
_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_TRUE = ("1", "true", "yes", "t", "y")


class _RetryNoise(logging.Filter):
    """solnlib's retry decorator logs every failure, expected ones too (a conf file not saved yet),
    as a traceback on the root logger: keep its last line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if (
            isinstance(record.msg, str)
            and record.msg.startswith("Run function:")
            and len(record.args or ()) == 2
        ):
            name, trace = record.args  # type: ignore[misc]
            record.msg, record.args = "solnlib: %s failed: %s", (name, str(trace).strip().splitlines()[-1])
        return True


logging.getLogger().addFilter(_RetryNoise())


class SettingsError(Exception):
    """A setting is missing or splunkd would not hand it over."""


@dataclass(frozen=True)
class Account:
    name: str
    api_url: str
    client_id: str
    client_secret: str = field(repr=False)
    token_path: str = DEFAULT_TOKEN_PATH


class SplunkdSettings:
    """The add-on's saved settings on the splunkd at ``server_uri``, with the session key splunkd gave."""

    def __init__(self, server_uri: str, session_key: str) -> None:
        parts = urlsplit(server_uri)
        self._session_key = session_key
        self._where = {"scheme": parts.scheme, "host": parts.hostname or "127.0.0.1", "port": parts.port}

    def _stanza(self, conf: str, stanza: str) -> Optional[Dict[str, Any]]:
        """The stanza's fields, secrets decrypted; None if it (or the conf file) does not exist."""
        try:
            manager = conf_manager.ConfManager(
                self._session_key,
                APP,
                realm=f"__REST_CREDENTIAL__#{APP}#configs/conf-{conf}",
                **self._where,
            )
            return dict(manager.get_conf(conf).get(stanza))
        except (conf_manager.ConfManagerException, conf_manager.ConfStanzaNotExistException):
            return None
        except binding.HTTPError as exc:
            raise SettingsError(
                f"splunkd refused to read {conf}.conf [{stanza}] (HTTP {exc.status})"
            ) from None
        except (OSError, ValueError, KeyError, AttributeError, TypeError) as exc:
            # a secret that is gone or not the JSON UCC writes; an answer solnlib cannot read
            raise SettingsError(f"cannot read {conf}.conf [{stanza}]: {type(exc).__name__}") from None

    def account(self, name: str) -> Account:
        if not name:
            raise SettingsError("the input names no account: choose one on the Inputs page")
        fields = self._stanza(ACCOUNT_CONF, name)
        if fields is None:
            raise SettingsError(f"account {quoted(name)} does not exist: add it on Configuration > Accounts")
        secret = str(fields.get("client_secret") or "")
        register_secrets([secret])
        missing = [k for k in ("api_url", "client_id") if not fields.get(k)] + (
            [] if secret else ["client_secret"]
        )
        if missing:
            raise SettingsError(
                f"account {quoted(name)} has no {', '.join(missing)}: edit it on Configuration > Accounts"
            )
        return Account(
            name,
            str(fields["api_url"]).strip(),
            str(fields["client_id"]).strip(),
            secret,
            str(fields.get("token_path") or DEFAULT_TOKEN_PATH).strip(),
        )

    def log_level(self) -> str:
        """The level on Configuration > Logging; INFO when it cannot be read."""
        try:
            fields = self._stanza(SETTINGS_CONF, "logging") or {}
        except SettingsError:
            return "INFO"
        level = str(fields.get("loglevel") or "INFO").upper()
        return level if level in _LEVELS else "INFO"

    def proxy_url(self) -> Optional[str]:
        """The proxy on Configuration > Proxy as a URL for requests, or None when it is off."""
        proxy = self._stanza(SETTINGS_CONF, "proxy")
        return proxy_url(proxy) if proxy else None


def proxy_url(proxy: Dict[str, Any]) -> Optional[str]:
    """``scheme://[user:password@]host:port`` from UCC's proxy fields; socks with remote DNS as socks5h."""
    if str(proxy.get("proxy_enabled") or "").lower() not in _TRUE:
        return None
    host, port = str(proxy.get("proxy_url") or "").strip(), str(proxy.get("proxy_port") or "").strip()
    if not host or not port.isdigit():
        raise SettingsError("the proxy is enabled without a host and port: fix Configuration > Proxy")
    kind = str(proxy.get("proxy_type") or "http").lower()
    remote_dns = str(proxy.get("proxy_rdns") or "").lower() in _TRUE
    scheme = {"http": "http", "socks4": "socks4a" if remote_dns else "socks4"}.get(
        kind, "socks5h" if remote_dns else "socks5"
    )
    user, password = str(proxy.get("proxy_username") or ""), str(proxy.get("proxy_password") or "")
    register_secrets([password])
    auth = f"{quote(user, safe='')}:{quote(password, safe='')}@" if user else ""
    return f"{scheme}://{auth}{host}:{port}"
