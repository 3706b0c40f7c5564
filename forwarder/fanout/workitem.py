"""A work item: one shard of one tenant's streams, as it travels in an SQS message body.

The item carries the tenant's whole plan (its user and domain names, compressed) besides the
shard's stream keys: a worker builds its streams from it exactly as a single run would, names spelled
as listed, without listing the users again. A message body is at most 256 KB: some 30,000 users
compressed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import zlib
from dataclasses import dataclass, replace
from typing import Any, List, Optional, Sequence, Tuple

from ..logs import quoted
from ..streams import Stream, plan_streams

SCHEMA = 1
MAX_BODY = 256 * 1024


def _pack(names: Sequence[str]) -> str:
    return base64.b64encode(zlib.compress("\n".join(names).encode("utf-8"), 9)).decode("ascii")


def _unpack(text: Any) -> Tuple[str, ...]:
    if not isinstance(text, str):
        raise ValueError("a name list is not text")
    data = zlib.decompress(base64.b64decode(text.encode("ascii"), validate=True)).decode("utf-8")
    return tuple(n for n in data.split("\n") if n)


@dataclass(frozen=True)
class WorkItem:
    tenant: str  # also the SQS message group: one worker per tenant at a time
    cycle: str  # the planner run that made it
    shard: int
    streams: Tuple[str, ...]  # the stream keys to run, in order
    users: Tuple[str, ...]  # the tenant's whole plan
    domains: Tuple[str, ...]
    part: int = 0  # 0 as planned; n for the n-th re-queue of what a worker did not start

    @property
    def id(self) -> str:
        """Stable over redeliveries and re-sends: the FIFO deduplication id and the lease owner."""
        text = f"{self.tenant}\n{self.cycle}\n{self.shard}\n{self.part}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]

    def rest(self, left: Sequence[str]) -> WorkItem:
        """The item for the streams a worker did not start: same tenant, shard and cycle."""
        return replace(self, streams=tuple(left), part=self.part + 1)

    def plan(self, object_types: Sequence[str], filters: Sequence[str]) -> Tuple[List[Stream], List[Stream]]:
        """(every stream of the tenant, the shard's streams in order) under the tenant's settings.
        A key no longer in the plan (settings changed since) is left out."""
        full = plan_streams(object_types, self.users, self.domains, filters)
        by_key = {s.key: s for s in full}
        return full, [by_key[k] for k in self.streams if k in by_key]

    def to_body(self) -> str:
        body = json.dumps(
            {
                "schema": SCHEMA,
                "tenant": self.tenant,
                "cycle": self.cycle,
                "shard": self.shard,
                "part": self.part,
                "streams": list(self.streams),
                "users": _pack(self.users),
                "domains": _pack(self.domains),
            },
            separators=(",", ":"),
            ensure_ascii=False,
        )
        if len(body.encode("utf-8")) > MAX_BODY:
            raise ValueError(
                f"tenant {quoted(self.tenant)}: a work item is over SQS's 256 KB (too many users for one "
                "message; use smaller shards or name fewer users)"
            )
        return body

    @classmethod
    def from_body(cls, body: str) -> WorkItem:
        """ValueError naming what is wrong with a body that is not a work item of this schema."""
        try:
            doc = json.loads(body)
        except ValueError:
            raise ValueError("the message is not JSON") from None
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            raise ValueError(f"the message is not a schema-{SCHEMA} work item")
        try:
            streams = doc["streams"]
            if not isinstance(streams, list) or not all(isinstance(s, str) for s in streams):
                raise ValueError("streams is not a list of keys")
            tenant, cycle, shard, part = doc["tenant"], doc["cycle"], doc["shard"], doc["part"]
            if not isinstance(tenant, str) or not isinstance(cycle, str):
                raise ValueError("tenant and cycle must be text")
            if not isinstance(shard, int) or not isinstance(part, int):
                raise ValueError("shard and part must be numbers")
            return cls(
                tenant, cycle, shard, tuple(streams), _unpack(doc["users"]), _unpack(doc["domains"]), part
            )
        except KeyError as exc:
            raise ValueError(f"the work item has no {quoted(exc.args[0])}") from None
        except (zlib.error, UnicodeDecodeError, binascii.Error):
            raise ValueError("the work item's name lists are corrupt") from None


def shard_plan(
    tenant: str, cycle: str, plan: Sequence[Stream], size: int, order: Optional[Sequence[Stream]] = None
) -> List[WorkItem]:
    """The streams of ``order`` (the scheduler's choice; default: the whole plan) in shards of at
    most ``size``, each with the whole plan's names."""
    if size < 1:
        raise ValueError(f"a shard holds at least one stream, not {size}")
    users = tuple(s.name for s in plan if s.object_type == "user")
    domains = tuple(s.name for s in plan if s.object_type == "domain")
    users, domains = tuple(dict.fromkeys(users)), tuple(dict.fromkeys(domains))
    keys = [s.key for s in (plan if order is None else order)]
    return [
        WorkItem(tenant, cycle, i // size, tuple(keys[i : i + size]), users, domains)
        for i in range(0, len(keys), size)
    ]
