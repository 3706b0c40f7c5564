"""The simulator's HTTP plumbing: a threading server on loopback, its life cycle on a background
thread, and writing each reply whole or broken on the wire (trickled, or cut mid-body).

It never logs: request lines and headers carry tokens, and the standard library would write them to
stderr.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, NamedTuple, Optional, Protocol, Set, Tuple

from .messages import Reply


class Outgoing(NamedTuple):
    reply: Reply
    wire: str  # "" to send it whole, or one of faults.BREAK_KINDS
    delay: float  # seconds to wait before answering
    trickle_pause: float  # seconds between the bytes of a trickled reply


class Service(Protocol):
    def respond(
        self, method: str, target: str, header: Callable[[str], Optional[str]], body: bytes
    ) -> Outgoing: ...

    def trickle_ended(self, sent: int, total: int) -> None: ...


class Listener:
    """One service served over HTTP from a background thread, until ``stop``."""

    def __init__(self) -> None:
        self._server: Optional[_Server] = None
        self._thread: Optional[threading.Thread] = None

    def start(self, service: Service, host: str, port: int) -> str:
        """Listen on ``host:port`` (0 picks a free port); return the base URL."""
        if self._server is not None:
            raise RuntimeError("the simulator is already running")
        self._server = _Server((host, port), service)
        # A short poll interval: stop() waits for the serving loop to notice, up to one interval.
        serve = functools.partial(self._server.serve_forever, poll_interval=0.05)
        self._thread = threading.Thread(target=serve, name="api-simulator", daemon=True)
        self._thread.start()
        return f"http://{host}:{self._server.server_address[1]}"

    @property
    def running(self) -> bool:
        return self._server is not None

    def stop(self) -> None:
        server, thread, self._server, self._thread = self._server, self._thread, None, None
        if server is not None:
            server.stopped.set()
            server.shutdown()
            server.server_close()
            server.close_connections()
        if thread is not None:
            thread.join()


class _Server(ThreadingHTTPServer):
    """Tracks open connections so that stop() also ends keep-alive ones: a stopped server must not answer."""

    daemon_threads = True

    def __init__(self, address: Tuple[str, int], service: Service) -> None:
        self.service = service
        self.stopped = threading.Event()  # set by stop(): a trickling reply gives up
        self._open: Set[socket.socket] = set()
        # Guards the open connections: handler threads add and drop theirs while stop() closes them.
        self._open_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._open_lock:
            for conn in self._open:
                with contextlib.suppress(OSError):  # the peer may have gone already
                    conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True  # else every reply waits ~40 ms for the client's delayed ACK
    protocol_version = "HTTP/1.1"  # keep-alive, like the real service behind its load balancer
    timeout = 30  # drop idle connections instead of keeping a thread per client forever
    server: _Server

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        out = self.server.service.respond(method, self.path, self.headers.get, body)
        reply, payload = out.reply, out.reply.body
        if out.delay > 0:
            time.sleep(out.delay)
        if out.wire == "trickle-headers":
            head = f"HTTP/1.1 {reply.status} X\r\nContent-Length: {len(payload)}\r\n\r\n".encode("ascii")
            self._trickle(head + payload, out.trickle_pause)
            return
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if out.wire == "":
            self.wfile.write(payload)
        elif out.wire == "cut":
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        else:
            self._trickle(payload, out.trickle_pause)

    def _trickle(self, payload: bytes, pause: float) -> None:
        """One byte per ``pause``: each read returns in time, the response never ends in time."""
        sent = 0
        try:
            for at in range(len(payload)):
                self.wfile.write(payload[at : at + 1])
                self.wfile.flush()
                sent += 1
                if self.server.stopped.is_set():  # stopped: give up
                    return
                time.sleep(pause)
        except OSError:  # the client hung up: that is the point
            pass
        finally:
            self.server.service.trickle_ended(sent, len(payload))

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: the default writes every request line to stderr."""
