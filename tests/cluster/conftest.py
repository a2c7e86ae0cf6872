"""A cluster on loopback: one name server and three brokers (b1, b2, b3) as subprocesses."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from broker_process import BrokerProcess, NameServerProcess
from mqwire import Conn
from shard_set import ShardSet
from waiting import wait_for

from rockmq.protocol import namesrv, namesrv_grpc

BROKER_TIMEOUT_S = 2  # the name server drops a silent broker this fast in tests (brokers register every 0.3 s)


@dataclass
class Cluster:
    namesrv: NameServerProcess
    brokers: dict[str, BrokerProcess]

    def live_brokers(self) -> list[str]:
        import grpc

        with grpc.insecure_channel(self.namesrv.endpoint) as ch:
            reply = namesrv_grpc.NameServerStub(ch).ListBrokers(namesrv.ListBrokersRequest(), timeout=5)
        return [b.name for b in reply.brokers]

    def stored_ids(self, topic: str) -> set[str]:
        """The ids of every message of `topic` on every running broker."""
        ids: set[str] = set()
        for b in self.brokers.values():
            if b.proc is None:
                continue
            conn = Conn(b.endpoint)
            try:
                for q in conn.describe_topic(topic, local=True).queues:
                    ids |= {m.system_properties.message_id for m in conn.pull_all(topic, q.queue_id)}
            finally:
                conn.close()
        return ids

    def wait_for_brokers(self, names: set[str], timeout: float = 15.0) -> None:
        wait_for(lambda: set(self.live_brokers()) == names, timeout, 0.1, what=f"live brokers {sorted(names)}")


def start_cluster(root: Path, names: tuple[str, ...] = ("b1", "b2", "b3"), broker_timeout_s: float = BROKER_TIMEOUT_S) -> Cluster:
    ns = NameServerProcess("--broker-timeout", str(broker_timeout_s)).start()
    env = {"ROCKMQ_NAMESRV_INTERVAL_S": "0.3"}
    brokers = {n: BrokerProcess(root / n, "--broker-name", n, "--namesrv", ns.endpoint, env=env).start() for n in names}
    cluster = Cluster(ns, brokers)
    cluster.wait_for_brokers(set(names))
    return cluster


def _running(c: Cluster):
    yield c
    for b in c.brokers.values():
        b.kill()
    c.namesrv.kill()


@pytest.fixture
def cluster(tmp_path: Path):
    yield from _running(start_cluster(tmp_path))


@pytest.fixture
def lingering_cluster(tmp_path: Path):
    """A cluster whose name server keeps a dead broker registered for two minutes."""
    yield from _running(start_cluster(tmp_path, broker_timeout_s=120))


@pytest.fixture
def two_shards(tmp_path: Path):
    """`rockmq serve --workers 2`, killed after the test."""
    s = ShardSet(tmp_path / "data", 2).start()
    yield s
    s.kill()
