"""`rockmq serve --workers 2`: two shard processes behind one `--port`, joined as a cluster.

Admin calls (topic create and delete, group create) and routes (auto-creating topics too)
through `--port` reach every shard; the official Python client spreads FIFO message groups over both and keeps each group in
order; a shard killed with -9 is restarted by the parent and loses nothing it acknowledged;
SIGTERM and SIGINT stop every shard cleanly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "compat"))
from mqwire import Conn  # noqa: E402
from official_client import producer, send, simple_consumer  # noqa: E402
from shard_set import ShardSet, alive  # noqa: E402
from waiting import wait_for  # noqa: E402

from rockmq.protocol import admin  # noqa: E402


@pytest.fixture
def shards(tmp_path: Path):
    s = ShardSet(tmp_path / "data", 2).start()
    yield s
    s.kill()


def test_admin_and_routes_through_port_reach_every_shard(shards):
    assert len(shards.shard_pids()) == 2
    shards.cli("topic", "create", "spread", "--queues", "8", check=True)
    shards.cli("group", "create", "spread-g", "--fifo", "--max-attempts", "4", check=True)
    route = shards.shards("spread")
    assert sorted(route) == ["broker-a-0", "broker-a-1"]
    assert route["broker-a-0"] == shards.endpoint  # shard 0 is the listener on --port
    conn = Conn(shards.endpoint)
    try:
        queues = conn.query_route("spread").message_queues
    finally:
        conn.close()
    assert sorted((q.broker.name, q.id) for q in queues) == [(f"broker-a-{b}", q) for b in (0, 1) for q in range(4)]
    for name, endpoint in route.items():
        conn = Conn(endpoint)
        try:
            assert conn.describe_topic("spread", local=True).queue_count == 4, name
            group = conn.admin.DescribeGroup(admin.GroupRequest(name="spread-g", local=True), timeout=10)
            assert (group.fifo, group.max_attempts) == (True, 4), name
        finally:
            conn.close()
    conn = Conn(shards.endpoint)
    try:  # a topic auto-created by a route through --port is spread too
        auto = conn.query_route("auto-spread").message_queues
    finally:
        conn.close()
    assert sorted((q.broker.name, q.id) for q in auto) == [(f"broker-a-{b}", q) for b in (0, 1) for q in range(4)]
    shards.cli("topic", "delete", "spread", check=True)
    for name, endpoint in route.items():
        gone = subprocess.run([sys.executable, "-m", "rockmq", "topic", "describe", "spread", "--endpoint", endpoint],
                              capture_output=True, text=True, timeout=30)
        assert gone.returncode == 1 and "spread" in gone.stderr, (name, gone)


def test_official_client_fifo_groups_spread_over_shards_in_order(shards):
    shards.cli("topic", "create", "orders", "--queues", "8", "--types", "FIFO", check=True)
    shards.cli("group", "create", "orders-g", "--fifo", check=True)
    groups = [f"customer-{i}" for i in range(8)]
    sent: dict[str, list[str]] = {g: [] for g in groups}
    with producer(shards.endpoint, "orders") as p:
        for i in range(200):
            g = groups[i % len(groups)]
            sent[g].append(send(p, "orders", f"{g}:{i}".encode(), message_group=g).message_id)
    stored = shards.stored_ids("orders")
    assert all(stored.values()), {k: len(v) for k, v in stored.items()}  # both shards got some groups
    assert set().union(*stored.values()) == {i for ids in sent.values() for i in ids}
    received: list[tuple[str, str]] = []
    with simple_consumer(shards.endpoint, "orders-g", {"orders": "*"}) as c:
        def drained() -> bool:
            for m in c.receive(32, 30):
                received.append((m.message_group, m.message_id))
                c.ack(m)
            return len(received) >= 200
        wait_for(drained, 60, 0, what="200 FIFO messages received")
    assert len({i for _, i in received}) == len(received) == 200  # each once
    for g in groups:
        assert [i for group, i in received if group == g] == sent[g], f"message group {g} out of order"


@pytest.mark.parametrize("victim_shard", [1, 0])  # 0: the one listening on --port, the client's access point
def test_a_killed_shard_is_restarted_and_loses_nothing_acknowledged(shards, victim_shard):
    shards.cli("topic", "create", "survive", "--queues", "8", check=True)
    acked: list[str] = []
    failed: list[str] = []
    stop = threading.Event()

    def produce() -> None:
        with producer(shards.endpoint, "survive") as p:
            i = 0
            while not stop.is_set():
                try:
                    acked.append(send(p, "survive", f"x{i}".encode()).message_id)
                except Exception as e:  # noqa: BLE001 - counted, the test judges them
                    failed.append(repr(e))
                i += 1

    name = f"broker-a-{victim_shard}"
    endpoint = shards.shards("survive")[name]
    t = threading.Thread(target=produce)
    t.start()
    try:
        wait_for(lambda: len(acked) >= 50, 20, what="the producer sending")
        before = set(shards.shard_pids())
        victim = next(pid for pid in before if f"shard-{victim_shard} " in _cmdline(pid))
        os.kill(victim, signal.SIGKILL)
        restarted = wait_for(lambda: set(shards.shard_pids()) - before, 30, what="the parent restarting the shard")
        assert len(restarted) == 1 and not alive(victim)
        wait_for(lambda: any(f"shard {name} serving again" in line for line in shards.log), 30, 0.1,
                 what="the restarted shard serving")
        assert shards.shards("survive")[name] == endpoint  # on its old port
        count = len(acked)
        wait_for(lambda: len(acked) >= count + 50, 20, what="sends after the restart")
    finally:
        stop.set()
        t.join(30)
    assert len(failed) <= 5, f"{len(failed)} sends failed even with retries: {failed[:3]}"
    stored = shards.stored_ids("survive")
    assert all(stored.values())
    lost = set(acked) - set().union(*stored.values())
    assert not lost, f"{len(lost)} acknowledged messages are gone"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_stop_every_shard_cleanly(shards, sig):
    assert shards.signal_and_wait(sig) == 0
    assert sum("stopped" in line and "shard broker-a-" in line for line in shards.log) == 2, list(shards.log)[-10:]
