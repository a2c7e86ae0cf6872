"""`rockmq serve --workers N` restarted on the same data directory: with the same N or more shards
every stored message is still readable; with fewer (or a single broker's store under --workers,
or shards under --workers 1) it refuses in one line, starting nothing. `--workers 1` is a single
broker process."""

from __future__ import annotations

import signal
from pathlib import Path

from broker_process import BrokerProcess
from mqwire import Conn, message
from shard_set import ShardSet, children, serve_refused


def _send_to_every_shard(shards: ShardSet, topic: str, per_shard: int) -> set[str]:
    ids: set[str] = set()
    for name, endpoint in shards.shards(topic).items():
        conn = Conn(endpoint)
        try:
            ids |= {e.message_id for e in conn.send_ok(*(message(topic, f"{name}-{i}") for i in range(per_shard)))}
        finally:
            conn.close()
    return ids


def _stored(shards: ShardSet, topic: str) -> set[str]:
    return set().union(*shards.stored_ids(topic).values())


def test_restart_with_the_same_and_more_shards_keeps_every_message(tmp_path: Path):
    data = tmp_path / "data"
    first = ShardSet(data, 2).start()
    try:
        first.cli("topic", "create", "kept", "--queues", "4", check=True)
        sent = _send_to_every_shard(first, "kept", 10)
        assert first.signal_and_wait(signal.SIGTERM) == 0
        for workers in (2, 3):
            again = ShardSet(data, workers).start()
            try:
                assert len(again.shard_pids()) == workers
                assert _stored(again, "kept") == sent
                assert again.signal_and_wait(signal.SIGTERM) == 0
            finally:
                again.kill()
    finally:
        first.kill()
    for fewer in (1, 2):
        refused = serve_refused(data, fewer)
        assert refused.returncode == 1, refused
        assert refused.stderr.strip().count("\n") == 0, refused.stderr
        assert "holds 3 shards" in refused.stderr and "--workers 3 or more" in refused.stderr, refused.stderr
    assert sorted(p.name for p in data.iterdir() if p.is_dir()) == ["shard-0", "shard-1", "shard-2"]


def test_a_single_brokers_store_is_not_taken_for_shards(tmp_path: Path):
    single = BrokerProcess(tmp_path / "one").start()
    try:
        assert children(single.proc.pid) == []  # --workers 1 (the default): no shard processes
    finally:
        single.stop()
    refused = serve_refused(tmp_path / "one", "auto" if _cores() > 1 else 2)
    assert refused.returncode == 1 and "holds a single broker's store" in refused.stderr, refused.stderr
    assert not (tmp_path / "one" / "shard-0").exists()


def _cores() -> int:
    import os

    return os.cpu_count() or 1


def test_a_shard_that_cannot_start_stops_the_server_with_one_line(tmp_path: Path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "shard-1").write_text("not a store")  # shard 1's data directory is a file: it refuses to start
    refused = serve_refused(data, 2)
    assert refused.returncode == 1, refused
    assert refused.stderr.strip().splitlines()[-1] == "rockmq: shard broker-a-1 did not start (its error is above)", \
        refused.stderr
    assert "shard-1 is a file" in refused.stderr
    assert (data / "shard-0").is_dir()  # shard 0 started and was stopped again


def test_a_second_server_on_the_same_data_directory_is_refused(tmp_path: Path):
    data = tmp_path / "data"
    first = ShardSet(data, 2).start()
    try:
        for workers in (2, 3):
            refused = serve_refused(data, workers)
            assert refused.returncode == 1, refused
            assert "Traceback" not in refused.stderr, refused.stderr
            assert refused.stderr.strip().splitlines() == [f"rockmq: the data directory {data} is in use by another process "
                                                           "(another broker?)"], refused.stderr
        assert first.proc is not None and first.proc.poll() is None  # the first one runs on
    finally:
        first.kill()
