"""Members of a coordinated broker group (`rockmq serve --coordinator`, issue 30) as real processes,
for tests/cluster and tests/chaos: each on a fixed free port (its endpoint is its name in the group)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from broker_process import BrokerProcess
from mqwire import Conn, message
from tls_certs import free_port
from waiting import wait_for

LEASE_S = 3  # the default coordinator_lease_s


def member(etcd_url: str, data: Path, group: str = "g1", *extra: str, env: dict[str, str] | None = None) -> BrokerProcess:
    broker = BrokerProcess(data, "--broker-name", group, "--replication", "sync", "--coordinator", etcd_url,
                           "--coordinator-lease", str(LEASE_S), *extra, env=env)
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
def running_group(etcd_url: str, directory: Path, size: int = 3, *extra: str,
                  env: dict[str, str] | None = None) -> Iterator[list[BrokerProcess]]:
    """`size` members started, each in `directory`/m{i} (with `extra` options); after: continued if
    paused, and killed."""
    members = [member(etcd_url, directory / f"m{i}", "g1", *extra, env=env) for i in range(size)]
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


def lagging_behind(members: list[BrokerProcess], topic: str, queues: int
                   ) -> tuple[BrokerProcess, BrokerProcess, BrokerProcess, set[str]]:
    """The primary with `topic` and both replicas in its in-sync set; then one replica paused (SIGSTOP)
    and 20 messages acknowledged without it (it left the set) -> (primary, lagging, in_sync, their ids)."""
    primary = serving_primary(members)
    primary.cli("topic", "create", topic, "--queues", str(queues), check=True)
    in_sync_joined(primary)
    lagging, in_sync = (m for m in members if m is not primary)
    assert lagging.proc is not None
    lagging.proc.send_signal(signal.SIGSTOP)
    conn = Conn(primary.endpoint)
    try:
        acked = {e.message_id for e in conn.send_ok(*(message(topic, f"m{i}") for i in range(20)))}
    finally:
        conn.close()
    return primary, lagging, in_sync, acked


def strand(primary: BrokerProcess, lagging: BrokerProcess, in_sync: BrokerProcess) -> None:
    """kill -9 the primary and the in-sync replica, continue the lagging one: it finds no member it may
    elect (its log says so)."""
    primary.kill()
    in_sync.kill()
    assert lagging.proc is not None
    lagging.proc.send_signal(signal.SIGCONT)
    wait_for(lambda: any("no member of the in-sync set" in line for line in lagging.log), LEASE_S * 3,
             what="the lagging replica to see nobody it may elect")
