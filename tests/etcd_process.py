"""A real etcd (Debian's etcd-server, `.ci/run` installs it) for the coordinator's tests: one member on
free loopback ports (client, peer, metrics: 127.0.0.1 only), its data in the test's directory, quick
elections, restartable on the same ports and data, killed after the test.

Without an etcd binary the tests that need one skip, saying so; in CI (`CI=true`) they fail instead:
a CI machine without etcd has lost its install step, and skipping would hide that.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import pytest
from tls_certs import free_port

STARTUP_TIMEOUT_S = 20.0
START_TRIES = 3  # a free port taken by someone else between picking and binding: pick again
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy


@dataclass(frozen=True)
class EtcdTls:
    """etcd serving TLS on its client port: its certificate and key, and the CA it was issued by; with
    `client_ca`, etcd takes only clients with a certificate that CA issued (--client-cert-auth)."""

    ca: Path
    cert: Path
    key: Path
    client_ca: Path | None = None

    def args(self) -> list[str]:
        args = ["--cert-file", str(self.cert), "--key-file", str(self.key)]
        return args + (["--client-cert-auth", "--trusted-ca-file", str(self.client_ca)] if self.client_ca else [])


def etcd_binary() -> str:
    """etcd's path; skips the test (fails it in CI) if there is none."""
    found = shutil.which("etcd")
    if found:
        return found
    reason = "etcd is not installed (apt-get install etcd-server)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}: CI must have it (.ci/run installs it)")
    pytest.skip(reason)


class EtcdProcess:
    def __init__(self, data_dir: Path, tls: EtcdTls | None = None) -> None:
        self.binary = etcd_binary()
        self.data_dir = data_dir
        self.tls = tls
        self.ports = (0, 0, 0)  # client, peer, metrics
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: deque[str] = deque(maxlen=200)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.ports[0]}"

    @property
    def url(self) -> str:
        """What `--coordinator` takes."""
        return f"etcd://{self.endpoint}"

    def start(self) -> EtcdProcess:
        """Start etcd (on the ports it had, if it ran before) and wait until it answers /health."""
        for _ in range(START_TRIES if not self.ports[0] else 1):
            if not self.ports[0]:
                self.ports = (free_port(), free_port(), free_port())
            if self._started():
                return self
            self.ports = (0, 0, 0)
        raise RuntimeError("etcd did not start:\n" + "\n".join(self.log))

    def _started(self) -> bool:
        peer, metrics = (f"http://127.0.0.1:{p}" for p in self.ports[1:])
        client = f"{'https' if self.tls else 'http'}://127.0.0.1:{self.ports[0]}"
        cmd = [self.binary, "--name", "rockmq-test", "--data-dir", str(self.data_dir),
               "--listen-client-urls", client, "--advertise-client-urls", client,
               "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
               "--initial-cluster", f"rockmq-test={peer}", "--listen-metrics-urls", metrics,
               "--heartbeat-interval", "50", "--election-timeout", "500", "--log-level", "warn",
               *(self.tls.args() if self.tls else [])]
        log = self.data_dir.with_suffix(".log")
        with log.open("ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline and self.proc.poll() is None:
            if self.healthy():
                return True
            time.sleep(0.05)
        self.log.extend(log.read_text(errors="replace").splitlines()[-50:])
        self.kill()
        return False

    def healthy(self) -> bool:
        """Whether etcd answers (over TLS a handshake is answer enough: with --client-cert-auth /health
        wants a client certificate)."""
        try:
            if self.tls:
                context = ssl.create_default_context(cafile=str(self.tls.ca))
                with context.wrap_socket(socket.create_connection(("127.0.0.1", self.ports[0]), 1),
                                         server_hostname="127.0.0.1"):
                    return True
            with _DIRECT.open(f"http://{self.endpoint}/health", timeout=1) as reply:
                return b'"true"' in reply.read()
        except OSError:
            return False

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None
