"""A replica's reported applied position is checked against what it was sent (issue 20 §3.3): a
follower that reports a batch its stream never carried does not confirm a sync send — else a write
stored on the primary only would be acknowledged to its client as replicated."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
from broker_process import BrokerProcess
from mqwire import Conn, message

from rockmq.protocol import pb, replication, replication_grpc

TIMEOUT_S = 3.0  # the primary's wait for a replica's confirmation


def test_an_ack_beyond_what_was_sent_confirms_nothing(tmp_path: Path):
    primary = BrokerProcess(tmp_path / "primary", "--replication", "sync",
                            env={"ROCKMQ_REPLICATION_TIMEOUT_S": str(TIMEOUT_S)}).start()
    states: queue.Queue[replication.FollowerState | None] = queue.Queue()

    def requests() -> Iterator[replication.FollowerState]:
        while (state := states.get()) is not None:
            yield state

    channel = grpc.insecure_channel(primary.endpoint)  # without --auth, Follow answers anyone
    conn = Conn(primary.endpoint)
    try:
        states.put(replication.FollowerState(applied_seq=0))
        shipped = replication_grpc.ReplicationStub(channel).Follow(requests(), timeout=60)
        first = next(shipped)
        assert first.seq == 1, first
        states.put(replication.FollowerState(applied_seq=1_000_000))  # a lie: the stream carried batch 1 only
        conn.create_topic("t", queues=1)  # unconfirmed too (it waits for no replica), but numbered like a send
        reply = conn.send(message("t", "stored on the primary only"))
        assert reply.status.code == pb.SLAVE_PERSISTENCE_TIMEOUT, reply.status

        states.put(replication.FollowerState(applied_seq=2_000_000))  # the primary says so once per stream
        assert conn.send(message("t", "still unconfirmed")).status.code == pb.SLAVE_PERSISTENCE_TIMEOUT
        assert sum("sent to it: ignored" in line for line in primary.log) == 1, list(primary.log)

        def report_what_arrives() -> None:  # the same follower, now honest, confirms as before
            try:
                for batch in shipped:
                    states.put(replication.FollowerState(applied_seq=batch.seq))
            except grpc.RpcError:
                pass  # the stream ends with the test

        threading.Thread(target=report_what_arrives, daemon=True).start()
        assert conn.send(message("t", "confirmed")).status.code == pb.OK
    finally:
        states.put(None)
        conn.close()
        channel.close()
        primary.kill()
