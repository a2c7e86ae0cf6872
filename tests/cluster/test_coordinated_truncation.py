"""A primary paused past its lease (SIGSTOP, then SIGCONT) with an unacknowledged tail (issue 30 §3):
three members on a real etcd, sync replication, senders running. Its replicas die first (kill -9), so
what it writes next reaches no one and is acknowledged to no one: its tail. Paused past its lease, the
two come back and elect one of themselves, which takes writes at the same offsets; resumed, the former
primary acknowledges nothing more, rejoins as a replica, truncates its tail (one log line) instead of
taking a full copy, and ends holding what the others hold: every acknowledged message, and at every
offset of every queue the same message on all three. Meanwhile it serves no read of its tail: a reader
pulling from it from before SIGCONT on is refused (UNAVAILABLE, read_fence.py) until it rejoined, and
every message it was served sits at the same offset on the new primary."""

from __future__ import annotations

import asyncio
import re
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
from broker_process import BrokerProcess
from coordinated_group import in_sync_joined, running_group, serving_primary
from mqwire import Conn, held_ids, message
from waiting import wait_for

from rockmq.client import AsyncProducer, Message
from rockmq.protocol import pb

TOPIC, QUEUES = "tail", 4
SENDERS, BATCH = 4, 8
LEASE = 6  # the members' (s): the new primary's pause in `_hold_rejoining` (~2.7 s) stays well within it
HELD_S = 0.7
# A send waits this long for a replica that is gone before the primary drops it from the in-sync set:
# longer than the test's pause, so the dead replicas stay electable (the test's tail is unacknowledged).
PATIENT = {"ROCKMQ_REPLICATION_TIMEOUT_S": "20", "ROCKMQ_REPLICA_MAX_LAG_MS": "15000"}
# the reader reaches the member again within 20 ms of its rebuilt broker listening (by default gRPC waits
# 1 s and more, and channels to one address share that wait)
EAGER = (("grpc.use_local_subchannel_pool", 1), ("grpc.initial_reconnect_backoff_ms", 20),
         ("grpc.min_reconnect_backoff_ms", 20), ("grpc.max_reconnect_backoff_ms", 20))
TRUNCATED = re.compile(r"truncated this member's unacknowledged tail .*: dropped (\d+) messages .*\((\d+\.\d+) s\)")


@dataclass(frozen=True)
class Sent:
    started: float  # time.monotonic()
    answered: float
    ids: tuple[str, ...]
    ok: bool


class Senders:
    """Threads sending batches of BATCH messages to one endpoint, each send recorded."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.sent: list[Sent] = []
        self.begun: list[tuple[str, ...]] = []  # the ids of each send, as it starts
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(t,), daemon=True) for t in range(SENDERS)]

    def __enter__(self) -> Senders:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(15)

    def _run(self, thread: int) -> None:
        conn = Conn(self.endpoint)
        n = 0
        while not self._stop.is_set():
            msgs = [message(TOPIC, f"s{thread}-{n + i}") for i in range(BATCH)]
            n += BATCH
            started = time.monotonic()
            self.begun.append(tuple(m.system_properties.message_id for m in msgs))
            try:
                reply = conn.send(*msgs)
                ok = reply.status.code == pb.OK and all(e.status.code == pb.OK for e in reply.entries)
            except grpc.RpcError:
                ok = False
            self.sent.append(Sent(started, time.monotonic(), tuple(m.system_properties.message_id for m in msgs), ok))
            if not ok:
                time.sleep(0.05)
        conn.close()

    def acked(self) -> set[str]:
        return {i for s in self.sent if s.ok for i in s.ids}


class Reader:
    """A thread reading every queue of one member over and over (QueryOffset, then pulls): what it was
    served, as (queue, offset, message id), the reads refused, and when a whole read last succeeded."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.served: set[tuple[int, int, str]] = set()
        self.refused = 0
        self.fenced = 0  # refused by the member's read fence (read_fence.py), not for its broker being rebuilt
        self.whole_at = 0.0  # time.monotonic() of the last read of every queue that succeeded
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Reader:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(15)

    def _run(self) -> None:
        conn = Conn(self.endpoint, options=EAGER)
        while not self._stop.is_set():
            try:
                for q in range(QUEUES):
                    self.served |= {(q, m.system_properties.queue_offset, m.system_properties.message_id)
                                    for m in conn.pull_all(TOPIC, q)}
                self.whole_at = time.monotonic()
            except grpc.RpcError as e:
                # refused, or the broker rebuilt meanwhile (not listening, or a call cut at its end): retriable
                assert e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED), e
                self.refused += 1
                self.fenced += "is rejoining the group" in (e.details() or "")
                time.sleep(0.005)
        conn.close()


def test_a_primary_paused_past_its_lease_truncates_its_unacknowledged_tail_on_rejoining(etcd, tmp_path: Path):
    begun = time.monotonic()
    with running_group(etcd.url, tmp_path, 3, "--coordinator-lease", str(LEASE), env=PATIENT) as members:
        old = serving_primary(members)
        old.cli("topic", "create", TOPIC, "--queues", str(QUEUES), check=True)
        in_sync_joined(old)
        replicas = [m for m in members if m is not old]
        with Senders(old.endpoint) as senders:
            wait_for(lambda: len(senders.acked()) >= 10 * BATCH, 20, what="acknowledged sends")
            for r in replicas:
                r.kill()
            killed = time.monotonic()
            with Senders(old.endpoint) as late:  # their batches are written on the primary alone: its tail
                wait_for(lambda: len(late.begun) >= SENDERS, 5, what="sends after the replicas died")
                time.sleep(0.3)
                assert old.proc is not None
                old.proc.send_signal(signal.SIGSTOP)
                stopped = time.monotonic()
                _start_all(replicas)
                new = serving_primary(replicas, timeout=LEASE * 4)
                acked_new = {r.message_id for r in asyncio.run(_sends(new.endpoint, 40))}  # at the tail's offsets
                time.sleep(max(0.0, stopped + LEASE + 1 - time.monotonic()))
                with Reader(old.endpoint) as reader:  # its first reads wait in the paused broker, served on SIGCONT
                    time.sleep(0.3)
                    old.proc.send_signal(signal.SIGCONT)
                    resumed = time.monotonic()
                    _hold_rejoining(old, new)
                    wait_for(lambda: _truncation(old), 30, what="the former primary to truncate its tail")
                    rejoined = time.monotonic()
                    rejoined_s = rejoined - resumed
                    wait_for(lambda: reader.whole_at > rejoined, 20, what="reads served again after the rejoin")
        tail = {i for ids in late.begun for i in ids}
        sent = senders.sent + late.sent
        messages, seconds, line = _truncation(old) or (0, 0.0, "")
        print(f"\n{line}\ntruncated {messages} messages in {seconds:.3f} s, {rejoined_s:.2f} s after SIGCONT; the test "
              f"took {time.monotonic() - begun:.1f} s")
        assert messages > 0, "the former primary had a tail to truncate"
        assert not [s for s in sent if s.ok and (s.started > killed or s.answered > resumed)], \
            "the paused primary acknowledged a write nobody else held, or after its lease"
        assert not any("re-seeding from" in entry for entry in old.log), "truncated, not copied"
        assert f"replica of {new.endpoint}" in "\n".join(old.log)
        acked = senders.acked() | late.acked() | acked_new
        wait_for(lambda: acked <= held_ids(old.endpoint, TOPIC, QUEUES), 20, what="the former primary to catch up")
        assert acked <= held_ids(new.endpoint, TOPIC, QUEUES), "an acknowledged message was lost"
        wait_for(lambda: len({_by_offset(m) for m in members}) == 1, 20,
                 what="every member to hold the same message at every offset")
        assert not tail & held_ids(old.endpoint, TOPIC, QUEUES), "the tail is gone from the former primary"
        held = {(q, offset): i for q, offset, i in _by_offset(new)}
        print(f"the reader of the former primary: {reader.refused} reads refused ({reader.fenced} by its read fence), "
              f"{len(reader.served)} messages served")
        assert reader.fenced > 0, "reads between the step-down and the rejoin were refused"
        assert not {(q, o, i) for q, o, i in reader.served if held.get((q, o)) != i}, \
            "the former primary served a message at an offset where the new primary holds another"


def _hold_rejoining(old: BrokerProcess, new: BrokerProcess) -> None:
    """Keep the former primary between its step-down and its rejoin for a while: the new primary paused
    (within its lease) from the step-down until HELD_S after the former one serves as its replica, which
    cannot follow it meanwhile (nor truncate its tail)."""
    wait_for(lambda: any("stepping down from primary" in line for line in list(old.log)), 10, what="the step-down")
    assert new.proc is not None
    new.proc.send_signal(signal.SIGSTOP)
    try:
        wait_for(lambda: any(f"now a replica of {new.endpoint}" in line for line in list(old.log)), 10,
                 what="the former primary to serve as a replica")
        time.sleep(HELD_S)
    finally:
        new.proc.send_signal(signal.SIGCONT)


def _start_all(members: list[BrokerProcess]) -> None:
    """Start them together (each start waits until its member serves)."""
    threads = [threading.Thread(target=m.start) for m in members]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)


def _truncation(member: BrokerProcess) -> tuple[int, float, str] | None:
    """(messages dropped, seconds, the line) from the member's truncation line, if it logged one."""
    for line in list(member.log):
        if found := TRUNCATED.search(line):
            return int(found[1]), float(found[2]), line
    return None


def _by_offset(member: BrokerProcess) -> tuple[tuple[int, int, str], ...]:
    """(queue, offset, message id) of every message the member holds."""
    conn = Conn(member.endpoint)
    try:
        return tuple((q, m.system_properties.queue_offset, m.system_properties.message_id)
                     for q in range(QUEUES) for m in conn.pull_all(TOPIC, q))
    except grpc.RpcError:
        return ()
    finally:
        conn.close()


async def _sends(endpoint: str, n: int) -> list:
    async with AsyncProducer(endpoint, request_timeout=2.0) as producer:
        return [await producer.send(Message(TOPIC, f"new-{i}".encode())) for i in range(n)]
