"""Run the CLI the way a person does: in a pseudo-terminal, reading back every byte it drew."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Screenful(NamedTuple):
    code: int
    raw: str  # everything written, escape codes and carriage returns included

    @property
    def plain(self) -> str:
        return ANSI.sub("", self.raw)

    def lines(self) -> List[str]:
        """What stays on the screen: each line as its last carriage-return frame left it."""
        return [part.split("\r")[-1].rstrip() for part in self.plain.replace("\r\n", "\n").split("\n")]

    def frames(self) -> List[str]:
        """Every carriage-return frame drawn, blanking frames left out."""
        parts = self.plain.replace("\r\n", "\n").replace("\n", "\r").split("\r")
        return [p.strip() for p in parts if p.strip()]


def environment(extra: Dict[str, str], term: str = "xterm-256color") -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORWARDER_") and k != "NO_COLOR"}
    env.update({"TERM": term, "PYTHONFAULTHANDLER": "1", **extra})
    return env


def threads_of(proc: subprocess.Popen[bytes], master: int) -> str:
    """Where a process that overran is stuck: SIGABRT makes it print every thread's stack on the
    terminal (PYTHONFAULTHANDLER, set by ``environment``) before it dies."""
    proc.send_signal(signal.SIGABRT)
    dump: List[bytes] = []
    until = time.monotonic() + 5
    while time.monotonic() < until and proc.poll() is None:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                dump.append(os.read(master, 65536))
            except OSError:
                break
    proc.kill()
    proc.wait()
    return b"".join(dump).decode("utf-8", "replace")


def in_terminal(
    *args: str,
    env: Dict[str, str],
    cwd: Optional[str] = None,
    timeout: float = 120,
    terminate_on: Optional[str] = None,
    keys: Sequence[Tuple[str, bytes]] = (),
) -> Screenful:
    """``audit-forwarder ARGS`` with stdin, stdout and stderr on a 120-column pseudo-terminal; SIGTERM
    once the output shows ``terminate_on``. ``keys`` are typed in order, each once the output matches
    its regular expression: the terminal is the process's controlling one, so ``b"\x03"`` (Ctrl-C) is a SIGINT
    from the terminal, as a person's."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "forwarder", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=cwd,
        # A session of its own whose terminal is the pseudo-terminal: Ctrl-C typed there reaches it.
        start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
    )
    pending = list(keys)
    os.close(slave)
    chunks: List[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every copy of the terminal's other end is closed
                break
            if not chunk:
                break
            chunks.append(chunk)
            if pending and re.search(pending[0][0].encode(), b"".join(chunks)):
                os.write(master, pending.pop(0)[1])
            if terminate_on and terminate_on.encode() in b"".join(chunks):
                proc.send_signal(signal.SIGTERM)
                terminate_on = None
        else:
            raise AssertionError(
                f"audit-forwarder {' '.join(args)} still running after {timeout}s; its threads:\n"
                + threads_of(proc, master)
            )
        return Screenful(proc.wait(timeout=30), b"".join(chunks).decode("utf-8", "replace"))
    finally:
        os.close(master)
