"""State in a Splunk KV store collection, where a search head cluster replicates it.

Location: ``kvstore://host:port/<app>/<collection>/<scope>``; every document of one store carries
its ``scope`` (the Splunk add-on uses a per-input id, so a new input of the same name starts empty
and deleting an input drops its scope). The session key (or an authentication token) is passed by
the caller: the add-on's own session key, or ``Settings.splunk_token`` (``FORWARDER_SPLUNK_TOKEN``)
through ``open_store``. It is registered as a secret and kept out of every repr.

The KV store has no conditional update, only an insert that fails with 409 on a duplicate
``_key``. So each slot (a stream, the lease, the scheduler document) is a chain of records ``seq`` 1, 2, ...
with ``_key = <slot hash>-<seq>``: the newest record is the slot's value and its ``seq`` the version.
A commit over version ``n`` checks that ``n`` is still the newest, then inserts ``n + 1``; of two
writers over the same version only one insert succeeds. A delete inserts a tombstone the same way,
so a version from before it can never succeed. A superseded record is removed only once it is
older than ``GRACE_S``: until then its number stays taken, so a writer whose check and insert were
slow (each request is bounded by the timeout) still collides with it instead of reusing it.
"""

from __future__ import annotations

import hashlib
import re
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple
from urllib.parse import quote, unquote, urlsplit

import requests
from urllib3.exceptions import InsecureRequestWarning

from ..errors import ConflictError, StateError
from ..jsonutil import dumps, loads
from ..logs import register_secrets
from .lease import SlotLease, acquire
from .locations import kvstore_parts
from .model import StreamState
from .slots import commit_stream, load_stream
from .store import Loaded, StorePlace

TOKEN_VARIABLE = "FORWARDER_SPLUNK_TOKEN"
_STREAMS = "streams/"
_LEASE = "lease"
_TIMEOUT = (10.0, 30.0)
_PAGE = 1000
GRACE_S = 900.0  # far above two request timeouts, and above clock skew between search heads
_FIX = "delete the record in the KV store collection (state reset)"


class Splunkd:
    """The KV store data endpoint of one collection, authenticated with a session key.

    splunkd's management port has a self-signed certificate by default and the session key only
    works on that host, so, like splunklib and solnlib, the certificate is not verified; proxies
    from the environment never apply to splunkd.
    """

    def __init__(self, base_url: str, app: str, collection: str, token: str) -> None:
        self.base = base_url.rstrip("/")
        self.url = f"{self.base}/servicesNS/nobody/{quote(app, safe='')}/storage/collections/data/"
        self.url += quote(collection, safe="")
        self.collection = collection
        self._session = requests.Session()
        self._session.trust_env = False
        self._session.verify = False
        self._session.headers["Authorization"] = f"Splunk {token}"
        register_secrets([token])
        host = re.escape(urlsplit(self.base).hostname or "")
        warnings.filterwarnings(
            "ignore", f"Unverified HTTPS request .* host '{host}'", InsecureRequestWarning
        )

    def call(self, method: str, path: str = "", **kwargs: Any) -> Tuple[int, Any]:
        """(status, decoded JSON or None). Raises StateError when splunkd cannot answer usefully."""
        try:
            response = self._session.request(
                method, self.url + path, params={"output_mode": "json", **kwargs.pop("params", {})},
                timeout=_TIMEOUT, **kwargs,
            )  # fmt: skip
        except requests.RequestException as exc:
            raise StateError(f"cannot reach splunkd at {self.base}: {type(exc).__name__}") from None
        status = response.status_code
        if status in (401, 403):
            raise StateError(
                f"splunkd refused access to KV store collection {self.collection} (HTTP {status})"
            )
        if status == 404 and not path:
            raise StateError(
                f"KV store collection {self.collection} does not exist "
                "(is the add-on's collections.conf installed?)"
            )
        if status >= 500:
            raise StateError(f"KV store collection {self.collection}: splunkd answered HTTP {status}")
        try:
            body = loads(response.content) if response.content else None
        except ValueError:
            raise StateError(
                f"KV store collection {self.collection}: splunkd answered HTTP {status} with no JSON"
            ) from None
        return status, body

    def query(self, query: Dict[str, Any], **params: Any) -> List[Dict[str, Any]]:
        status, body = self.call("GET", params={"query": dumps(query).decode(), **params})
        if status != 200 or not isinstance(body, list):
            raise StateError(
                f"KV store collection {self.collection}: unexpected answer to a query (HTTP {status})"
            )
        return [r for r in body if isinstance(r, dict)]

    def insert(self, record: Dict[str, Any]) -> bool:
        """True if inserted, False if the ``_key`` exists already."""
        status, _ = self.call("POST", data=dumps(record), headers={"Content-Type": "application/json"})
        if status == 409:
            return False
        if status not in (200, 201):
            raise StateError(f"KV store collection {self.collection}: insert answered HTTP {status}")
        return True

    def delete_where(self, query: Dict[str, Any]) -> None:
        status, _ = self.call("DELETE", params={"query": dumps(query).decode()})
        if status not in (200, 204):
            raise StateError(f"KV store collection {self.collection}: delete answered HTTP {status}")


def _record_key(scope: str, slot: str, seq: int) -> str:
    digest = hashlib.sha256(f"{scope}\0{slot}".encode()).hexdigest()[:40]
    return f"{digest}-{seq:012d}"


class RecordSlot:
    """One named document of a scope, as a chain of records (see the module doc)."""

    def __init__(self, splunkd: Splunkd, scope: str, name: str, location: str, grace_s: float) -> None:
        self._splunkd = splunkd
        self._where = {"scope": scope, "slot": name}
        self.location = location
        self._grace_s = grace_s

    def _latest(self) -> Optional[Dict[str, Any]]:
        found = self._splunkd.query(self._where, sort="seq:-1", limit=1)
        return found[0] if found else None

    def read(self) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
        latest = self._latest()
        if latest is None or latest.get("deleted"):
            return None, None
        try:
            doc = loads(str(latest["doc"]))
            seq = int(latest["seq"])
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"state record {self.location} is unreadable ({exc}); {_FIX}") from None
        if not isinstance(doc, dict):
            raise StateError(f"state record {self.location} does not hold a JSON object; {_FIX}")
        return doc, str(seq)

    def put(self, doc: Dict[str, Any], expected: Optional[str]) -> str:
        return str(self._write(dumps(doc).decode(), expected, deleted=False))

    def delete(self, expected: str) -> None:
        self._write("", expected, deleted=True)

    def remove(self) -> None:
        """Unconditional delete (a stream reset): a tombstone over whatever is there."""
        while True:
            latest = self._latest()
            if latest is None or latest.get("deleted"):
                return
            try:
                self._write("", str(latest["seq"]), deleted=True)
                return
            except ConflictError:
                continue

    def _write(self, text: str, expected: Optional[str], deleted: bool) -> int:
        latest = self._latest()
        current = int(latest["seq"]) if latest else 0
        live = latest is not None and not latest.get("deleted")
        if (str(current) if live else None) != expected:
            raise self._conflict(expected)
        seq = current + 1
        record = {**self._where, "_key": _record_key(self._where["scope"], self._where["slot"], seq)}
        now = time.time()
        if not self._splunkd.insert({**record, "seq": seq, "doc": text, "deleted": deleted, "written": now}):
            raise self._conflict(expected)
        self._splunkd.delete_where(
            {**self._where, "seq": {"$lt": seq}, "written": {"$lt": now - self._grace_s}}
        )
        return seq

    def _conflict(self, expected: Optional[str]) -> ConflictError:
        return ConflictError(
            f"{self.location} was changed by another writer (expected version {expected or 'none'})"
        )


class KVStore:
    """A ``StateStore`` over one scope of a KV store collection."""

    def __init__(
        self,
        splunkd: Splunkd,
        scope: str,
        clock: Callable[[], float] = time.time,
        grace_s: float = GRACE_S,
        partition: str = "",
    ) -> None:
        """``partition`` splits a scope (the add-on: one per tenant an input has pointed at), while
        ``drop`` still removes the whole scope."""
        if not scope:
            raise ValueError("a KV store state scope must not be empty")
        self._splunkd = splunkd
        self._scope = scope
        self._clock = clock
        self._grace_s = grace_s
        self._prefix = f"{quote(partition, safe='')}/" if partition else ""
        netloc = urlsplit(splunkd.base).netloc
        self.location = f"kvstore://{netloc}/{splunkd.collection}/{quote(scope, safe='')}"
        self.location += f"/{self._prefix}" if partition else ""

    def __repr__(self) -> str:
        return f"KVStore({self.location!r})"

    def load(self, key: str) -> Loaded:
        return load_stream(self._stream(key), key)

    def commit(self, key: str, state: StreamState, version: Optional[str]) -> str:
        return commit_stream(self._stream(key), key, state, version)

    def keys(self) -> list[str]:
        newest: Dict[str, Tuple[int, bool]] = {}
        skip = 0
        while True:
            page = self._splunkd.query(
                {"scope": self._scope}, fields="slot,seq,deleted", sort="_key", limit=_PAGE, skip=skip
            )
            for record in page:
                slot, seq = str(record.get("slot", "")), int(record.get("seq", 0))
                if slot.startswith(self._prefix + _STREAMS) and seq > newest.get(slot, (0, False))[0]:
                    newest[slot] = (seq, bool(record.get("deleted")))
            if len(page) < _PAGE:
                break
            skip += _PAGE
        skip_len = len(self._prefix + _STREAMS)
        return sorted(unquote(slot[skip_len:]) for slot, (_, gone) in newest.items() if not gone)

    def delete(self, key: str) -> None:
        self._stream(key).remove()

    def drop(self) -> None:
        """Remove every record of this scope (the input it belonged to was deleted)."""
        self._splunkd.delete_where({"scope": self._scope})

    def acquire_lease(self, owner: str, ttl_seconds: int) -> SlotLease:
        return acquire(self.slot(_LEASE), owner, ttl_seconds, self._clock)

    def slot(self, name: str) -> RecordSlot:
        return RecordSlot(
            self._splunkd,
            self._scope,
            self._prefix + name,
            f"{self.location.rstrip('/')}/{quote(name, safe='')}",
            self._grace_s,
        )

    def _stream(self, key: str) -> RecordSlot:
        if not key:
            raise ValueError("a stream key must not be empty")
        return self.slot(_STREAMS + quote(key, safe="@"))


def open_kvstore(
    location: str, token: Optional[str] = None, clock: Callable[[], float] = time.time
) -> KVStore:
    """``kvstore://host:port/<app>/<collection>/<scope>`` over https; token: a splunkd session key."""
    netloc, app, collection, scope = kvstore_parts(location)
    if not token:
        raise ValueError(
            f"state location {location!r}: the KV store needs a splunkd token in {TOKEN_VARIABLE}"
        )
    return KVStore(Splunkd(f"https://{netloc}", app, collection, token), scope, clock)


def open_at(place: StorePlace) -> KVStore:
    return open_kvstore(place.location, place.splunk_token)
