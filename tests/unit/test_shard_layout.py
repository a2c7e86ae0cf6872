"""What `rockmq serve` accepts as a data directory for a number of shards (broker/startup.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rockmq.broker.startup import CannotStart, check_layout, stored_shards
from rockmq.config import ConfigError, load_settings, to_environ


def _shards(root: Path, *indexes: int) -> Path:
    for i in indexes:
        (root / f"shard-{i}").mkdir(parents=True)
    return root


def test_a_new_or_empty_directory_takes_any_number(tmp_path: Path):
    for n in (1, 2, 16):
        check_layout(tmp_path / "absent", n)
        check_layout(tmp_path, n)


def test_shards_read_by_as_many_or_more(tmp_path: Path):
    root = _shards(tmp_path, 0, 1, 2)
    (root / "shard-x").mkdir()  # not a shard
    assert stored_shards(root) == 3
    check_layout(root, 3)
    check_layout(root, 8)
    for fewer in (1, 2):
        with pytest.raises(CannotStart, match="holds 3 shards .* --workers 3 or more"):
            check_layout(root, fewer)


def test_a_single_brokers_store_only_by_one(tmp_path: Path):
    (tmp_path / "CURRENT").write_text("MANIFEST-000001\n")
    check_layout(tmp_path, 1)
    with pytest.raises(CannotStart, match="single broker's store .* --workers 1"):
        check_layout(tmp_path, 2)


def test_workers_setting_auto_and_what_shards_get():
    assert load_settings(overrides={"workers": "auto"}).workers == 0
    assert load_settings(overrides={"workers": "auto"}).shards >= 1
    assert load_settings(environ={"ROCKMQ_WORKERS": "3"}).shards == 3
    with pytest.raises(ConfigError, match="workers"):
        load_settings(overrides={"workers": "many"})
    with pytest.raises(ConfigError, match="replication"):
        load_settings(overrides={"workers": "2", "replication": "sync"})


def test_settings_survive_the_trip_to_a_shard():
    settings = load_settings(overrides={"workers": "4", "retry_ladder_s": "0.5,2", "auto_create_topics": False,
                                        "flush": "async"})
    assert load_settings(environ=to_environ(settings)) == settings
