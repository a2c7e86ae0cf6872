"""Finding and tracing across the brokers of a cluster run with --auth: the broker asked fans the
search out with the cluster's inner credentials, and the others answer it."""

from __future__ import annotations

from pathlib import Path

from broker_process import BrokerProcess, NameServerProcess
from test_control_plane import ADMIN, ADMIN_SECRET, AUTH_ARGS, ENV, INNER_ARGS
from waiting import wait_for

AS_ADMIN = ("--access-key", ADMIN, "--secret-key", ADMIN_SECRET)


def test_every_broker_finds_and_traces_a_message_stored_on_one(tmp_path: Path):
    ns = NameServerProcess(*INNER_ARGS).start()
    brokers = [BrokerProcess(tmp_path / n, *AUTH_ARGS, "--broker-name", n, "--namesrv", ns.endpoint, env=ENV).start()
               for n in ("b1", "b2")]
    try:
        created = brokers[0].cli("topic", "create", "auth-find", "--queues", "2", *AS_ADMIN)
        assert created.returncode == 0, created.stderr
        sent = brokers[1].cli("message", "send", "auth-find", "found", *AS_ADMIN)
        assert sent.returncode == 0, sent.stderr
        message_id = sent.stdout.split()[1]
        for b in brokers:  # one of them stored it: the other asks it
            got = wait_for(lambda b=b: (r := b.cli("message", "get", "auth-find", message_id, *AS_ADMIN)).returncode == 0
                           and r, 10, what=f"message get through {b.endpoint}")
            assert "found" in got.stdout
            traced = b.cli("message", "trace", "auth-find", message_id, *AS_ADMIN)
            assert traced.returncode == 0 and "stored" in traced.stdout, traced.stderr
    finally:
        for b in brokers:
            b.kill()
        ns.kill()
