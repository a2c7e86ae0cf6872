"""What one WAL fsync costs on this disk, by how the file is written: `fdatasync` latency of a write
that grows the file, of one into space reserved with fallocate(FALLOC_FL_KEEP_SIZE), and of one that
overwrites bytes written earlier (a recycled WAL file, the null broker's fsync file).

    python bench/wal_fsync_bench.py [--dir /tmp] [--writes 2000] [--size 1200] [--rounds 3] [--rate 2000]

Each round runs the kinds interleaved, `--block` writes + fdatasyncs of one kind in turn (so the machine's
other work hits all of them alike), `--rate` writes per second at most. Prints p50/p90/p99/max in ms per kind
and the CPU the syscall took in µs, medians of the rounds (max: the highest); --json adds every round's.
`--size`: bytes per write (a single 1 KiB send's WAL record).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import tempfile
import time
from collections.abc import Callable

from rockmq.bench.report import PERCENTILES, combined, with_percentiles

FALLOC_FL_KEEP_SIZE = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _fallocate_keep_size(fd: int, length: int) -> None:
    if _libc.fallocate(fd, FALLOC_FL_KEEP_SIZE, ctypes.c_long(0), ctypes.c_long(length)) != 0:
        raise OSError(ctypes.get_errno(), "fallocate(FALLOC_FL_KEEP_SIZE)")


class Kind:
    """One file written `size` bytes at a time from offset 0, each write fdatasync'ed."""

    def __init__(self, name: str, path: str, size: int, total: int, prepare: Callable[[int, int], None]) -> None:
        self.name = name
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        prepare(self.fd, total)
        os.fsync(self.fd)
        self.data = os.urandom(size)
        self.at = 0
        self.times: list[float] = []
        self.cpu = 0.0

    def step(self) -> None:
        os.pwrite(self.fd, self.data, self.at)
        self.at += len(self.data)
        start, cpu = time.perf_counter(), time.thread_time()
        os.fdatasync(self.fd)
        self.times.append(time.perf_counter() - start)
        self.cpu += time.thread_time() - cpu

    def close(self) -> None:
        os.close(self.fd)


def _grow(fd: int, total: int) -> None:
    pass


def _overwrite(fd: int, total: int) -> None:
    os.pwrite(fd, bytes(total), 0)


KINDS: dict[str, Callable[[int, int], None]] = {
    "append (file grows)": _grow,
    "append into fallocate(KEEP_SIZE)": _fallocate_keep_size,
    "overwrite (pre-written)": _overwrite,
}


def one_round(where: str, writes: int, size: int, rate: float, block: int) -> dict[str, dict[str, float]]:
    """Every kind writes `writes` times, in turns of `block` writes each: a kind's fsyncs then follow
    one another as a WAL's do (not another file's), and the machine's other work hits every kind alike."""
    with tempfile.TemporaryDirectory(dir=where) as work:
        kinds = [Kind(name, os.path.join(work, f"f{i}"), size, writes * size, prepare)
                 for i, (name, prepare) in enumerate(KINDS.items())]
        gap = 1 / rate
        for _ in range(0, writes, block):
            for kind in kinds:
                next_at = time.perf_counter()
                for _ in range(block):
                    kind.step()
                    next_at += gap
                    pause = next_at - time.perf_counter()
                    if pause > 0:
                        time.sleep(pause)
        for kind in kinds:
            kind.close()
        return {kind.name: with_percentiles({"cpu_us": round(kind.cpu / len(kind.times) * 1e6, 1)},
                                            [t * 1000 for t in kind.times]) for kind in kinds}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where the files go (the broker's data disk)")
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--size", type=int, default=1200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=float, default=2000.0, help="writes per second at most")
    parser.add_argument("--block", type=int, default=250, help="writes of one kind before the next kind's turn")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rounds = [one_round(args.dir, args.writes, args.size, args.rate, args.block) for _ in range(args.rounds)]
    figures = combined(rounds)
    if args.json:
        print(json.dumps({"options": vars(args), "kinds": figures, "load_average": os.getloadavg()[0]}))
        return
    print(f"fdatasync after a {args.size}-byte write, {args.writes} writes x {args.rounds} rounds, in {args.dir}; "
          f"ms, median of rounds (load average {os.getloadavg()[0]:.1f})")
    for name in KINDS:
        print(f"  {name:34s} " + "  ".join(f"{key.removesuffix('_ms')} {figures[name][key]:7.3f}" for key, _ in PERCENTILES)
              + f"  cpu {figures[name]['cpu_us']:5.1f} us")


if __name__ == "__main__":
    main()
