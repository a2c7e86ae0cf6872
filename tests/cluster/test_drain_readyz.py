"""/readyz while a broker of a cluster drains (broker/server.py `serve`): the HTTP port stays open
through the drain and says why the broker is not ready, so a load balancer polling it stops sending
before the gRPC port closes."""

from __future__ import annotations

import signal
from pathlib import Path

from broker_process import BrokerProcess, NameServerProcess
from scrape import get
from tls_certs import free_port
from waiting import wait_for


def test_readyz_says_draining_until_the_port_closes(tmp_path: Path):
    ns = NameServerProcess().start()
    http = free_port()
    b = BrokerProcess(tmp_path / "b1", "--broker-name", "b1", "--namesrv", ns.endpoint, "--http-port", str(http),
                      "--drain-timeout", "10", env={"ROCKMQ_NAMESRV_INTERVAL_S": "0.3"}).start()
    try:
        url = f"http://127.0.0.1:{http}/readyz"
        wait_for(lambda: get(url).status == 200, 15, 0.1, what="the broker ready")
        assert b.proc is not None
        b.proc.send_signal(signal.SIGTERM)
        draining = wait_for(lambda: (r := get(url)).status == 503 and r, 5, 0.02, what="/readyz not ready")
        assert "draining" in draining.body.splitlines()
        assert b.proc.wait(15) == 0
    finally:
        b.kill()
        ns.kill()
