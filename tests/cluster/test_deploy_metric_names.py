"""deploy/prometheus/rules.yml and deploy/grafana/rockmq.json use only metrics /metrics serves
(issue 28 §1): every name in their expressions is a family or a sample of a `--workers` server's
scrape after real traffic (its port serves every shard's series and its own)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families
from scrape import get
from shard_set import ShardSet
from tls_certs import free_port

from rockmq.client import Message, Producer, SimpleConsumer

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NAME = re.compile(r"\b(?:rocketmq|rockmq)_[a-z_]+\b")


SAMPLES = {  # the samples a family of each type has, whether or not it has any yet
    "counter": lambda name: (f"{name}_total",),
    "histogram": lambda name: (f"{name}_bucket", f"{name}_count", f"{name}_sum"),
    "gauge": lambda name: (),
    "unknown": lambda name: (),
}


def used() -> dict[str, set[str]]:
    """Metric names each file's expressions use."""
    rules = yaml.safe_load((DEPLOY / "prometheus" / "rules.yml").read_text())
    in_rules = {n for group in rules["groups"] for rule in group["rules"] for n in NAME.findall(rule["expr"])}
    dashboard = json.loads((DEPLOY / "grafana" / "rockmq.json").read_text())
    in_dashboard = {n for panel in dashboard["panels"] for t in panel["targets"] for n in NAME.findall(t["expr"])}
    return {"rules.yml": in_rules, "rockmq.json": in_dashboard}


def test_every_metric_the_rules_and_dashboard_use_is_served(tmp_path):
    http = free_port()
    server = ShardSet(tmp_path / "data", 2, "--http-port", str(http)).start()
    try:
        with Producer(server.endpoint, timeout=10) as p:
            for i in range(8):
                p.send(Message("deployed", f"m{i}".encode()))
        with SimpleConsumer(server.endpoint, "deployed-g", {"deployed": "*"}, timeout=15, await_s=1) as c:
            for m in c.receive(4):
                c.ack(m)
        reply = get(f"http://127.0.0.1:{http}/metrics")
        assert reply.status == 200
    finally:
        server.kill()
    served = {n for f in text_string_to_metric_families(reply.body) for n in (f.name, *SAMPLES[f.type](f.name))}
    for file, names in used().items():
        assert names, file
        assert names <= served, f"{file} uses metrics /metrics does not serve: {sorted(names - served)}"
