"""Clients across the failover of a coordinated group (issue 30 §4; real etcd, real broker processes):
kill -9 the primary while rockmq's producer sends (plain and FIFO messages) and its push consumer
reads. No send fails (the producer's retries wait out the election: client/sender.py), every
acknowledged message is stored once on the new primary and each FIFO group's messages in the order
they were sent, the consumer goes on reading on the new primary, and every member answers QueryRoute
with the group's queues at the new primary's endpoint, where the official Python producer sends."""

from __future__ import annotations

import asyncio
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from broker_process import BrokerProcess, NameServerProcess
from coordinated_group import LEASE_S, in_sync_joined, running_group, serving_primary
from mqwire import Conn
from waiting import async_wait_for, wait_for

from rockmq.client import AsyncProducer, AsyncPushConsumer, Message
from rockmq.protocol import admin

sys.path.insert(0, str(Path(__file__).parent.parent / "compat"))
from official_client import producer as official_producer  # noqa: E402
from official_client import send as official_send  # noqa: E402

TOPIC, FIFO_TOPIC, QUEUES, GROUPS = "ride", "ride-fifo", 4, 4
FAST = dict(heartbeat_s=0.3, rebalance_s=1.0, commit_interval_s=0.3, poll_s=1.0, shutdown_timeout_s=2.0,
            request_timeout=2.0)
INTERVAL_S = 0.3  # the brokers' registration interval here


def test_clients_ride_out_the_kill_of_the_primary(etcd, tmp_path: Path):
    with running_group(etcd.url, tmp_path) as members:
        old = serving_primary(members)
        old.cli("topic", "create", TOPIC, "--queues", str(QUEUES), check=True)
        old.cli("topic", "create", FIFO_TOPIC, "--queues", str(QUEUES), "--types", "FIFO", check=True)
        in_sync_joined(old)
        traffic = Traffic(",".join(m.endpoint for m in members))
        first_write_s = asyncio.run(traffic.through_the_kill_of(old))
        new = serving_primary([m for m in members if m is not old])
        print(f"\nkill -9 -> first acknowledged send {first_write_s:.2f} s (lease {LEASE_S} s); "
              f"{len(traffic.acked)} + {sum(map(len, traffic.fifo.values()))} acknowledged, none failed")
        assert traffic.failed == [], traffic.failed[:3]
        assert first_write_s < LEASE_S + 3
        stored = _stored(new.endpoint, TOPIC)
        assert all(stored[i] == 1 for i in traffic.acked), "an acknowledged message is missing or stored twice"
        assert _fifo_order(new.endpoint) == traffic.fifo, "a FIFO group's messages are out of the order sent"
        assert traffic.acked <= traffic.consumed, "the consumer missed acknowledged messages"
        for m in members:
            if m is not old:
                assert _route_endpoints(m.endpoint) == {new.endpoint}, f"{m.endpoint} routes elsewhere"
        with official_producer(";".join(m.endpoint for m in members), TOPIC) as p:
            official_send(p, TOPIC, b"from the official producer")


class Traffic:
    """rockmq's producer and push consumer on the group's members, through a kill of its primary."""

    def __init__(self, endpoints: str) -> None:
        self.endpoints = endpoints
        self.acked: set[str] = set()
        self.fifo: dict[str, list[int]] = defaultdict(list)  # group -> its sequence numbers, as acknowledged
        self.consumed: set[str] = set()
        self.failed: list[BaseException] = []
        self._last_ack = 0.0

    async def through_the_kill_of(self, primary) -> float:
        """Send and consume, kill -9 `primary`, go on until sends land again and 1 s more -> seconds from
        the kill to the first send acknowledged after it."""
        stop = asyncio.Event()

        async def consume(m) -> None:
            self.consumed.add(m.message_id)

        async with AsyncProducer(self.endpoints, request_timeout=2.0) as p, \
                AsyncPushConsumer(self.endpoints, "ride-g", {TOPIC: "*"}, consume, **FAST):
            senders = [asyncio.create_task(self._plain(p, stop)) for _ in range(4)]
            senders += [asyncio.create_task(self._group(p, f"g{k}", stop)) for k in range(GROUPS)]
            await asyncio.sleep(1.5)
            killed = time.monotonic()
            await asyncio.to_thread(primary.kill)
            await async_wait_for(lambda: self._last_ack > killed, LEASE_S + 10, 0.02, what="a send after the kill")
            took = self._last_ack - killed
            await asyncio.sleep(1.0)
            stop.set()
            await asyncio.gather(*senders)
            await async_wait_for(lambda: self.acked <= self.consumed, 20, 0.1, what="the consumer to read every message")
        return took

    async def _plain(self, p: AsyncProducer, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                self.acked.add((await p.send(Message(TOPIC, b"plain"))).message_id)
            except Exception as e:  # noqa: BLE001 -- every failure is what the test counts
                self.failed.append(e)
                return
            self._last_ack = time.monotonic()

    async def _group(self, p: AsyncProducer, group: str, stop: asyncio.Event) -> None:
        seq = 0
        while not stop.is_set():
            try:
                await p.send(Message(FIFO_TOPIC, f"{group}:{seq}".encode(), message_group=group))
            except Exception as e:  # noqa: BLE001
                self.failed.append(e)
                return
            self.fifo[group].append(seq)
            seq += 1


def _stored(endpoint: str, topic: str) -> dict[str, int]:
    """How often each message id is stored in the topic's queues at `endpoint`."""
    conn = Conn(endpoint)
    try:
        counts: dict[str, int] = defaultdict(int)
        for q in range(QUEUES):
            for m in conn.pull_all(topic, q):
                counts[m.system_properties.message_id] += 1
        return counts
    finally:
        conn.close()


def _fifo_order(endpoint: str) -> dict[str, list[int]]:
    """Each FIFO group's sequence numbers in the order the queues at `endpoint` hold them."""
    conn = Conn(endpoint)
    try:
        order: dict[str, list[int]] = defaultdict(list)
        for q in range(QUEUES):
            for m in conn.pull_all(FIFO_TOPIC, q):
                group, seq = m.body.decode().split(":")
                order[group].append(int(seq))
        return order
    finally:
        conn.close()


def _route_endpoints(endpoint: str) -> set[str]:
    """The endpoints of the queues a member's QueryRoute names (asked as a client with one address)."""
    conn = Conn(endpoint)
    try:
        return wait_for(lambda: _endpoints(conn) if _endpoints(conn) else None, 10, what="a route")
    finally:
        conn.close()


def _endpoints(conn: Conn) -> set[str]:
    return {f"{a.host}:{a.port}" for q in conn.query_route(TOPIC).message_queues for a in q.broker.endpoints.addresses}


def test_name_servers_route_the_group_to_its_new_primary_within_a_registration_interval(etcd, tmp_path: Path):
    """A coordinated group g1 beside a plain broker b2 under one name server: b2's routes name g1's
    queues at its primary, and after kill -9 of that primary at the next one, within the election and
    one registration interval."""
    with _beside_a_plain_broker(etcd.url, tmp_path) as (_, b2, members, old):
        old.kill()
        killed = time.monotonic()
        new = serving_primary([m for m in members if m is not old])
        wait_for(lambda: _holders(b2.endpoint).get("g1") == {new.endpoint}, LEASE_S + 10, 0.05,
                 what="b2 to route g1 to the new primary")
        print(f"\nkill -9 -> b2 routes g1 to the new primary: {time.monotonic() - killed:.2f} s")
        assert time.monotonic() - killed < LEASE_S + 3 + INTERVAL_S + 1


def test_a_name_server_restarted_during_a_failover_never_takes_the_group_back(etcd, tmp_path: Path):
    """kill -9 of g1's primary with its name server killed at once and restarted (empty) in the middle of
    the election: the name server learns g1 from its new primary, at an epoch above the old one, and b2's
    routes name it; the old primary, restarted, rejoins as a replica and registers nothing, so the
    name server's epoch for g1 never goes back and the routes stay on the new primary."""
    with _beside_a_plain_broker(etcd.url, tmp_path) as (ns, b2, members, old):
        _, before = _registered(b2.endpoint, "g1")
        old.kill()
        ns.kill()
        killed = time.monotonic()
        time.sleep(1.0)  # the old primary's lease has not lapsed yet: nobody is elected before the restart
        ns.start()
        new = serving_primary([m for m in members if m is not old])
        wait_for(lambda: _holders(b2.endpoint).get("g1") == {new.endpoint}, LEASE_S + 10, 0.05,
                 what="b2 to route g1 to the new primary")
        print(f"\nkill -9 and a name server restart -> b2 routes g1 to the new primary: "
              f"{time.monotonic() - killed:.2f} s")
        after = _registered(b2.endpoint, "g1")
        assert after[0] == new.endpoint and after[1] > before, (before, after)
        old.start()
        wait_for(lambda: any(f"now a replica of {new.endpoint}" in line or f"replica of {new.endpoint})" in line
                             for line in list(old.log)), 20, what="the old primary to rejoin as a replica")
        for _ in range(10):  # registration intervals after the rejoin: nothing takes g1 back
            assert _registered(b2.endpoint, "g1") == after
            assert _holders(b2.endpoint).get("g1") == {new.endpoint}
            time.sleep(INTERVAL_S)


@contextmanager
def _beside_a_plain_broker(etcd_url: str, tmp_path: Path
                           ) -> Iterator[tuple[NameServerProcess, BrokerProcess, list[BrokerProcess], BrokerProcess]]:
    """A coordinated group g1 beside a plain broker b2 under one name server, a topic with one queue on
    each, b2 routing g1's to its primary -> (the name server, b2, g1's members, its primary)."""
    ns = NameServerProcess("--broker-timeout", "2").start()
    env = {"ROCKMQ_NAMESRV_INTERVAL_S": str(INTERVAL_S)}
    b2 = BrokerProcess(tmp_path / "b2", "--broker-name", "b2", "--namesrv", ns.endpoint, env=env).start()
    try:
        with running_group(etcd_url, tmp_path, 3, "--namesrv", ns.endpoint, env=env) as members:
            old = serving_primary(members)
            old.cli("topic", "create", TOPIC, "--queues", "2", check=True)  # one queue on each of g1 and b2
            wait_for(lambda: _holders(b2.endpoint).get("g1") == {old.endpoint}, 10, what="b2 to route g1 to its primary")
            yield ns, b2, members, old
    finally:
        b2.kill()
        ns.kill()


def _registered(endpoint: str, name: str) -> tuple[str, int]:
    """(endpoint, primary epoch) of the broker the name servers hold under `name`, as a broker sees them."""
    conn = Conn(endpoint)
    try:
        held = [(b.endpoint, b.epoch) for b in conn.admin.DescribeCluster(admin.ClusterRequest(), timeout=10).brokers
                if b.name == name]
    finally:
        conn.close()
    assert len(held) == 1, held
    return held[0]


def _holders(endpoint: str) -> dict[str, set[str]]:
    """Broker name -> the endpoints a broker's QueryRoute names its queues at."""
    conn = Conn(endpoint)
    try:
        out: dict[str, set[str]] = defaultdict(set)
        for q in conn.query_route(TOPIC).message_queues:
            out[q.broker.name] |= {f"{a.host}:{a.port}" for a in q.broker.endpoints.addresses}
        return out
    finally:
        conn.close()
