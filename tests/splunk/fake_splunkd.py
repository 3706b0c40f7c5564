"""A loopback stand-in, over HTTPS, for the splunkd REST endpoints the add-on calls.

* ``storage/passwords`` (Atom, as splunklib reads it): ``passwords`` maps (realm, user) to a secret;
* ``properties/<conf>`` and ``configs/conf-<conf>`` (Atom): ``confs`` maps conf -> stanza -> fields,
  which is how solnlib's ConfManager reads accounts, proxy and logging settings;
* the KV store data endpoint ``storage/collections/data/<collection>[/<key>]`` over ``collections``:
  insert (409 on a duplicate ``_key``), query (equality, ``$gt``/``$lt``; sort, skip, limit,
  fields), delete by key or by query. A collection must be declared (``collections[name] = {}``).

Every request must carry ``Authorization: Splunk <session key>``; ``requests`` logs each path.
The life cycle is the test receivers' (``LoopbackReceiver``), over TLS.
"""

from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any, Dict, List, Tuple
from urllib.parse import parse_qs, quote, unquote, urlsplit
from xml.sax.saxutils import escape, quoteattr

from tests.receivers.http_collector import LoopbackReceiver, Reply, json_reply
from tests.syslog.rsyslog import make_certificates

SESSION_KEY = "fake-session-key-0123456789"
_NOT_FOUND = (404, {"messages": [{"type": "ERROR", "text": "Not Found"}]})


def _value(v: Any) -> str:
    if isinstance(v, dict):
        return (
            "<s:dict>"
            + "".join(f"<s:key name={quoteattr(k)}>{_value(x)}</s:key>" for k, x in v.items())
            + "</s:dict>"
        )
    return escape(str(v))


def _atom(base: str, entries: List[Tuple[str, Dict[str, Any]]], app: str) -> str:
    acl = {"app": app, "owner": "nobody", "sharing": "app"}
    items = "".join(
        f"<entry><title>{escape(name)}</title><id>{escape(base + quote(name, safe=''))}</id>"
        f"<link href={quoteattr(urlsplit(base).path + quote(name, safe=''))} rel='alternate'/>"
        "<content type='text/xml'><s:dict>"
        + "".join(
            f"<s:key name={quoteattr(k)}>{_value(v)}</s:key>" for k, v in {**content, "eai:acl": acl}.items()
        )
        + "</s:dict></content></entry>"
        for name, content in entries
    )
    return (
        "<?xml version='1.0' encoding='UTF-8'?>"
        "<feed xmlns='http://www.w3.org/2005/Atom' xmlns:s='http://dev.splunk.com/ns/rest'>"
        f"<title>fake</title><id>{escape(base)}</id>"
        f"<s:totalResults>{len(entries)}</s:totalResults>{items}</feed>"
    )


def _matches(record: Dict[str, Any], query: Dict[str, Any]) -> bool:
    for field, want in query.items():
        have = record.get(field)
        if isinstance(want, dict):
            for op, bound in want.items():
                if have is None or not {"$gt": have > bound, "$lt": have < bound}[op]:
                    return False
        elif have != want:
            return False
    return True


class FakeSplunkd(LoopbackReceiver):
    name = "fake-splunkd"

    def __init__(self, app: str, cert_dir: Path) -> None:
        super().__init__()
        self.app = app
        self.passwords: Dict[Tuple[str, str], str] = {}
        self.confs: Dict[str, Dict[str, Dict[str, str]]] = {}
        self.collections: Dict[str, Dict[str, Dict[str, Any]]] = {}
        self.requests: List[str] = []
        cert_dir.mkdir(parents=True, exist_ok=True)
        make_certificates(cert_dir)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_dir / "server.pem", cert_dir / "server-key.pem")
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.port}"

    def answer(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        parts = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        self.requests.append(f"{method} {parts.path}")
        if headers.get("authorization") != f"Splunk {SESSION_KEY}":
            return json_reply(
                401, {"messages": [{"type": "WARN", "text": "call not properly authenticated"}]}
            )
        status, answer = self.route(method, parts.path, query, raw)
        if isinstance(answer, str):
            return status, answer.encode(), {"Content-Type": "text/xml"}
        return (
            status,
            b"" if answer is None else json.dumps(answer).encode(),
            {"Content-Type": "application/json"},
        )

    # -- routes ----------------------------------------------------------------------------

    def route(self, method: str, path: str, query: Dict[str, str], body: bytes) -> Tuple[int, Any]:
        parts = path.split("/")
        if len(parts) < 5 or parts[1] != "servicesNS":
            return _NOT_FOUND
        rest = "/".join(parts[4:])
        base = f"{self.url}/servicesNS/{parts[2]}/{parts[3]}/"
        if rest.startswith("storage/collections/data/"):
            return self._kvstore(method, unquote(rest[len("storage/collections/data/") :]), query, body)
        if rest == "storage/passwords":
            entries = [
                (f"{realm}:{user}:", {"realm": realm, "username": user, "clear_password": secret})
                for (realm, user), secret in self.passwords.items()
                if not query.get("search") or query["search"] == f"realm={realm}"
            ]
            return 200, _atom(base + "storage/passwords/", entries, self.app)
        if rest.startswith("properties/"):
            return (
                (200, _atom(base + rest + "/", [], self.app))
                if unquote(rest[11:]) in self.confs
                else _NOT_FOUND
            )
        if rest.startswith("configs/conf-"):
            name, _, stanza = unquote(rest[len("configs/conf-") :]).partition("/")
            stanzas = self.confs.get(name)
            if stanzas is None:
                return _NOT_FOUND
            wanted = stanza or query.get("name")
            found = [(k, v) for k, v in stanzas.items() if not wanted or k == wanted]
            if stanza and not found:
                return _NOT_FOUND
            return 200, _atom(f"{base}configs/conf-{name}/", found, self.app)
        return _NOT_FOUND

    def _kvstore(self, method: str, rest: str, query: Dict[str, str], body: bytes) -> Tuple[int, Any]:
        name, _, key = rest.partition("/")
        with self.lock:
            records = self.collections.get(name)
            if records is None:
                return _NOT_FOUND
            if method == "POST" and not key:
                record = json.loads(body)
                if record["_key"] in records:
                    return 409, {
                        "messages": [{"type": "ERROR", "text": "A document with the same key exists"}]
                    }
                records[record["_key"]] = record
                return 201, {"_key": record["_key"]}
            selected = [r for r in records.values() if (r["_key"] == key if key else True)]
            if "query" in query:
                selected = [r for r in selected if _matches(r, json.loads(query["query"]))]
            if method == "DELETE":
                for r in selected:
                    del records[r["_key"]]
                return 200, None
            if key:
                return (200, selected[0]) if selected else _NOT_FOUND
            return 200, self._shape(selected, query)

    @staticmethod
    def _shape(selected: List[Dict[str, Any]], query: Dict[str, str]) -> List[Dict[str, Any]]:
        for spec in reversed(query.get("sort", "").split(",") if query.get("sort") else []):
            field, _, direction = spec.partition(":")
            selected.sort(key=lambda r, f=field: r.get(f), reverse=direction == "-1")
        skip = int(query.get("skip", 0))
        limit = int(query.get("limit", 0)) or len(selected)
        selected = selected[skip : skip + limit]
        if query.get("fields"):
            keep = set(query["fields"].split(",")) | {"_key"}
            selected = [{k: v for k, v in r.items() if k in keep} for r in selected]
        return selected


def account_password(fake: FakeSplunkd, conf: str, account: str, secret: str) -> None:
    """Store an account's encrypted fields the way UCC's REST handler does (realm per conf file)."""
    fake.passwords[(f"__REST_CREDENTIAL__#{fake.app}#configs/conf-{conf}", account)] = json.dumps(
        {"client_secret": secret}
    )
