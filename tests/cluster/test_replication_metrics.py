"""A primary's /metrics says how far each replica is behind, in messages and in seconds (issue 28 §1):
a paused replica falls behind, and is caught up again once it runs."""

from __future__ import annotations

import os
import signal
import time

import pytest
from broker_process import BrokerProcess
from mqwire import Conn, message
from scrape import samples, value
from tls_certs import free_port
from waiting import wait_for


@pytest.fixture
def pair(tmp_path):
    http = free_port()
    primary = BrokerProcess(tmp_path / "primary", "--replication", "async", "--broker-name", "b1",
                            "--http-port", str(http)).start()
    primary.metrics_url = f"http://127.0.0.1:{http}/metrics"
    replica = BrokerProcess(tmp_path / "replica", "--replica-of", primary.endpoint, "--broker-name", "b1").start()
    yield primary, replica
    replica.kill()
    primary.kill()


def _lag(primary: BrokerProcess) -> tuple[float | None, float | None]:
    scraped = samples(primary.metrics_url)
    return value(scraped, "rockmq_replica_lag_messages"), value(scraped, "rockmq_replica_lag_seconds")


def test_a_paused_replica_lags_in_messages_and_seconds(pair):
    primary, replica = pair
    wait_for(lambda: _lag(primary) == (0, 0), 15, what="the replica to follow")
    os.kill(replica.proc.pid, signal.SIGSTOP)
    try:
        conn = Conn(primary.endpoint)
        try:
            for i in range(5):
                conn.send_ok(message("lagging", f"m{i}"))
        finally:
            conn.close()
        time.sleep(1.5)
        wait_for(lambda: _lag(primary)[0] == 5 and (_lag(primary)[1] or 0) >= 1, 15, what="the lag to show")
    finally:
        os.kill(replica.proc.pid, signal.SIGCONT)
    wait_for(lambda: _lag(primary) == (0, 0), 20, what="the replica to catch up")
