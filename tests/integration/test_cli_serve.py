"""`rockmq serve` refuses ordinary mistakes with one line and a non-zero exit, no traceback, and
leaves no data directory behind; `rockmq bench --broker-pid` refuses a PID that is not running, and
`rockmq bench` without a broker at its endpoint says so."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest


def rockmq(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rockmq", *args], capture_output=True, text=True, timeout=60, check=False)


def assert_refused(result: subprocess.CompletedProcess[str], code: int, *fragments: str) -> None:
    out = result.stdout + result.stderr
    assert result.returncode == code, f"exit {result.returncode}, want {code}\n{out}"
    assert "Traceback" not in out, out
    last = result.stderr.strip().splitlines()[-1]
    for f in fragments:
        assert f in last, last


def serve(data_dir: Path, *args: str, host: str = "127.0.0.1", port: int = 0) -> subprocess.CompletedProcess[str]:
    return rockmq("serve", "--host", host, "--port", str(port), "--data-dir", str(data_dir), *args)


def test_port_in_use(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert_refused(serve(tmp_path / "data", port=port), 1, f"127.0.0.1:{port}", "in use")
        assert_refused(rockmq("namesrv", "--host", "127.0.0.1", "--port", str(port)), 1, f"127.0.0.1:{port}", "in use")
    assert not (tmp_path / "data").exists()


def test_address_not_of_this_machine(tmp_path):
    # 192.0.2.1 is a documentation address (RFC 5737): binding it fails at once, nothing is sent.
    assert_refused(serve(tmp_path / "data", host="192.0.2.1"), 1, "192.0.2.1", "not an address of this machine")
    assert not (tmp_path / "data").exists()


def test_a_timeout_that_is_not_a_number(tmp_path):
    assert_refused(serve(tmp_path / "data", "--idle-connection-timeout", "nan"), 2, "idle_connection_timeout_s")
    assert not (tmp_path / "data").exists()
    assert_refused(rockmq("namesrv", "--host", "127.0.0.1", "--port", "0", "--broker-timeout", "nan"), 2, "--broker-timeout")


def test_data_dir_is_a_file(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    assert_refused(serve(tmp_path / "file"), 1, "is a file")
    assert_refused(serve(tmp_path / "file" / "data"), 1, "is a file")


def test_second_broker_on_the_same_data_dir(fresh_broker):
    assert_refused(serve(fresh_broker.data_dir), 1, str(fresh_broker.data_dir), "in use")
    assert fresh_broker.proc is not None and fresh_broker.proc.poll() is None  # the first one runs on


def _garble_current(data: Path) -> None:
    (data / "CURRENT").write_text("garbage\n")


def _truncate_manifest(data: Path) -> None:
    manifest = next(data.glob("MANIFEST-*"))
    manifest.write_bytes(manifest.read_bytes()[:10])


def _garble_sst(data: Path) -> None:
    sst = next(data.glob("*.sst"))
    sst.write_bytes(b"\xde\xad" * (sst.stat().st_size // 4))


@pytest.mark.parametrize("corrupt", [_garble_current, _truncate_manifest, _garble_sst])
def test_corrupt_store(fresh_broker, corrupt):
    fresh_broker.stop()
    corrupt(fresh_broker.data_dir)
    assert_refused(serve(fresh_broker.data_dir), 1, "cannot open the store", str(fresh_broker.data_dir), "Corruption")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_unwritable_data_dir(tmp_path, workers):
    """Not writable by the broker (root writes anywhere: it runs without that privilege here); a
    supervisor of shards says it in a single broker's words."""
    unwritable = tmp_path / "ro"
    unwritable.mkdir(mode=0o555)
    unprivileged = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    for data, refusal in ((unwritable, "cannot open the store in"), (unwritable / "data", "cannot make the data directory")):
        result = subprocess.run([*unprivileged, sys.executable, "-m", "rockmq", "serve", "--host", "127.0.0.1", "--port", "0",
                                 "--data-dir", str(data), "--workers", workers],
                                capture_output=True, text=True, timeout=60, check=False)
        assert_refused(result, 1, f"rockmq: {refusal} {data}: Permission denied")


@pytest.mark.parametrize("args", [("--port", "70000"), ("--flush", "never"), ("--log-level", "LOUD")])
def test_bad_settings(tmp_path, args):
    assert_refused(serve(tmp_path / "data", *args), 2)
    assert not (tmp_path / "data").exists()


def test_replica_of_a_broker_name_without_a_name_server(tmp_path):
    """A broker name is found only through name servers: without one the replica would wait forever."""
    assert_refused(serve(tmp_path / "data", "--replica-of", "broker-a"), 2, "'broker-a'", "--namesrv", "HOST:PORT")
    assert not (tmp_path / "data").exists()


def test_name_server_bad_log_level():
    assert_refused(rockmq("namesrv", "--port", "0", "--log-level", "LOUD"), 2, "LOUD")


def test_bench_without_a_broker_says_so_in_one_line():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        assert_refused(rockmq("bench", "--endpoint", f"127.0.0.1:{port}", "--scenario", "produce-batch"), 1,
                       f"no broker answers at 127.0.0.1:{port}")


def test_bench_broker_pid_not_running():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert_refused(rockmq("bench", "--broker-pid", str(gone.pid), "--duration", "1"), 2, str(gone.pid), "no such process")
