"""A real rsyslogd on loopback for the syslog and RELP sink tests: syslog inputs (plain TCP, TLS) or RELP
ones (imrelp, plain and TLS), each writing every record it receives to its own file, one JSON object
per line (so a CR, LF or NUL inside a record cannot blur the line boundaries we count).

Runs unprivileged-style: its own config, work directory and pid file in a temp directory, in the
foreground (``-n``), ports chosen by rsyslog itself (``port="0"`` + ``listenPortFileName``) or, for
RELP, free ones picked just before. The TLS inputs use a CA and a server certificate (``localhost``,
``127.0.0.1``) made at start-up with the ``cryptography`` package. Install rsyslog with
``tests/syslog/install-rsyslog.sh``.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

INPUTS = ("tcp", "tls")
MAX_MESSAGE = 262144
_WAIT_SECONDS = 20.0  # a deadline for rsyslog to start or write, never a measurement

_GLOBAL = """
global(
  workDirectory="{dir}/work"
  maxMessageSize="{max_message}"
  parser.escapeControlCharactersOnReceive="off"
  parser.dropTrailingLFOnReception="off"
  defaultNetstreamDriverCAFile="{dir}/ca.pem"
  defaultNetstreamDriverCertFile="{dir}/server.pem"
  defaultNetstreamDriverKeyFile="{dir}/server-key.pem"
)
template(name="record" type="list") {{
  constant(value="{{")
  property(name="pri" format="jsonf" outname="pri")
  constant(value=",")
  property(name="timereported" dateFormat="rfc3339" format="jsonf" outname="timestamp")
  constant(value=",")
  property(name="hostname" format="jsonf" outname="hostname")
  constant(value=",")
  property(name="app-name" format="jsonf" outname="app_name")
  constant(value=",")
  property(name="procid" format="jsonf" outname="procid")
  constant(value=",")
  property(name="msgid" format="jsonf" outname="msgid")
  constant(value=",")
  property(name="structured-data" format="jsonf" outname="sd")
  constant(value=",")
  property(name="msg" format="jsonf" outname="msg")
  constant(value="}}\\n")
}}
"""
_IMTCP = 'module(load="imtcp" maxSessions="50")\n'
# imrelp answers a message once it is queued: a direct queue runs the output first, so every answered
# message is in the file even when rsyslogd is killed. Its GnuTLS driver insists on a client
# certificate, which the sink does not present; the OpenSSL one checks only the server's.
_IMRELP = 'main_queue(queue.type="direct")\nmodule(load="imrelp" tls.tlslib="openssl")\n'
_INPUT = {
    "tcp": 'input(type="imtcp" port="{port}" listenPortFileName="{dir}/tcp.port" ruleset="tcp")',
    "tls": 'input(type="imtcp" port="{port}" listenPortFileName="{dir}/tls.port" ruleset="tls"\n'
    '      streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="anon")',
    "relp": 'input(type="imrelp" port="{port}" ruleset="relp")',
    "relptls": 'input(type="imrelp" port="{port}" ruleset="relptls" tls="on" tls.caCert="{dir}/ca.pem"\n'
    '      tls.myCert="{dir}/server.pem" tls.myPrivKey="{dir}/server-key.pem")',
}
_RULESET = 'ruleset(name="{name}") {{ action(type="omfile" file="{dir}/{name}.jsonl" template="record") }}\n'
_SCHEMES = {"tcp": "syslog+tcp", "tls": "syslog+tls", "relp": "relp+tcp", "relptls": "relp+tls"}


def _config(directory: Path, ports: Dict[str, int], inputs: Tuple[str, ...]) -> str:
    config = _GLOBAL.format(dir=directory, max_message=MAX_MESSAGE)
    if {"tcp", "tls"} & set(inputs):
        config += _IMTCP
    if {"relp", "relptls"} & set(inputs):
        config += _IMRELP
    for name in inputs:
        config += _RULESET.format(name=name, dir=directory)
        config += _INPUT[name].format(port=ports.get(name, 0), dir=directory) + "\n"
    return config


def _free_port() -> int:
    """A loopback port free now, for imrelp, which cannot tell which port it chose itself."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def make_certificates(directory: Path) -> None:
    """ca.pem, server.pem and server-key.pem: a throwaway CA and a localhost certificate it signed."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "forwarder test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    (directory / "ca.pem").write_bytes(ca.public_bytes(pem))
    (directory / "server.pem").write_bytes(cert.public_bytes(pem))
    (directory / "server-key.pem").write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


def _wait_for(check, what: str, process: Optional[subprocess.Popen] = None):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + _WAIT_SECONDS
    while True:
        result = check()
        if result:
            return result
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"rsyslogd exited with {process.returncode} while waiting for {what}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"rsyslogd: no {what} after {_WAIT_SECONDS:g} s")
        time.sleep(0.02)


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


class Rsyslog:
    """One rsyslogd with the given ``inputs`` (``tcp``, ``tls``: syslog; ``relp``, ``relptls``: RELP).
    ``ports`` maps each input to its loopback port."""

    def __init__(self, directory: Path, inputs: Tuple[str, ...] = INPUTS) -> None:
        self.dir = directory
        self.inputs = inputs
        (directory / "work").mkdir(parents=True, exist_ok=True)
        make_certificates(directory)
        self.ca_bundle = str(directory / "ca.pem")
        self.ports: Dict[str, int] = {name: _free_port() for name in inputs if name.startswith("relp")}
        self._process: Optional[subprocess.Popen[bytes]] = None

    def start(self) -> None:
        """Start on the ports of the previous run, or on free ones chosen by rsyslog the first time."""
        binary = shutil.which("rsyslogd") or "/usr/sbin/rsyslogd"
        for name in self.inputs:
            (self.dir / f"{name}.port").unlink(missing_ok=True)
        (self.dir / "rsyslog.conf").write_text(_config(self.dir, self.ports, self.inputs), encoding="utf-8")
        log = open(self.dir / "rsyslogd.log", "ab")  # noqa: SIM115 - kept open for the process
        self._process = subprocess.Popen(
            [binary, "-n", "-f", str(self.dir / "rsyslog.conf"), "-i", str(self.dir / "rsyslogd.pid")],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        for name in self.inputs:
            if name in self.ports:  # a restart on known ports: rsyslog writes no port file then
                port = self.ports[name]
                _wait_for(lambda p=port: _accepts(p), f"{name} listener", self._process)
            else:
                path = self.dir / f"{name}.port"
                text = _wait_for(
                    lambda p=path: p.exists() and p.read_text().strip(), f"{name} port", self._process
                )
                self.ports[name] = int(text)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=_WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def kill(self) -> None:
        """SIGKILL: no chance to flush or say goodbye."""
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()

    def uri(self, name: str) -> str:
        return f"{_SCHEMES[name]}://localhost:{self.ports[name]}"

    def records(self, name: str, count: int) -> List[dict]:
        """The first ``count`` records the input wrote, waiting (up to a deadline) until they are there."""

        def ready() -> Optional[List[dict]]:
            records = self.stored(name)
            return records if len(records) >= count else None

        return _wait_for(ready, f"{count} records in {name}.jsonl", self._process)[:count]  # type: ignore[no-any-return]

    def stored(self, name: str) -> List[dict]:
        """Every record the input wrote so far (a line without its newline is still being written)."""
        path = self.dir / f"{name}.jsonl"
        lines = path.read_bytes().split(b"\n")[:-1] if path.exists() else []
        return [json.loads(line) for line in lines]

    def log(self) -> str:
        path = self.dir / "rsyslogd.log"
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
