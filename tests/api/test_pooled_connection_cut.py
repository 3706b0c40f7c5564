"""A call cut at its deadline after its answer was read whole never shuts down the socket of the
connection it handed back to the pool: with a session shared by threads, another call may already be
reading its own answer on it."""

from __future__ import annotations

import http.server
import threading
from typing import List

from forwarder import deadline
from forwarder import http as forwarder_http
from tests.receivers.loopback import LoopbackServer

SLOW_BODY = b'{"slow":true}'


class KeepAlive(LoopbackServer):
    """HTTP/1.1 with keep-alive: ``/fast`` answers at once; ``/slow`` sends its headers, then its body
    once ``release`` is set. ``peers`` records the client's address of every request."""

    name = "keep-alive"

    def __init__(self) -> None:
        self.peers: List[object] = []
        self.release = threading.Event()
        super().__init__(_Handler, http.server.ThreadingHTTPServer)  # type: ignore[arg-type]


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        server: KeepAlive = self.server.owner  # type: ignore[attr-defined]
        server.peers.append(self.client_address)
        body = SLOW_BODY if self.path == "/slow" else b"{}"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.flush()
        if self.path == "/slow":
            server.release.wait(10)
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_cut_after_the_answer_spares_the_pooled_connection_another_call_took():
    with KeepAlive() as server:
        url = f"http://127.0.0.1:{server.port}"
        session = forwarder_http.new_session()
        answered, cut = threading.Event(), threading.Event()
        calls: List[deadline._Call] = []

        def first_call() -> None:
            with deadline.watching("GET /fast", 1.0) as call:
                calls.append(call)
                session.get(f"{url}/fast", timeout=(5, 5), stream=True).content  # noqa: B018
                answered.set()  # read whole: the connection is back in the pool
                if call.cut.wait(10):  # the deadline passes while this call's block is not over
                    cut.set()

        worker = threading.Thread(target=first_call, daemon=True)
        worker.start()
        assert answered.wait(10)
        slow: List[bytes] = []

        def second_call() -> None:
            slow.append(
                deadline.request(session, "GET", f"{url}/slow", timeout=(5, 5), deadline_s=10).content
            )

        reader = threading.Thread(target=second_call, daemon=True)
        reader.start()
        assert cut.wait(10)  # the first call was cut while the second waits for its body
        server.release.set()
        reader.join(10)
        worker.join(10)
        assert server.peers[0] == server.peers[1]  # one connection: the second call took the first's
        assert slow == [SLOW_BODY]
