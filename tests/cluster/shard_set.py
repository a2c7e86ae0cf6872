"""`rockmq serve --workers N` as a test sees it: the parent process (a BrokerProcess whose
endpoint is `--port`), its shard processes, and what each shard stores."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from broker_process import BrokerProcess
from mqwire import Conn
from waiting import wait_for

from rockmq.protocol import pb

INTERVAL_S = "0.3"  # shards register this often: a dead one drops out of routes within 3 intervals + 1 s


class ShardSet(BrokerProcess):
    def __init__(self, data_dir: Path, workers: int | str, *extra_args: str, env: dict[str, str] | None = None) -> None:
        super().__init__(data_dir, "--workers", str(workers), *extra_args,
                         env={"ROCKMQ_NAMESRV_INTERVAL_S": INTERVAL_S, **(env or {})})

    def shard_pids(self) -> list[int]:
        """The parent's children (the shards), by pid."""
        assert self.proc is not None
        return children(self.proc.pid)

    def shards(self, topic: str) -> dict[str, str]:
        """Broker name -> endpoint of every shard holding `topic`, from a route through `--port`."""
        conn = Conn(self.endpoint)
        try:
            reply = conn.query_route(topic)
        finally:
            conn.close()
        assert reply.status.code == pb.OK, reply.status
        return {q.broker.name: f"{q.broker.endpoints.addresses[0].host}:{q.broker.endpoints.addresses[0].port}"
                for q in reply.message_queues}

    def stored_ids(self, topic: str) -> dict[str, set[str]]:
        """Broker name -> ids of the messages of `topic` that shard stores."""
        out: dict[str, set[str]] = {}
        for name, endpoint in self.shards(topic).items():
            conn = Conn(endpoint)
            try:
                out[name] = {m.system_properties.message_id for q in conn.describe_topic(topic, local=True).queues
                             for m in conn.pull_all(topic, q.queue_id)}
            finally:
                conn.close()
        return out

    def signal_and_wait(self, sig: int, timeout: float = 40.0) -> int:
        """Send `sig` to the parent -> its exit code, once it and every shard are gone."""
        assert self.proc is not None
        shards = self.shard_pids()
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout)
        self.proc = None
        wait_for(lambda: not any(alive(p) for p in shards), 10, 0.05, what="every shard process to end")
        return code

    def kill(self) -> None:
        """kill -9 of the parent; its shards stop on their own (they get SIGTERM when it dies)."""
        shards = self.shard_pids() if self.proc and self.proc.poll() is None else []
        super().kill()
        wait_for(lambda: not any(alive(p) for p in shards), 30, 0.05, what="every shard process to end")


def children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return sorted(out)


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def serve_refused(data_dir: Path, workers: int | str) -> subprocess.CompletedProcess[str]:
    """`rockmq serve --workers N` expected to refuse at once: the finished process."""
    cmd = [sys.executable, "-m", "rockmq", "serve", "--port", "0", "--data-dir", str(data_dir), "--workers", str(workers)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, env={**os.environ})
