"""A replica too far behind its primary re-seeds itself (broker/cluster/reseed.py): it takes a whole
copy of the primary's store while serving reads from its own, restarts on it and follows again, so
sync sends succeed again without anyone acting. The copy (Snapshot) answers the cluster's inner
credentials only, one at a time, and the primary's checkpoint goes however its stream ends."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import grpc
from broker_process import BrokerProcess
from mqwire import META, Conn, held_ids, message
from test_control_plane import AUTH_ARGS, _refused, as_admin, as_inner
from waiting import wait_for

from rockmq.broker.cluster import reseed
from rockmq.protocol import admin, admin_grpc, pb, replication, replication_grpc, rpc, svc

# A primary keeping 64 KiB of batches (and of footprints): a replica down while a few MiB are sent
# is too far behind; sync sends without a replica fail fast.
SMALL_RING = {"ROCKMQ_REPLICATION_RING_BYTES": str(64 * 1024), "ROCKMQ_REPLICATION_TIMEOUT_S": "0.2"}
BODY = 256 * 1024
SNAPSHOT = "/rockmq.replication.v1.Replication/Snapshot"


def _holds(endpoint: str, topic: str, queues: int, ids: set[str]) -> bool:
    try:
        return ids <= held_ids(endpoint, topic, queues)  # none while it restarts on the copy
    except AssertionError:
        return False


def _sync_send_ok(conn: Conn, topic: str) -> bool:
    return conn.send(message(topic, "confirmed")).status.code == pb.OK


def _send_big(conn: Conn, topic: str, mib: int) -> set[str]:
    """`mib` MiB of incompressible bodies, stored on the primary (a sync send without a replica is
    answered SLAVE_PERSISTENCE_TIMEOUT, stored all the same) -> their ids."""
    ids: set[str] = set()
    for _ in range(mib * (1 << 20) // (4 * BODY)):
        batch = [message(topic, os.urandom(BODY)) for _ in range(4)]
        reply = conn.send(*batch)
        assert reply.status.code in (pb.OK, pb.SLAVE_PERSISTENCE_TIMEOUT), reply.status
        ids |= {m.system_properties.message_id for m in batch}
    return ids


class ReadsDuringCopy:
    """Pulls from the replica while its copy downloads (the staging directory there, no manifest
    yet): counts the reads that started and ended inside the download."""

    def __init__(self, replica: BrokerProcess, topic: str, expected: set[str]) -> None:
        self.staging = replica.data_dir / reseed.STAGING
        self.endpoint, self.topic, self.expected = replica.endpoint, topic, expected
        self.served = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _downloading(self) -> bool:
        return self.staging.is_dir() and not (self.staging / reseed.MANIFEST).exists()

    def _run(self) -> None:
        while not self.stop.is_set():
            if self._downloading():
                held = held_ids(self.endpoint, self.topic, 1)
                if self._downloading() and self.expected <= held:
                    self.served += 1
            time.sleep(0.002)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


def test_a_replica_too_far_behind_reseeds_itself_serving_reads_meanwhile(tmp_path: Path):
    primary = BrokerProcess(tmp_path / "primary", "--replication", "sync", "--broker-name", "b1", env=SMALL_RING).start()
    replica = BrokerProcess(tmp_path / "replica", "--replica-of", primary.endpoint, "--broker-name", "b1").start()
    conn = Conn(primary.endpoint)
    reads = None
    try:
        conn.create_topic("seed", queues=1)
        wait_for(lambda: _sync_send_ok(conn, "seed"), 15, 0.1, what="the replica to follow")
        before = {e.message_id for e in conn.send_ok(*(message("seed", f"m{i}") for i in range(20)))}
        wait_for(lambda: _holds(replica.endpoint, "seed", 1, before), 15, what="the replica to hold the first sends")
        replica.kill()
        behind = _send_big(conn, "seed", 48)

        reads = ReadsDuringCopy(replica, "seed", before)
        replica.start()
        try:
            wait_for(lambda: _holds(replica.endpoint, "seed", 1, before | behind), 60, 0.2,
                     what="the re-seeded replica to hold every message")
        except AssertionError:
            raise AssertionError("\n".join(["replica:", *replica.log, "primary:", *primary.log])) from None
        reads.close()
        assert reads.served, "no read was served while the copy downloaded"
        wait_for(lambda: _sync_send_ok(conn, "seed"), 20, 0.1, what="sync sends to succeed again")
        log = "\n".join(replica.log)
        assert "re-seeding from" in log and "re-seeded from" in log, log
        assert replica.tracebacks == 0 and primary.tracebacks == 0
        assert not (replica.data_dir / reseed.STAGING).exists()
        assert not list(primary.data_dir.glob(f"{reseed.SNAPSHOT_PREFIX}*"))
        after = {e.message_id for e in conn.send_ok(message("seed", "after"))}
        wait_for(lambda: _holds(replica.endpoint, "seed", 1, after), 15, what="the replica to follow on after the copy")
    finally:
        if reads is not None:
            reads.close()
        conn.close()
        replica.kill()
        primary.kill()


def _fill(ch: grpc.Channel, mib: int) -> None:
    """Give a primary with --auth `mib` MiB of incompressible messages: a copy of it takes many chunks."""
    admin_grpc.AdminStub(ch).CreateTopic(admin.CreateTopicRequest(name="bulk", queue_count=1), metadata=as_admin(),
                                         timeout=10)
    send = svc.MessagingServiceStub(ch).SendMessage
    for _ in range(mib * (1 << 20) // (4 * BODY)):
        reply = send(rpc.SendMessageRequest(messages=[message("bulk", os.urandom(BODY)) for _ in range(4)]),
                     metadata=as_admin(), timeout=20)
        assert reply.status.code == pb.OK, reply.status


def test_only_the_inner_credentials_take_a_copy_one_at_a_time_removed_however_it_ends(tmp_path: Path):
    primary = BrokerProcess(tmp_path / "primary", *AUTH_ARGS, "--replication", "async").start()

    def checkpoints() -> list[Path]:
        return list(primary.data_dir.glob(f"{reseed.SNAPSHOT_PREFIX}*"))

    try:
        with grpc.insecure_channel(primary.endpoint) as ch:
            _fill(ch, 16)
            snapshot = replication_grpc.ReplicationStub(ch).Snapshot

            def header(metadata) -> replication.SnapshotHeader:
                return next(iter(snapshot(replication.SnapshotRequest(), metadata=metadata, timeout=10))).header

            _refused(lambda: header(META), grpc.StatusCode.UNAUTHENTICATED)
            _refused(lambda: header(as_admin()), grpc.StatusCode.PERMISSION_DENIED, "inner credentials")  # a super user too
            assert not checkpoints()

            call = snapshot(replication.SnapshotRequest(), metadata=as_inner(SNAPSHOT), timeout=30)
            listed = next(call).header
            assert listed.total_bytes > 16 << 20 and listed.total_bytes == sum(f.size for f in listed.files)
            assert checkpoints()
            _refused(lambda: header(as_inner(SNAPSHOT)), grpc.StatusCode.RESOURCE_EXHAUSTED, "another replica")
            call.cancel()  # the replica went away mid-copy
            wait_for(lambda: not checkpoints(), 10, what="the checkpoint to be removed")

            first, *chunks = snapshot(replication.SnapshotRequest(), metadata=as_inner(SNAPSHOT), timeout=60)
            got: dict[str, int] = {}
            for c in chunks:
                assert c.ByteSize() <= 1 << 20
                got[c.chunk.name] = got.get(c.chunk.name, 0) + len(c.chunk.data)
            assert got == {f.name: f.size for f in first.header.files if f.size}
            wait_for(lambda: not checkpoints(), 10, what="the checkpoint to be removed")
        assert primary.tracebacks == 0, "\n".join(primary.log)
    finally:
        primary.kill()
