"""The README's picture of the dashboard (docs/img/dashboard.png): a primary with a replica, a producer
sending at a varying rate for --seconds, a group keeping up and one falling behind; then the overview
in headless Chromium (tests/ui's driver: `cd tests/ui && npm ci` first), 1280 px wide.

    python scripts/readme_screenshot.py [--seconds 180] [--out docs/img/dashboard.png]
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "ui")]

from broker_process import BrokerProcess  # noqa: E402 - tests/ is put on the path above
from browser import Browser  # noqa: E402
from tls_certs import free_port  # noqa: E402

from rockmq.client import Message, Producer, SimpleConsumer  # noqa: E402


def traffic(endpoint: str, until: float) -> None:
    """About 40-120 messages a second to `orders`, in a slow wave; `billing` keeps up, `audit` reads a tenth."""
    with Producer(endpoint) as producer, \
            SimpleConsumer(endpoint, "billing", {"orders": "*"}, await_s=0.05) as billing, \
            SimpleConsumer(endpoint, "audit", {"orders": "*"}, await_s=0.05) as audit:
        n = 0
        while time.time() < until:
            count = int(20 + 10 * math.sin(time.time() / 20))  # every 0.25 s
            producer.send_batch([Message("orders", f'{{"order": {n + i}}}'.encode(), keys=[f"order-{n + i}"])
                                 for i in range(count)])
            n += count
            for consumer, share in ((billing, 32), (audit, 2)):
                for m in consumer.receive(max_messages=share):
                    consumer.ack(m)
            time.sleep(0.25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "dashboard.png")
    args = parser.parse_args()
    http = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        primary = BrokerProcess(Path(tmp) / "primary", "--broker-name", "broker-a", "--replication", "async",
                                "--http-port", str(http)).start()
        replica = BrokerProcess(Path(tmp) / "replica", "--broker-name", "broker-a", "--replica-of", primary.endpoint).start()
        try:
            primary.cli("topic", "create", "orders", "--queues", "8", check=True)
            load = threading.Thread(target=traffic, args=(primary.endpoint, time.time() + args.seconds))
            load.start()
            browser = Browser()
            try:
                page = browser.page(Path(tmp), width=1280, height=900)
                page.goto(f"http://127.0.0.1:{http}/ui/")  # someone looks: the counters are read every 2 s
                load.join()
                page.goto(f"http://127.0.0.1:{http}/ui/")
                shutil.copy(page.screenshot("dashboard"), args.out)
            finally:
                browser.close()
        finally:
            replica.kill()
            primary.stop()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
