"""Fuzz every RPC the broker and the name server serve (issue 20 §1.4): INTERNAL_ERROR means a bug in
rockmq, so no request, however malformed, may get it (nor gRPC INTERNAL or UNKNOWN); the servers log
no traceback, and the broker sends and receives as before afterwards.

Short in CI; 100,000 cases under `scripts/chaos`. The cases are seeded (ROCKMQ_FUZZ_SEED, default 1):
a failure names its seed and index, which `python bench/fuzz_bench.py --seed S --replay I` runs alone.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from chaos_scale import scaled
from fuzz_requests import BROKER, Fuzzer, prepare_all, servers, still_serves

CASES = scaled(2500, 100_000)
SEED = int(os.environ.get("ROCKMQ_FUZZ_SEED", "1"))


def test_no_request_gets_internal_error(tmp_path: Path):
    with servers(tmp_path) as procs:
        fuzzer = Fuzzer({k: p.endpoint for k, p in procs.items()}, prepare_all(procs))
        start = time.monotonic()
        asyncio.run(fuzzer.run(SEED, 0, CASES))
        elapsed = time.monotonic() - start
        print(f"\nfuzz: {fuzzer.cases} cases in {elapsed:.1f} s ({fuzzer.cases / elapsed:.0f}/s), seed {SEED}:",
              dict(fuzzer.histogram.most_common()))
        assert fuzzer.cases == CASES
        assert not fuzzer.failures, "\n".join(map(str, fuzzer.failures[:20]))
        assert {k: p.tracebacks for k, p in procs.items()} == dict.fromkeys(procs, 0), [list(p.log)[-80:] for p in procs.values()]
        still_serves(procs[BROKER].endpoint)
        assert all(p.proc is not None and p.proc.poll() is None for p in procs.values())
