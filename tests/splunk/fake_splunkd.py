"""A loopback stand-in for the two splunkd REST endpoints the add-on calls, in JSON output mode.

``GET /servicesNS/nobody/<app>/storage/passwords`` lists ``passwords`` (realm, username,
clear_password); ``GET /servicesNS/nobody/<app>/data/inputs/<scheme>/<name>`` answers 200 for a name
in ``inputs`` and 404 otherwise. Every request must carry ``Authorization: Splunk <session key>``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Set, Tuple
from urllib.parse import unquote, urlsplit

SESSION_KEY = "fake-session-key-0123456789"


class FakeSplunkd:
    def __init__(self, app: str) -> None:
        self.app = app
        self.passwords: Dict[Tuple[str, str], str] = {}
        self.inputs: Set[str] = set()
        self.requests: List[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeSplunkd:
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, path: str) -> Tuple[int, object]:
        prefix = f"/servicesNS/nobody/{self.app}/"
        if not path.startswith(prefix):
            return 404, {"messages": [{"type": "ERROR", "text": "Not Found"}]}
        rest = path[len(prefix) :]
        if rest == "storage/passwords":
            entries = [
                {
                    "name": f"{realm}:{user}:",
                    "content": {"realm": realm, "username": user, "clear_password": secret},
                }
                for (realm, user), secret in self.passwords.items()
            ]
            return 200, {"entry": entries}
        kind, _, name = rest.rpartition("/")
        if kind.startswith("data/inputs/") and unquote(name) in self.inputs:
            return 200, {"entry": [{"name": unquote(name), "content": {}}]}
        return 404, {"messages": [{"type": "ERROR", "text": "Not Found"}]}

    def _handler(self) -> type:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                fake.requests.append(path)
                if self.headers.get("Authorization") != f"Splunk {SESSION_KEY}":
                    status, body = (
                        401,
                        {"messages": [{"type": "WARN", "text": "call not properly authenticated"}]},
                    )
                else:
                    status, body = fake._answer(path)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:  # quiet
                pass

        return Handler
