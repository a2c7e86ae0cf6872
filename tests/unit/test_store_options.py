"""The RocksDB options docs/storage.md describes are the ones a broker's database runs with:
read back from the OPTIONS file RocksDB writes into the data directory, and from its properties."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from rockmq.config import ConfigError, Settings
from rockmq.store import keys
from rockmq.store.db import (
    DEFAULT_L0_COMPACTION_TRIGGER,
    L0_COMPACTION_TRIGGER,
    LEVEL_BASE,
    MAX_TOTAL_WAL,
    MEMTABLE_BLOOM_RATIO,
    RECYCLED_WALS,
    SMALL_LEVEL_BASE,
    MiB,
    Store,
)
from rockmq.store.schema import Family


def options_file(data_dir: Path) -> dict[str, dict[str, str]]:
    """The newest OPTIONS file: `[section]` -> {option: value}."""
    newest = max(data_dir.glob("OPTIONS-*"), key=lambda p: int(p.name.split("-")[1]))
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in newest.read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
        elif "=" in line and not line.startswith("#"):
            name, _, value = line.partition("=")
            current[name] = value
    return sections


@pytest.mark.parametrize("memory_mib", [Settings.store_memory_mib, 48])
def test_options_are_applied(tmp_path: Path, memory_mib: int) -> None:
    store = Store(tmp_path / "data", memory_mib=memory_mib)
    try:
        assert store.property(Family.DEDUP, "block-cache-capacity") == memory_mib * MiB // 3
    finally:
        store.close()
    opts = options_file(tmp_path / "data")
    db = opts["DBOptions"]
    memtables = memory_mib * MiB * 2 // 3
    assert int(db["db_write_buffer_size"]) == memtables
    assert int(db["max_total_wal_size"]) == MAX_TOTAL_WAL
    assert int(db["bytes_per_sync"]) == MiB
    assert int(db["max_background_jobs"]) == 2
    # not sanitized away (RocksDB drops recycling under recovery modes it cannot serve)
    assert int(db["recycle_log_file_num"]) == RECYCLED_WALS
    assert db["wal_recovery_mode"] == "kPointInTimeRecovery"
    for family in Family:
        cf, table = opts[f'CFOptions "{family}"'], opts[f'TableOptions/BlockBasedTable "{family}"']
        big = family in (Family.LOG, Family.TIMERS)
        assert int(cf["write_buffer_size"]) == memtables // (4 if big else 16)
        assert cf["level_compaction_dynamic_level_bytes"] == "true"
        base = LEVEL_BASE.get(family, SMALL_LEVEL_BASE)
        assert int(cf["max_bytes_for_level_base"]) == base
        assert int(cf["target_file_size_base"]) < base  # several tables per level: compactions stay small
        trigger = L0_COMPACTION_TRIGGER.get(family, DEFAULT_L0_COMPACTION_TRIGGER)
        assert int(cf["level0_file_num_compaction_trigger"]) == trigger
        assert trigger < int(cf["level0_slowdown_writes_trigger"])  # waiting for more tables never slows writes
        assert cf["enable_blob_files"] == ("true" if big else "false")
        assert table["cache_index_and_filter_blocks"] == "true"
        bloom = family in (Family.DEDUP, Family.CHECKPOINTS, Family.LITE)
        assert table["filter_policy"].startswith("bloomfilter") == bloom, family
        assert (float(cf["memtable_prefix_bloom_size_ratio"]) == MEMTABLE_BLOOM_RATIO) == bloom, family
        assert cf["memtable_whole_key_filtering"] == ("true" if bloom else "false"), family


def test_shards_share_the_store_memory() -> None:
    assert Settings().store_memory_mib == 192
    assert Settings(workers=2).shard_settings().store_memory_mib == 96
    assert Settings(workers=1).shard_settings().store_memory_mib == 192
    assert Settings(workers=64).shard_settings().store_memory_mib == 16  # the floor
    with pytest.raises(ConfigError, match="store_memory_mib must be at least 16"):
        Settings(store_memory_mib=8)


def test_a_compacted_range_delete_gives_the_disk_back(tmp_path: Path) -> None:
    """What retention relies on: a range delete hides records, the (shared, non-exclusive)
    compaction of that range then removes their tables and blob files."""
    store = Store(tmp_path / "data", flush="async")
    try:
        for start in range(0, 8000, 1000):
            batch = store.batch()
            for offset in range(start, start + 1000):
                batch.put(Family.LOG, keys.log_key(1, offset % 4, offset), os.urandom(4096))
            store.write(batch)
        everything = (keys.log_key(1, 0, 0), keys.log_key(2, 0, 0))
        asyncio.run(store.compact(Family.LOG, *everything))  # flushed: the bodies are in blob files
        held = store.size(Family.LOG)
        assert held > 8000 * 4096
        batch = store.batch()
        for queue in range(4):
            batch.delete_range(Family.LOG, keys.log_key(1, queue, 0), keys.log_key(1, queue, 7000))
        store.write(batch)
        asyncio.run(store.compact(Family.LOG, *everything))
        assert store.size(Family.LOG) < held * 0.2
        assert len(list(store.scan(Family.LOG, *everything))) == 1000
    finally:
        store.close()
