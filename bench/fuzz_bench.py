"""The request fuzzer (issue 20 §1.4) from the command line: how many cases a second, which statuses
they got, and any case that found INTERNAL_ERROR (or gRPC INTERNAL/UNKNOWN), with its replay.

    PYTHONPATH=$PWD/src python bench/fuzz_bench.py [--cases 100000] [--seed 1] [--concurrency 64]
    PYTHONPATH=$PWD/src python bench/fuzz_bench.py --seed 1 --replay 4711   # one case, its request and outcome

Starts real processes (a broker with --replication async, one with --auth, a name server) in a temporary
directory; tests/fuzz_requests.py makes the cases, tests/chaos/test_chaos_fuzz.py runs it short in CI.
Exits 1 on a finding, a traceback in a server's log, or a broker that no longer sends and receives.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the fuzzer and the process helpers live there

from fuzz_requests import BROKER, Case, Fuzzer, make_case, prepare_all, servers, still_serves  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--first", type=int, default=0, help="index of the first case")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--method", action="append", default=[], help="fuzz only this method (repeatable)")
    parser.add_argument("--replay", type=int, metavar="INDEX", help="run case INDEX of --seed alone and print it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rockmq-fuzz-") as tmp, servers(Path(tmp)) as procs:
        pools = prepare_all(procs)
        fuzzer = Fuzzer({k: p.endpoint for k, p in procs.items()}, pools, args.concurrency, tuple(args.method))
        if args.replay is not None:
            case = make_case(args.seed, args.replay, pools, fuzzer.targets, frozenset(fuzzer.endpoints))
            print(f"{case.target.path} on {case.server}, frames of {[len(f) for f in case.frames]} bytes")
            print(f"metadata: {case.metadata}")
            print(f"mutations: {case.what}")

            def show(c: Case, outcome: str) -> None:
                print(f"outcome: {outcome}")

            asyncio.run(fuzzer.run(args.seed, args.replay, 1, show))
        else:
            start = time.monotonic()
            asyncio.run(fuzzer.run(args.seed, args.first, args.cases))
            elapsed = time.monotonic() - start
            print(f"{fuzzer.cases} cases in {elapsed:.1f} s: {fuzzer.cases / elapsed:.0f} cases/s (seed {args.seed})")
            for outcome, n in fuzzer.histogram.most_common():
                print(f"  {n:8d}  {outcome}")
        for f in fuzzer.failures:
            print("FAIL", f)
        tracebacks = {k: p.tracebacks for k, p in procs.items() if p.tracebacks}
        if tracebacks:
            print("tracebacks in the servers' logs:", tracebacks)
            for k, p in procs.items():
                print(f"--- {k}\n" + "\n".join(list(p.log)[-60:]))
        still_serves(procs[BROKER].endpoint)
        print("the broker still sends and receives")
        return 1 if fuzzer.failures or tracebacks else 0


if __name__ == "__main__":
    sys.exit(main())
