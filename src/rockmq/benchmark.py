"""`python -m rockmq.benchmark`, kept for scripts that ran it: the same as `rockmq bench` (rockmq.bench)."""

import sys

from rockmq.bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
