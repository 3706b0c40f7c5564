"""What the add-on's REST handlers do beyond storing a form (bin/ta_fortra_emailauth_hooks.py):

* saving an account asks the platform for a token with it, through the configured proxy, and refuses
  the save with a message an admin can act on;
* creating an input gives it a ``checkpoint_id`` (its KV store scope), so a new input of a deleted
  input's name never inherits that input's delivery state; deleting an input drops the scope.
"""

from __future__ import annotations

import uuid
from typing import Any, Mapping, Optional

import requests

from forwarder.api.client import ApiClient, Credentials
from forwarder.api.token import token_endpoint
from forwarder.errors import ApiError, AuthError
from forwarder.http import new_session
from forwarder.retry import RetryPolicy
from forwarder.state.kvstore import KVStore, Splunkd
from forwarder.urls import check_url

from .splunk_settings import APP, COLLECTION, DEFAULT_TOKEN_PATH

CHECK_TIMEOUT_S = 20.0  # the admin waits on the save button


class AccountRejected(ValueError):
    """The account cannot get a token; the message says why, without the secret."""


def check_account(fields: Mapping[str, Any], proxy: Optional[str]) -> None:
    """Request a token with the account's fields; raise AccountRejected naming what to fix."""
    api_url = str(fields.get("api_url") or "").strip().rstrip("/")
    problem = check_url(api_url, "API base URL")
    if problem:
        raise AccountRejected(problem)
    token_path = str(fields.get("token_path") or "").strip() or DEFAULT_TOKEN_PATH
    session = new_session(proxy or "")  # the add-on's proxy setting, not splunkd's environment
    client = ApiClient(
        api_url,
        Credentials(str(fields.get("client_id") or "").strip(), str(fields.get("client_secret") or "")),
        token_path=token_path,
        timeout=CHECK_TIMEOUT_S,
        retry=RetryPolicy(attempts=2),
        session=session,
    )
    try:
        client.request_token()
    except AuthError as exc:
        raise AccountRejected(
            f"{api_url} refused this client id and secret (HTTP {exc.status}): check both in the portal"
        ) from None
    except ApiError as exc:
        endpoint = client.base_url + token_path  # named by its fields here, not by the variables
        message = (
            str(exc)
            .replace(token_endpoint(endpoint), f"the token endpoint {endpoint}")
            .replace("check FORWARDER_API_URL and FORWARDER_TOKEN_PATH", "check the URL and token path")
            .replace("FORWARDER_API_URL", "the URL")
            .replace("the proxy (HTTPS_PROXY)", "the proxy")  # the add-on's own proxy setting
        )
        raise AccountRejected(f"no token from {api_url}: {message}") from None
    except requests.RequestException as exc:
        raise AccountRejected(f"cannot reach {api_url}: {type(exc).__name__}") from None
    finally:
        client.close()


def new_checkpoint_id() -> str:
    return uuid.uuid4().hex


def drop_checkpoint(server_uri: str, session_key: str, scope: str) -> None:
    """Delete an input's delivery state (every tenant partition). Raises StateError."""
    KVStore(Splunkd(server_uri, APP, COLLECTION, session_key), scope).drop()
