"""The official Python producer across the failover of a coordinated group (issue 30 §4): it holds a
route naming the primary when the primary is killed (kill -9), and resumes sending at the next primary
by its own means — its retries, then its route refresh (every 30 s) — with no help from the test.
The time it took is printed. Slow (the client's refresh period): `scripts/chaos`."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from chaos_scale import FULL
from coordinated_group import in_sync_joined, running_group, serving_primary

sys.path.insert(0, str(Path(__file__).parent.parent / "compat"))
from official_client import producer, send  # noqa: E402

TOPIC = "official-failover"
ROUTE_REFRESH_S = 30  # the official clients' route refresh period

pytestmark = pytest.mark.skipif(not FULL, reason="scripts/chaos only (the client refreshes routes slowly)")


def test_the_official_producer_resumes_at_the_new_primary(etcd, tmp_path: Path):
    with running_group(etcd.url, tmp_path) as members:
        old = serving_primary(members)
        old.cli("topic", "create", TOPIC, "--queues", "2", check=True)
        in_sync_joined(old)
        with producer(";".join(m.endpoint for m in members), TOPIC) as p:
            for i in range(10):
                send(p, TOPIC, f"before-{i}".encode())
            old.kill()
            killed = time.monotonic()
            failed = 0
            while time.monotonic() - killed < ROUTE_REFRESH_S + 15:
                try:
                    send(p, TOPIC, b"after")
                    break
                except Exception:  # noqa: BLE001 -- the official client's errors, whatever they are
                    failed += 1
                    time.sleep(0.2)
            else:
                raise AssertionError("the official producer did not resume")
            took = time.monotonic() - killed
        print(f"\nofficial producer: first send after kill -9 acknowledged in {took:.1f} s ({failed} sends failed first)")
