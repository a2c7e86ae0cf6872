"""The benchmark's pure parts: ratio math, percentiles, finding the broker's PID, option parsing."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from rockmq.bench.options import DEFAULT_CONCURRENCY, NEW_LITE, parse_args
from rockmq.bench.probe import (
    broker_sample,
    family,
    find_broker,
    listen_inodes,
    loopback_port,
)
from rockmq.bench.report import combined, per_message_us, percentile, ratio, ratios

TCP_TABLE = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0 100 0 0 10 0
   1: 0100007F:1F91 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0 20 4 30 10 -1
   2: 00000000:1F92 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 333 1 0 100 0 0 10 0
"""


def test_ratio_is_value_over_ceiling_and_unknown_without_both() -> None:
    assert ratio(30.0, 120.0) == 0.25
    assert ratio(None, 1.0) is None
    assert ratio(1.0, None) is None
    assert ratio(1.0, 0.0) is None


def test_ratios_of_rate_cpu_p50_and_p99() -> None:
    broker = {"messages_per_s": 25_000.0, "broker_cpu_us_per_msg": 40.0, "p50_ms": 0.8, "p99_ms": 3.0}
    null = {"messages_per_s": 100_000.0, "broker_cpu_us_per_msg": 10.0, "p50_ms": 0.4, "p99_ms": 1.5}
    assert ratios(broker, null) == {"rate": 0.25, "cpu_per_msg": 4.0, "p50": 2.0, "p99": 2.0}
    assert ratios({**broker, "broker_cpu_us_per_msg": None}, {"messages_per_s": 50_000.0, "broker_cpu_us_per_msg": 10.0}) == {
        "rate": 0.5, "cpu_per_msg": None}


def test_rounds_combine_into_medians_summed_errors_and_highest_peaks() -> None:
    rounds = [{"messages_per_s": 100.0, "broker_cpu_us_per_msg": 30.0, "errors": 0, "broker_rss_peak_mib": 120.0,
               "broker_cpu_pct": None, "error_samples": [], "send_batch": {"messages_per_s": 10.0}},
              {"messages_per_s": 300.0, "broker_cpu_us_per_msg": 10.0, "errors": 2, "broker_rss_peak_mib": 140.0,
               "broker_cpu_pct": 50.0, "error_samples": ["a"], "send_batch": {"messages_per_s": 30.0}},
              {"messages_per_s": 200.0, "broker_cpu_us_per_msg": 20.0, "errors": 1, "broker_rss_peak_mib": 130.0,
               "broker_cpu_pct": 40.0, "error_samples": ["a", "b"], "send_batch": {"messages_per_s": 20.0}}]
    out = combined(rounds)
    assert (out["messages_per_s"], out["broker_cpu_us_per_msg"], out["errors"], out["broker_rss_peak_mib"]) == (200, 20, 3, 140)
    assert out["broker_cpu_pct"] is None  # not known in every round: the first round's
    assert out["error_samples"] == ["a", "b"] and out["send_batch"]["messages_per_s"] == 20
    assert out["rounds"] == rounds
    assert combined(rounds[:1]) == rounds[0]


def test_cpu_per_message_and_percentiles() -> None:
    assert per_message_us(0.5, 10_000) == 50.0
    assert per_message_us(0.5, 0) is None
    assert per_message_us(None, 10) is None
    ordered = [float(i) for i in range(1, 101)]
    assert (percentile(ordered, 0.5), percentile(ordered, 0.99), percentile(ordered, 1.0)) == (50.0, 99.0, 100.0)
    assert percentile([], 0.99) == 0.0


def test_listen_inodes_takes_listening_sockets_of_the_port_only() -> None:
    assert listen_inodes(TCP_TABLE, 0x1F91) == {"111"}
    assert listen_inodes(TCP_TABLE, 0x1F92) == {"333"}
    assert listen_inodes(TCP_TABLE, 1) == set()


def test_loopback_port() -> None:
    assert loopback_port("127.0.0.1:8081") == 8081
    assert loopback_port("localhost:8081") == 8081
    assert loopback_port("[::1]:9") == 9
    assert loopback_port("10.0.0.1:8081") is None
    assert loopback_port("broker.example:8081") is None


def test_find_broker_finds_the_listening_process() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        pid, why = find_broker(f"127.0.0.1:{port}")
        assert pid == os.getpid(), why
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))  # bound, not listening: nobody to find
        pid, why = find_broker(f"127.0.0.1:{unused.getsockname()[1]}")
    assert pid is None and "--broker-pid" in why
    pid, why = find_broker("10.1.2.3:8081")
    assert pid is None and "not a loopback address" in why


def test_find_broker_waits_for_a_broker_still_starting() -> None:
    with socket.socket() as late:
        late.bind(("127.0.0.1", 0))
        timer = threading.Timer(0.3, late.listen)
        timer.start()
        pid, why = find_broker(f"127.0.0.1:{late.getsockname()[1]}", wait_s=10.0)
        timer.join()
    assert pid == os.getpid(), why


def test_broker_sample_and_family_of_this_process() -> None:
    sample = broker_sample(os.getpid())
    assert sample is not None and sample.rss_kib > 0 and sample.cpu_s > 0
    assert os.getpid() in family(os.getpid())
    assert broker_sample(2**22 + 1, Path("/nonexistent")) is None


def fake_process(proc: Path, pid: int, ppid: int, *argv: str) -> None:
    (proc / str(pid)).mkdir(parents=True)
    (proc / str(pid) / "stat").write_text(f"{pid} (python3) S {ppid} 1 1 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 0 0 0")
    (proc / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")


def test_family_is_a_process_and_everything_below_it(tmp_path: Path) -> None:
    fake_process(tmp_path, 10, 1, "bash")
    fake_process(tmp_path, 20, 10, "/venv/bin/python", "/venv/bin/rockmq", "serve", "--workers", "2")
    fake_process(tmp_path, 30, 20, "/venv/bin/python", "-m", "rockmq.workers.shard", "20", "serve")
    fake_process(tmp_path, 31, 20, "/venv/bin/python", "-m", "rockmq.workers.shard", "20", "serve")
    fake_process(tmp_path, 40, 10, "/venv/bin/python", "-m", "rockmq", "serve")
    assert family(20, tmp_path) == {20, 30, 31}
    assert family(10, tmp_path) == {10, 20, 30, 31, 40}
    assert family(30, tmp_path) == {30}


def test_options_defaults_and_no_ceiling() -> None:
    opts = parse_args([], "d")
    assert (opts.scenario, opts.ceiling, opts.batch, opts.concurrency, opts.broker_pid) == ("all", True, 32, None, None)
    assert DEFAULT_CONCURRENCY["produce-batch"] == 64
    opts = parse_args(["--scenario", "consume-own", "--no-ceiling", "--json", "--messages", "10"], "d")
    assert (opts.scenario, opts.ceiling, opts.json, opts.messages) == ("consume-own", False, True, 10)
    assert parse_args(["--scenario", "ceiling"], "d").scenario == "ceiling"
    assert parse_args(["--repeats", "3"], "d").repeats == 3


def test_lite_topics_count_or_new() -> None:
    assert parse_args(["--scenario", "produce-batch"], "d").lite_topics is None
    assert parse_args(["--scenario", "produce-batch", "--lite-topics", "1000"], "d").lite_topics == 1000
    assert parse_args(["--scenario", "latency", "--lite-topics", "new"], "d").lite_topics == NEW_LITE
    assert parse_args(["--scenario", "produce-batch", "--priorities", "10"], "d").priorities == 10


@pytest.mark.parametrize("argv, words", [
    (["--batch", "0"], "--batch must be positive"),
    (["--concurrency", "-1"], "--concurrency must be positive"),
    (["--messages", "0"], "--messages must be positive"),
    (["--repeats", "0"], "--repeats must be positive"),
    (["--scenario", "nope"], "invalid choice"),
    (["--scenario", "produce-batch", "--lite-topics", "0"], "expected a positive count or 'new', not '0'"),
    (["--scenario", "consume", "--lite-topics", "new"], "--lite-topics takes one of the scenarios produce-batch"),
    (["--lite-topics", "10"], "not all"),
    (["--scenario", "produce-batch", "--priorities", "0"], "--priorities must be positive"),
    (["--scenario", "consume", "--priorities", "3"], "--priorities takes one of the scenarios produce-batch"),
    (["--scenario", "produce-batch", "--priorities", "3", "--lite-topics", "new"], "exclude each other"),
    (["--ceiling-dir", "/nonexistent/dir"], "--ceiling-dir /nonexistent/dir: no such directory"),
])
def test_options_refused(argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse_args(argv, "d")
    assert exit_.value.code == 2
    assert words in capsys.readouterr().err
