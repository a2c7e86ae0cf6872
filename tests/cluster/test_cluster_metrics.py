"""The HTTP port of a name server and of `rockmq serve --workers N` (issue 28 §1): a name server's
/metrics counts the brokers registered (for the inner credentials only when it has them); the
supervisor's one port serves every shard's series labelled `broker`, and /readyz reflects every shard."""

from __future__ import annotations

import os
import signal

import pytest
from broker_process import AUTH_ADMIN, AUTH_ARGS, AUTH_SECRET, BrokerProcess, NameServerProcess
from scrape import get, samples, value
from shard_set import ShardSet
from tls_certs import free_port, make_certs
from waiting import wait_for

from rockmq.client import Message, Producer

INNER = ("--inner-access-key", "inner", "--inner-secret-key", "inner-secret-1")


def test_a_name_servers_metrics_count_its_brokers(tmp_path):
    http = free_port()
    ns = NameServerProcess("--http-port", str(http)).start()
    b = BrokerProcess(tmp_path / "b", "--namesrv", ns.endpoint, "--broker-name", "nb1").start()
    try:
        url = f"http://127.0.0.1:{http}"
        wait_for(lambda: value(samples(f"{url}/metrics"), "rockmq_namesrv_brokers") == 1, 15, what="the broker")
        assert value(samples(f"{url}/metrics"), "rockmq_namesrv_broker_registered_seconds", broker="nb1") < 10
        assert get(f"{url}/healthz").status == 200 and get(f"{url}/readyz").status == 200
    finally:
        b.kill()
        ns.kill()


def test_a_name_server_with_inner_credentials_asks_for_them(tmp_path):
    http = free_port()
    ns = NameServerProcess("--http-port", str(http), *INNER).start()
    try:
        url = f"http://127.0.0.1:{http}/metrics"
        assert get(url).status == 401
        assert get(url, "inner", "Not-it-7").status == 401
        assert samples(url, user="inner", secret="inner-secret-1")
        assert get(f"http://127.0.0.1:{http}/readyz").status == 200
    finally:
        ns.kill()


@pytest.fixture
def shards(tmp_path):
    http = free_port()
    s = ShardSet(tmp_path / "data", 2, "--http-port", str(http)).start()
    s.http = f"http://127.0.0.1:{http}"
    yield s
    s.kill()


def test_workers_serve_every_shards_series_and_readiness(shards):
    shards.cli("topic", "create", "spread", "--queues", "8", check=True)
    with Producer(shards.endpoint, timeout=10) as p:  # over every shard's queues
        for i in range(40):
            p.send(Message("spread", f"m{i}".encode()))
    scraped = samples(f"{shards.http}/metrics")
    assert {s.labels["broker"] for s in scraped if s.name == "rockmq_shard_up" and s.value == 1} == {
        "broker-a-0", "broker-a-1"}
    per_shard = {b: value(scraped, "rocketmq_messages_in_total", topic="spread", broker=b)
                 for b in ("broker-a-0", "broker-a-1")}
    assert sum(per_shard.values()) == 40 and all(per_shard.values()), per_shard  # both shards took some
    assert value(scraped, "rockmq_namesrv_brokers", broker="supervisor") == 2
    assert get(f"{shards.http}/readyz").status == 200

    paused = shards.shard_pids()[1]
    os.kill(paused, signal.SIGSTOP)  # alive, answering nothing
    try:
        ready = get(f"{shards.http}/readyz")
        assert ready.status == 503 and "not answering" in ready.body, ready
        scraped = samples(f"{shards.http}/metrics")
        assert sorted(s.value for s in scraped if s.name == "rockmq_shard_up") == [0, 1]
    finally:
        os.kill(paused, signal.SIGCONT)
    wait_for(lambda: get(f"{shards.http}/readyz").status == 200, 15, what="every shard ready again")


def test_workers_over_https_with_auth_hand_the_scrapers_credentials_to_the_shards(tmp_path):
    certs = make_certs(tmp_path / "certs")
    http = free_port()
    server = ShardSet(tmp_path / "data", 2, *certs.serve_args(), "--tls-ca", str(certs.ca), "--http-port", str(http),
                      *AUTH_ARGS).start()
    try:
        url = f"https://127.0.0.1:{http}/metrics"
        assert get(url, ca=certs.ca).status == 401
        assert get(url, AUTH_ADMIN, "Guessed-x9", ca=certs.ca).status == 401
        scraped = samples(url, user=AUTH_ADMIN, secret=AUTH_SECRET, ca=certs.ca)
        assert sorted(s.labels["broker"] for s in scraped if s.name == "rockmq_shard_up" and s.value == 1) == [
            "broker-a-0", "broker-a-1"]
        assert get(f"https://127.0.0.1:{http}/readyz", ca=certs.ca).status == 200
        wait_for(lambda: any("authentication-failed" in line and "http/metrics" in line for line in server.log), 5,
                 what="a shard's audit line")
    finally:
        server.kill()
