"""Start real `rockmq serve` / `rockmq namesrv` processes on ephemeral loopback ports.

The server binds port 0 and writes the address it got to its `--ready-file`, which we read
back, so parallel runs never race for a port and no test depends on the wording of a log line.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections import deque
from pathlib import Path

# A broker run with --auth (the `auth_broker` fixture): its first super user.
AUTH_ADMIN, AUTH_SECRET = "admin", "s3cret-admin"
AUTH_ARGS = ("--auth", "--admin-user", AUTH_ADMIN, "--admin-secret", AUTH_SECRET)


class ServerProcess:
    """A rockmq server subprocess bound to 127.0.0.1; restartable on the same port."""

    def __init__(self, *extra_args: str, env: dict[str, str] | None = None, launcher: tuple[str, ...] = ()) -> None:
        self.extra_args = list(extra_args)
        self.env = env or {}
        self.launcher = launcher  # a command the server runs under (e.g. nsenter into a mount namespace)
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None
        self.log: deque[str] = deque(maxlen=500)
        self.lines_logged = 0  # all lines, also those `log` no longer holds
        self.tracebacks = 0  # lines starting one, also those `log` no longer holds
        ready_dir = tempfile.mkdtemp(prefix="rockmq-ready-")
        weakref.finalize(self, shutil.rmtree, ready_dir, True)
        self.ready_file = Path(ready_dir) / "ready"

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self, timeout: float = 30.0) -> ServerProcess:
        """Start the server and wait for its ready file (`--ready-file`: HOST:PORT once it accepts connections)."""
        self.ready_file.unlink(missing_ok=True)
        cmd = [*self.launcher, sys.executable, "-m", "rockmq", *self.command(), "--ready-file", str(self.ready_file)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        self.proc = proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                self.log.append(line.rstrip())
                self.lines_logged += 1
                self.tracebacks += line.startswith("Traceback")

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not self.ready_file.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"rockmq {self.command()[0]} did not start:\n" + "\n".join(self.log))
            time.sleep(0.02)
        self.port = int(self.ready_file.read_text().rsplit(":", 1)[1])
        return self

    def stop(self, timeout: float = 20.0) -> None:
        """Graceful stop (SIGTERM), as an operator would."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill(self) -> None:
        """kill -9: no chance to flush anything."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def restart(self) -> ServerProcess:
        self.stop()
        return self.start()


class BrokerProcess(ServerProcess):
    """`rockmq serve` on a data dir."""

    def __init__(self, data_dir: Path, *extra_args: str, env: dict[str, str] | None = None,
                 launcher: tuple[str, ...] = ()) -> None:
        super().__init__(*extra_args, env=env, launcher=launcher)
        self.data_dir = Path(data_dir)

    def command(self) -> list[str]:
        return ["serve", "--host", "127.0.0.1", "--port", str(self.port), "--data-dir", str(self.data_dir), *self.extra_args]

    def cli(self, *args: str, check: bool = False, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run `rockmq <args> --endpoint <this broker>` and return the finished process."""
        cmd = [sys.executable, "-m", "rockmq", *args, "--endpoint", self.endpoint]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=check)


class NameServerProcess(ServerProcess):
    """`rockmq namesrv`."""

    def command(self) -> list[str]:
        return ["namesrv", "--host", "127.0.0.1", "--port", str(self.port), *self.extra_args]
