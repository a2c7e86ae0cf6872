"""The HTTP port (issue 28 §1, §2): /metrics, /healthz, /readyz on --http-port; unknown paths 404 and
wrong methods 405; HTTPS with the gRPC port's certificate; with --auth, /metrics needs HTTP Basic with
a super user or a user granted Get on Cluster (refusals audited), while the probes stay open."""

from __future__ import annotations

import re
import ssl
import urllib.error
from pathlib import Path

import pytest
from acl_setup import grant
from broker_process import BrokerProcess
from scrape import get, samples
from tls_certs import free_port, make_certs
from waiting import wait_for

from rockmq.auth.users import Users
from rockmq.plumbing.channels import open_channel


def _broker(data_dir: Path, *args: str) -> tuple[BrokerProcess, int]:
    http = free_port()
    return BrokerProcess(data_dir, "--http-port", str(http), *args).start(), http


def test_probes_metrics_and_bad_paths(tmp_path):
    b, http = _broker(tmp_path / "data")
    try:
        base = f"http://127.0.0.1:{http}"
        assert get(f"{base}/healthz") .status == 200 and get(f"{base}/healthz").body == "ok\n"
        assert get(f"{base}/readyz").status == 200
        names = {s.name for s in samples(f"{base}/metrics")}
        assert {"rocketmq_topic_number", "rocketmq_storage_size", "process_cpu_seconds_total"} <= names
        assert get(f"{base}/nope").status == 404
        assert get(f"{base}/metrics", method="POST").status == 405
        assert any("HTTP port on http://127.0.0.1:" in line for line in b.log)
    finally:
        b.stop()


def test_a_port_taken_is_one_line_and_no_start(tmp_path):
    b, http = _broker(tmp_path / "a")
    try:
        other = BrokerProcess(tmp_path / "b", "--http-port", str(http))
        with pytest.raises(RuntimeError) as e:
            other.start(timeout=20)
        assert f"cannot listen on 127.0.0.1:{http} (--http-port)" in str(e.value)
        assert other.tracebacks == 0
    finally:
        b.stop()


def test_https_with_the_grpc_ports_certificate(tmp_path):
    certs = make_certs(tmp_path / "certs")
    b, http = _broker(tmp_path / "data", *certs.serve_args())
    try:
        assert get(f"https://127.0.0.1:{http}/healthz", ca=certs.ca).status == 200
        assert samples(f"https://127.0.0.1:{http}/metrics", ca=certs.ca)
        with pytest.raises(urllib.error.URLError) as e:  # not trusted without the CA
            get(f"https://127.0.0.1:{http}/healthz")
        assert isinstance(e.value.reason, ssl.SSLCertVerificationError)
    finally:
        b.kill()


def test_basic_auth_guards_metrics_only_and_refusals_are_audited(tmp_path):
    data = tmp_path / "data"
    users = Users(data)
    users.create("admin", "s3cret-admin", super_user=True)
    users.create("watcher", "watcher-secret")
    users.create("nobody", "nobody-secret")
    b, http = _broker(data, "--auth")
    try:
        with open_channel(b.endpoint) as channel:
            grant(channel, "watcher", "Cluster", "Get")
        url = f"http://127.0.0.1:{http}/metrics"
        missing = get(url)
        assert missing.status == 401 and missing.headers["WWW-Authenticate"] == 'Basic realm="rockmq"'
        assert get(url, "admin", "Guessed-x9").status == 401
        assert get(url, "nobody", "nobody-secret").status == 403
        assert samples(url, user="admin", secret="s3cret-admin")
        assert samples(url, user="watcher", secret="watcher-secret")
        assert get(f"http://127.0.0.1:{http}/healthz").status == 200
        assert get(f"http://127.0.0.1:{http}/readyz").status == 200

        def audited() -> bool:
            lines = [line for line in b.log if "http/metrics" in line]
            return (any("authentication-failed" in line and 'who="admin"' in line for line in lines)
                    and any("authorization-refused" in line and 'who="nobody"' in line for line in lines))

        wait_for(audited, 5, what="the refusals in the audit log")
        assert not any("Guessed-x9" in line for line in b.log)  # never the secret
    finally:
        b.kill()


def test_port_zero_takes_a_free_port_and_says_which(tmp_path):
    b = BrokerProcess(tmp_path / "data", "--http-port", "0").start()
    try:
        def said() -> re.Match[str] | None:
            return next((m for line in b.log if (m := re.search(r"HTTP port on http://127\.0\.0\.1:(\d+) ", line))), None)

        wait_for(lambda: said() is not None, 5, what="the start line naming the HTTP port")
        assert get(f"http://127.0.0.1:{said().group(1)}/healthz").status == 200
    finally:
        b.stop()
