"""Ceilings measured in the same run: what no broker could beat on this machine.

- null: rockmq's gRPC services answering OK at once (rockmq.bench.null_broker), driven by the very
  load of the scenario it is the ceiling of (same generator, batch, concurrency, processes);
- null_fsync: the same plus one write + fsync per request, beside the durable scenarios (produce,
  and the single-send latency ones: a durable send cannot answer sooner than its fsync);
- stream: the null broker's ReceiveMessage stream of `--batch` prepared frames, received and
  never acked: what streaming frames costs in grpc.aio;
- rocksdb: synced RocksDB WriteBatches of `--batch` 1 KiB values (rockmq.bench.rocks_ceiling).
Servers are subprocesses on 127.0.0.1 port 0, handing over their address by a ready file.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rockmq.bench.options import Options
from rockmq.bench.report import Figures, combined, ratios
from rockmq.bench.scenarios import run_scenario

READY_TIMEOUT = 60.0  # the server imports grpc and the broker's modules first; slow on a busy machine
DURABLE = ("produce-batch", "produce-single", "latency", "send-sync")  # figures also set beside null_fsync


class CeilingError(Exception):
    """A ceiling server did not start or a ceiling measurement failed."""


@dataclass(frozen=True)
class Server:
    endpoint: str
    pid: int


@contextlib.contextmanager
def null_broker(size: int, fsync: bool, where: str | None) -> Iterator[Server]:
    """A null broker subprocess (its fsync file in a new directory under `where`), stopped
    (SIGTERM, then SIGKILL) on leaving."""
    with tempfile.TemporaryDirectory(prefix="rockmq-ceiling-", dir=where) as work:
        ready = Path(work) / "ready"
        command = [sys.executable, "-m", "rockmq.bench.null_broker", "--size", str(size), "--ready-file", str(ready)]
        if fsync:
            command += ["--fsync-file", str(Path(work) / "wal")]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + READY_TIMEOUT
            while not ready.exists():
                if process.poll() is not None:
                    error = process.stderr.read().decode(errors="replace").strip() if process.stderr else ""
                    raise CeilingError(f"the null broker exited with {process.returncode}: {error[-500:]}")
                if time.monotonic() > deadline:
                    raise CeilingError(f"the null broker did not start within {READY_TIMEOUT:.0f} s")
                time.sleep(0.05)
            yield Server(ready.read_text().strip(), process.pid)
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stderr:
                process.stderr.close()


def storage(opts: Options) -> Figures:
    """The RocksDB ceiling, in a process of its own so that its CPU time is its own."""
    command = [sys.executable, "-m", "rockmq.bench.rocks_ceiling", "--batch", str(opts.batch), "--size", str(opts.size),
               "--duration", str(opts.duration), *(("--dir", opts.ceiling_dir) if opts.ceiling_dir else ())]
    done = subprocess.run(command, capture_output=True, text=True, timeout=opts.duration + READY_TIMEOUT, check=False)
    if done.returncode != 0:
        raise CeilingError(f"the RocksDB ceiling failed: {done.stderr.strip()[-500:]}")
    figures: Figures = json.loads(done.stdout)
    return figures


class Ceilings:
    """The null brokers of one run (started once, idle between measurements) and what they measured."""

    def __init__(self, opts: Options, stack: contextlib.ExitStack) -> None:
        self.opts = opts
        self.null = stack.enter_context(null_broker(opts.size, fsync=False, where=opts.ceiling_dir))
        self.null_fsync = stack.enter_context(null_broker(opts.size, fsync=True, where=opts.ceiling_dir))
        self.figures: dict[str, Any] = {"null": {}, "null_fsync": {}}

    def _against(self, server: Server, scenario: str) -> Figures:
        return run_scenario(replace(self.opts, endpoint=server.endpoint, broker_pid=server.pid), scenario, fill=False)

    def measure(self, scenario: str) -> Figures:
        """One round of the scenario's load against the null broker (and the null broker + fsync if
        durable) -> {ceiling: figures}, for `record`."""
        got = {"null": self._against(self.null, scenario)}
        if scenario in DURABLE:
            got["null_fsync"] = self._against(self.null_fsync, scenario)
        return got

    def record(self, scenario: str, rounds: list[Figures]) -> None:
        """Keep the scenario's ceilings: over its rounds, combined as the scenario's own figures are."""
        for key in rounds[0]:
            self.figures[key][scenario] = combined([r[key] for r in rounds])

    def building_blocks(self) -> None:
        """The stream and storage ceilings, which no scenario matches one to one."""
        self.figures["stream"] = self._against(self.null, "stream")
        self.figures["rocksdb"] = storage(self.opts)

    def beside(self, scenario: str, figures: Figures) -> Figures:
        """A scenario's figures with the ceilings it was measured against and its ratios to them."""
        matched = {key: self.figures[key][scenario] for key in ("null", "null_fsync") if scenario in self.figures[key]}
        if "send_batch" in figures:  # producer-own's second half, against the null broker's
            figures["send_batch"]["vs"] = {key: ratios(figures["send_batch"], c["send_batch"]) for key, c in matched.items()}
        return figures | {"ceilings": matched, "vs": {key: ratios(figures, c) for key, c in matched.items()}}
