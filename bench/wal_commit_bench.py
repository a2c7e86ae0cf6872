"""The broker's WAL group commit (store/db.py `GroupCommit` over a RocksDB opened with the broker's options),
one 1.1 KiB write per commit, two questions answered in one run:

    PYTHONPATH=$PWD/src python bench/wal_commit_bench.py [--dir /tmp] [--writes 2000] [--rounds 3] [--rate 800]

1. fresh against recycled WAL: two databases interleaved write by write, one writing its first WAL file
   (it grows), one whose current WAL file is a recycled one (overwritten in place); commit latency and
   the WAL fsync's (`flush_wal(True)`) p50/p90/p99/max in ms, over all rounds.
2. does a write that arrives while an fsync runs get the next one at once? Writes at `--rate` × 2.5 per
   second with Poisson arrivals, one task each; per write: the gap between the running fsync's end and
   the start of the next, whether that next fsync covered it, and the wait from its fsync's end until
   the writer resumed on the event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import glob
import os
import random
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from rocksdict import Cache, Rdict, WriteOptions

from rockmq.bench.report import PERCENTILES, with_percentiles
from rockmq.config import Settings
from rockmq.store.db import GroupCommit, Memory, _options
from rockmq.units import MiB

BODY = 1100
FILLER_MIB = 40  # written and flushed away so that a WAL file of this size waits to be recycled


@dataclass
class Wal:
    """A database with the broker's options and a group commit whose fsyncs are timed."""

    path: Path
    db: Rdict = field(init=False)
    commit: GroupCommit = field(init=False)
    spans: list[tuple[float, float]] = field(default_factory=list)  # fsync start, end (perf_counter)
    latencies: list[float] = field(default_factory=list)
    _nosync: WriteOptions = field(default_factory=WriteOptions)

    def __post_init__(self) -> None:
        memory = Memory(Settings.store_memory_mib * MiB)
        self.db = Rdict(str(self.path), options=_options(memory, Cache(memory.block_cache)))
        self._nosync.sync = False
        self.commit = GroupCommit(self._flush, None)

    def _flush(self) -> None:
        start = time.perf_counter()
        self.db.flush_wal(True)
        self.spans.append((start, time.perf_counter()))

    def recycle(self) -> None:
        """Make the current WAL file a recycled one: fill a WAL file, flush it away (it waits to be
        reused), then flush once more so that RocksDB switches to it. (Not a third time: a WAL file
        is truncated to what it holds when RocksDB closes it, so the next one reused would be empty.)"""
        filler = os.urandom(MiB)
        for i in range(FILLER_MIB):
            self.db.put(b"filler%04d" % i, filler, self._nosync)
        for i in range(2):
            self.db.delete_range(b"filler", b"fillet")
            self.db.put(b"switch", b"%d" % i, self._nosync)
            self.db.flush()

    def wal_mib(self) -> dict[str, int]:
        return {os.path.basename(p): os.path.getsize(p) // MiB for p in glob.glob(str(self.path / "*.log"))}

    async def write(self, i: int, body: bytes) -> None:
        start = time.perf_counter()
        self.db.put(b"k%010d" % i, body, self._nosync)
        await self.commit.sync()
        self.latencies.append(time.perf_counter() - start)

    def close(self) -> None:
        self.commit.stop()
        self.db.close()


def _line(name: str, seconds: list[float]) -> str:
    figures = with_percentiles({}, [s * 1000 for s in seconds])
    return f"{name:28s} " + "  ".join(f"{key.removesuffix('_ms')} {figures[key]:7.3f}" for key, _ in PERCENTILES)


async def _interleaved(wals: list[Wal], writes: int, rate: float) -> None:
    body, next_at = os.urandom(BODY), time.perf_counter()
    for i in range(writes):
        for wal in wals:
            await wal.write(i, body)
        next_at += 1 / rate
        await asyncio.sleep(max(0.0, next_at - time.perf_counter()))


async def _arrivals(wal: Wal, writes: int, rate: float) -> list[tuple[float, float]]:
    body, done = os.urandom(BODY), []

    async def one(i: int) -> None:
        start = time.perf_counter()
        await wal.write(i, body)
        done.append((start, time.perf_counter()))

    tasks = []
    for i in range(writes):
        tasks.append(asyncio.ensure_future(one(i)))
        await asyncio.sleep(random.expovariate(rate))
    await asyncio.gather(*tasks)
    return done


def fresh_against_recycled(where: str, writes: int, rounds: int, rate: float) -> None:
    kinds = {"fresh WAL (grows)": False, "recycled WAL (overwritten)": True}
    latencies: dict[str, list[float]] = {name: [] for name in kinds}
    fsyncs: dict[str, list[float]] = {name: [] for name in kinds}
    for _ in range(rounds):
        dirs = {name: Path(tempfile.mkdtemp(dir=where, prefix="wal-commit-")) for name in kinds}
        wals = {name: Wal(dirs[name]) for name in kinds}
        for name, recycled in kinds.items():
            if recycled:
                wals[name].recycle()
        wals_before = {name: wal.wal_mib() for name, wal in wals.items()}
        for wal in wals.values():
            wal.spans.clear()
        asyncio.run(_interleaved(list(wals.values()), writes, rate))
        for name, wal in wals.items():
            latencies[name] += wal.latencies
            fsyncs[name] += [end - start for start, end in wal.spans]
            wal.close()
            shutil.rmtree(dirs[name])
    print(f"1. one write per commit at {rate:.0f}/s each, interleaved, {rounds} x {writes}; ms over all rounds "
          f"(WAL files at the start, MiB: {wals_before})")
    for name in kinds:
        print("  " + _line(f"{name}: commit", latencies[name]))
        print("  " + _line(f"{name}: fsync", fsyncs[name]))


def during_an_fsync(where: str, writes: int, rate: float) -> None:
    work = Path(tempfile.mkdtemp(dir=where, prefix="wal-commit-"))
    wal = Wal(work)
    try:
        done = asyncio.run(_arrivals(wal, writes, rate))
    finally:
        wal.close()
        shutil.rmtree(work)
    starts = [start for start, _ in wal.spans]
    gaps, resumed, covered, arrived_during = [], [], 0, 0
    for start, end in done:
        k = bisect.bisect_left(starts, start)  # the first fsync that began after the write
        if k == 0 or k >= len(wal.spans) or wal.spans[k - 1][1] <= start:
            continue  # no fsync was running when it arrived
        arrived_during += 1
        gaps.append(wal.spans[k][0] - wal.spans[k - 1][1])
        if end >= wal.spans[k][1] and (k + 1 == len(wal.spans) or end < wal.spans[k + 1][1]):
            covered += 1
            resumed.append(end - wal.spans[k][1])
    print(f"2. {writes} writes, Poisson arrivals at {rate:.0f}/s: {arrived_during} arrived while an fsync ran; "
          f"{covered} of them were answered by the next fsync; ms")
    print("  " + _line("running fsync end -> next", gaps))
    print("  " + _line("its fsync end -> resumed", resumed))
    print("  " + _line("fsync", [end - start for start, end in wal.spans]))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where the databases go (the broker's data disk)")
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=float, default=800.0)
    args = parser.parse_args()
    fresh_against_recycled(args.dir, args.writes, args.rounds, args.rate)
    during_an_fsync(args.dir, args.writes * 2, args.rate * 2.5)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
