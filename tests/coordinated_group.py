"""Members of a coordinated broker group (`rockmq serve --coordinator`, issue 30) as real processes,
for tests/cluster and tests/chaos: each on a fixed free port (its endpoint is its name in the group)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
from broker_process import BrokerProcess
from mqwire import Conn
from tls_certs import free_port
from waiting import wait_for

from rockmq.protocol import pb

LEASE_S = 3  # the default coordinator_lease_s


def member(etcd_url: str, data: Path, group: str = "g1") -> BrokerProcess:
    broker = BrokerProcess(data, "--broker-name", group, "--replication", "sync", "--coordinator", etcd_url,
                           "--coordinator-lease", str(LEASE_S))
    broker.port = free_port()  # a member's endpoint is its name in the group: a fixed port
    return broker


def serving_primary(members: list[BrokerProcess], timeout: float = 15) -> BrokerProcess:
    """The member that serves as the group's primary: its log's last role line names itself, and its
    broker serves in that role since (started, or rebuilt)."""
    def serving(m: BrokerProcess) -> bool:
        lines = list(m.log)
        roles = [i for i, line in enumerate(lines) if " is primary at epoch " in line]
        return bool(roles) and lines[roles[-1]].endswith("(this member)") and any(
            "rockmq broker listening" in line or "now the primary" in line for line in lines[roles[-1]:])

    return wait_for(lambda: next((m for m in members if m.proc is not None and serving(m)), None), timeout,
                    what="a primary")


@contextmanager
def running_group(etcd_url: str, directory: Path, size: int = 3) -> Iterator[list[BrokerProcess]]:
    """`size` members started, each in `directory`/m{i}; after: continued if paused, and killed."""
    members = [member(etcd_url, directory / f"m{i}") for i in range(size)]
    try:
        for m in members:
            m.start()
        yield members
    finally:
        for m in members:
            if m.proc is not None:
                m.proc.send_signal(signal.SIGCONT)
            m.kill()


def in_sync_joined(primary: BrokerProcess, replicas: int = 2, timeout: float = 15) -> None:
    """Wait until `replicas` members joined the in-sync set of `primary` (its log says each)."""
    wait_for(lambda: sum(" joined the in-sync set" in line for line in list(primary.log)) >= replicas, timeout,
             what=f"{replicas} replicas to join the in-sync set")


def group_command(etcd_url: str, *args: str, answer: str | None = None) -> subprocess.CompletedProcess[str]:
    """`rockmq broker <args> --coordinator <etcd_url>` (group, elect), `answer` on its stdin."""
    return subprocess.run([sys.executable, "-m", "rockmq", "broker", *args, "--coordinator", etcd_url],
                          input=answer, capture_output=True, text=True, timeout=60)


def group_state(etcd_url: str, group: str = "g1") -> dict:
    """`rockmq broker group GROUP --json`, parsed."""
    done = group_command(etcd_url, "group", group, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def send_code(conn: Conn, msg: pb.Message) -> object:
    """A send's status code, or the gRPC error's (a replica refuses writes with FAILED_PRECONDITION)."""
    try:
        return conn.send(msg).status.code
    except grpc.RpcError as e:
        return e.code()
