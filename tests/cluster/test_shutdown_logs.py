"""Stopping brokers with SIGTERM, as an operator does, logs no traceback: a primary with a replica
following it (its Replication/Follow stream open, sends flowing), in either order."""

from __future__ import annotations

import threading

import pytest
from broker_process import BrokerProcess
from mqwire import Conn, message
from waiting import wait_for


@pytest.mark.parametrize("primary_first", [True, False], ids=["primary-first", "replica-first"])
def test_sigterm_of_a_replicated_pair_logs_no_traceback(tmp_path, primary_first):
    primary = BrokerProcess(tmp_path / "p", "--replication", "async").start()
    replica = BrokerProcess(tmp_path / "r", "--replica-of", primary.endpoint).start()
    stop = threading.Event()

    def send() -> None:
        conn = Conn(primary.endpoint)
        try:
            while not stop.is_set():
                try:
                    conn.send(message("t", "x"))
                except Exception:  # the primary is going away: that is the point
                    stop.wait(0.05)
        finally:
            conn.close()

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        wait_for(lambda: any("follows from batch" in ln for ln in primary.log), 10, what="the replica to follow")
        logs = [primary.log, replica.log]
        for b in (primary, replica) if primary_first else (replica, primary):
            b.stop()
    finally:
        stop.set()
        sender.join(10)
        primary.kill()
        replica.kill()
    for log in logs:
        text = "\n".join(log)
        assert "Traceback" not in text and "ERROR" not in text, text
