"""The storage ceiling: RocksDB (rocksdict, as the store uses it) taking synced WriteBatches of
`--batch` values of `--size` random bytes, one after another, for `--duration` seconds.

Run by `rockmq bench` as `python -m rockmq.bench.rocks_ceiling` in a process of its own, so its CPU
time is its own; prints one JSON object: messages/s, batches/s and CPU µs per message.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from typing import Any

from rocksdict import Options, Rdict, WriteBatch, WriteOptions


def measure(path: str, batch: int, size: int, duration: float) -> dict[str, Any]:
    db = Rdict(path, options=Options(raw_mode=True))
    sync = WriteOptions()
    sync.sync = True
    values = [os.urandom(size) for _ in range(256)]  # random: compression gains nothing
    written = batches = 0
    try:
        cpu, began = time.process_time(), time.monotonic()
        while (now := time.monotonic()) - began < duration:
            wb = WriteBatch(raw_mode=True)
            for i in range(batch):
                wb.put(written.to_bytes(8, "big"), values[(written + i) & 255])
                written += 1
            db.write(wb, sync)
            batches += 1
        seconds, cpu_s = max(now - began, 1e-9), time.process_time() - cpu
    finally:
        db.close()
    return {"messages": written, "seconds": round(seconds, 3), "messages_per_s": round(written / seconds, 1),
            "requests_per_s": round(batches / seconds, 1), "server_cpu_us_per_msg": round(cpu_s * 1e6 / max(written, 1), 2),
            "batch": batch, "size": size}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rockmq.bench.rocks_ceiling", description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--dir", help="where the database goes (default: a temporary directory, removed after)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rockmq-ceiling-", dir=args.dir) as where:
        print(json.dumps(measure(os.path.join(where, "db"), args.batch, args.size, args.duration)))


if __name__ == "__main__":
    main()
