"""`Store.scan`'s bounds hold for as long as its iteration does. rocksdict's iterator does not keep
the read options that carry them alive (checked: handing out the bare iterator, with the options
dropped at once, read past the range), so the scan is a generator that holds them: one Python step
per entry, kept for that reason."""

from __future__ import annotations

import gc
from pathlib import Path

from rockmq.store.db import Store
from rockmq.store.schema import Family


def test_a_scan_keeps_its_bounds_after_its_options_are_gone(tmp_path: Path) -> None:
    store = Store(tmp_path / "data")
    try:
        batch = store.batch()
        for i in range(200):
            batch.put(Family.META, b"k%03d" % i, b"v%d" % i)
        store.write(batch)
        scans = [store.scan(Family.META, b"k%03d" % lo, b"k%03d" % (lo + 10)) for lo in range(0, 200, 20)]
        gc.collect()
        churn = [bytes([i % 256]) * 64 for i in range(100_000)]  # reuse the memory the options held
        for lo, scan in zip(range(0, 200, 20), scans, strict=True):
            assert [k for k, _ in scan] == [b"k%03d" % i for i in range(lo, lo + 10)]
        limited = store.scan(Family.META, b"k050", b"k100", 3)
        gc.collect()
        assert [k for k, _ in limited] == [b"k050", b"k051", b"k052"]
        del churn
    finally:
        store.close()
