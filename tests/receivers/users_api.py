"""A loopback platform API whose users endpoint lies about paging: ``endless`` answers a full page
of new users at every offset, ``cycle`` answers its two pages in turn whatever the offset. Its token
endpoint works; audits answer an empty list. Counts the requests of each path."""

from __future__ import annotations

import json
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List
from urllib.parse import parse_qs, urlsplit

from tests.receivers.loopback import LoopbackServer


class UsersApi(LoopbackServer):
    name = "users-api"

    def __init__(self, kind: str) -> None:
        super().__init__(_Handler, ThreadingHTTPServer)
        self.kind = kind
        self.requests: Counter[str] = Counter()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def users(self, limit: int, offset: int) -> List[Dict[str, Any]]:
        if self.kind == "cycle":
            offset = (offset // limit % 2) * limit
        return [
            {"email": f"user{n}@example.com", "full_name": f"User {n}"} for n in range(offset, offset + limit)
        ]


class _Handler(BaseHTTPRequestHandler):
    server: Any

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._count()
        self._reply({"access_token": "users-api-token", "token_type": "Bearer", "expires_in": 14400})

    def do_GET(self) -> None:
        path = self._count()
        query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
        if path.endswith("/users"):
            owner: UsersApi = self.server.owner
            users = owner.users(int(query.get("limit", 25)), int(query.get("offset", 0)))
            self._reply({"status": "ok", "users": users, "count": len(users)})
        else:
            self._reply({"status": "ok", "audits": [], "count": 0})

    def _count(self) -> str:
        path = urlsplit(self.path).path
        self.server.owner.requests[path] += 1
        return path

    def _reply(self, payload: Any) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
