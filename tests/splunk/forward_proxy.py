"""A loopback HTTP forward proxy (absolute-form requests, no CONNECT) that logs what it relays."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List

import requests


class ForwardProxy:
    def __init__(self) -> None:
        self.seen: List[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ForwardProxy:
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _relay(self) -> None:
                proxy.seen.append(f"{self.command} {self.path}")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() not in ("host", "proxy-connection")
                }
                with requests.Session() as session:
                    session.trust_env = False
                    answer = session.request(self.command, self.path, data=body, headers=headers, timeout=30)
                self.send_response(answer.status_code)
                for key, value in answer.headers.items():
                    if key.lower() not in (
                        "content-length",
                        "transfer-encoding",
                        "connection",
                        "content-encoding",
                    ):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = _relay

            def log_message(self, *args: object) -> None:  # quiet
                pass

        return Handler
