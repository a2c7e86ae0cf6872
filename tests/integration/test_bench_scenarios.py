"""Every `rockmq bench` scenario runs against a real broker (tiny counts, no timing assertions):
the JSON carries each one's figures, the broker found by its listening port, and its RSS."""

from __future__ import annotations

import json

from rockmq.bench.options import SCENARIOS


def test_every_scenario_against_a_broker(broker, unique) -> None:
    topic, group = unique("bench"), unique("bench-g")
    done = broker.cli("bench", "--scenario", "all", "--no-ceiling", "--json", "--duration", "0.5", "--messages", "300",
                      "--rate", "200", "--topic", topic, "--group", group, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["broker_pid"] == broker.proc.pid and report["ceiling"] == {}
    assert set(report["scenarios"]) == set(SCENARIOS)
    for name, figures in report["scenarios"].items():
        assert figures["errors"] == 0 and figures["messages"] > 0, (name, figures)
        assert figures["broker_rss_peak_mib"] > 0 and "broker_cpu_us_per_msg" in figures, (name, figures)
    for name in ("consume", "consume-batch", "consume-own", "pull-own"):
        assert report["scenarios"][name]["messages"] >= 300, report["scenarios"][name]
