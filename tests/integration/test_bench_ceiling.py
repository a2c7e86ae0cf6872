"""`rockmq bench --scenario ceiling` starts its own null brokers and measures every ceiling;
its JSON carries every figure. A smoke test: tiny counts, no timing assertions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rockmq.bench.options import SCENARIOS

FIGURES = ("messages", "messages_per_s", "requests_per_s", "errors", "client_cpu_pct", "broker_cpu_pct",
           "broker_cpu_us_per_msg", "broker_rss_mib", "broker_rss_peak_mib")


def test_ceiling_scenario_json_has_every_figure(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "rockmq", "bench", "--scenario", "ceiling", "--json", "--duration", "0.5",
                           "--messages", "64", "--rate", "100", "--ceiling-dir", str(tmp_path), "--repeats", "2"],
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    ceiling = json.loads(done.stdout)["ceiling"]
    assert set(ceiling["null"]) == set(SCENARIOS)
    assert set(ceiling["null_fsync"]) == {"produce-batch", "produce-single", "latency", "send-sync"}
    for figures in [*ceiling["null"].values(), *ceiling["null_fsync"].values(), ceiling["stream"]]:
        assert all(name in figures for name in FIGURES), figures
        assert figures["messages"] > 0 and figures["errors"] == 0, figures
    for name in ("latency", "send-sync"):
        assert {"p50_ms", "p99_ms"} <= set(ceiling["null"][name]) & set(ceiling["null_fsync"][name])
    assert "send_batch" in ceiling["null"]["producer-own"] and "send_vs_send_batch" in ceiling["null"]["producer-own"]
    assert all(len(figures["rounds"]) == 2 for figures in ceiling["null"].values())
    assert ceiling["rocksdb"]["messages"] > 0 and "server_cpu_us_per_msg" in ceiling["rocksdb"]
    assert list(tmp_path.iterdir()) == []  # the ceilings' files are gone
