"""Benchmark a running rockmq broker: a thin wrapper around `rockmq.bench` (`rockmq bench`).

Start a broker first, then e.g.:
    python bench/broker_bench.py --endpoint 127.0.0.1:8081 --scenario all --broker-pid <PID>
See `--help` for scenarios and options.
"""

import sys

from rockmq.bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
