"""No acknowledgement without the replica (issue 33 §1): under sync replication, while the replica is
down, producers that retry (rockmq's and the official Python one, each with its own timeouts and
retries, resending the same message id) get no send acknowledged; then the primary is killed, the
replica started and promoted, and every message ever acknowledged is on it."""

from __future__ import annotations

import time

from broker_process import BrokerProcess
from chaos_scale import scaled
from mqwire import Conn, held_ids, message
from sending import OfficialSending, Sending
from waiting import wait_for

TOPIC = "outage"
OUTAGE_S = scaled(5, 15)
SETTLE_S = 0.5  # a send the replica confirmed just before it died may be answered this much later


def test_no_send_is_acknowledged_while_the_replica_is_down_and_none_is_lost_at_failover(tmp_path):
    primary = BrokerProcess(tmp_path / "primary", "--replication", "sync", "--broker-name", "b1").start()
    replica = BrokerProcess(tmp_path / "replica", "--replica-of", primary.endpoint, "--broker-name", "b1").start()
    producers: list[Sending | OfficialSending] = []
    try:
        conn = Conn(primary.endpoint)
        conn.create_topic(TOPIC, queues=2)
        first = conn.send_ok(message(TOPIC, "first"))[0].message_id
        conn.close()
        wait_for(lambda: first in held_ids(replica.endpoint, TOPIC, 2), 15, what="the replica to follow")
        producers = [Sending(primary.endpoint, TOPIC, request_timeout=3.0), OfficialSending(primary.endpoint, TOPIC)]
        wait_for(lambda: all(len(p.acked) >= 20 for p in producers), 30, what="both producers sending")

        replica.kill()
        down_at = time.monotonic()
        time.sleep(OUTAGE_S)  # the producers time out and retry, the same message ids again and again
        primary.kill()
        for p in producers:
            p.stop()
        during = [mid for p in producers for at, mid in p.acked if at > down_at + SETTLE_S]
        assert not during, f"{len(during)} sends acknowledged with no replica alive"

        replica.start()
        out = replica.cli("broker", "promote")
        assert out.returncode == 0, out.stdout + out.stderr
        acked = {mid for p in producers for _, mid in p.acked} | {first}
        held = held_ids(replica.endpoint, TOPIC, 2)
        lost = acked - held
        assert not lost, f"{len(lost)} of {len(acked)} acknowledged messages are missing on the promoted replica"
        print(f"{len(acked)} acknowledged before the outage, all on the promoted replica; "
              f"{sum(len(p.failed) if isinstance(p.failed, list) else p.failed for p in producers)} sends failed")
    finally:
        for p in producers:
            p.stop()
        replica.kill()
        primary.kill()
