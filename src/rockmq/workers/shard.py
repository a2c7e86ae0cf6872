"""A shard's process: `python -m rockmq.workers.shard SUPERVISOR_PID serve ...` is `rockmq serve ...`
that stops (SIGTERM, a clean stop) when its supervisor dies, however it dies.

The supervisor starts shards with posix_spawn, which runs no code between fork and exec (the
supervisor has gRPC threads, which make a forked child's Python unsafe), so the shard asks Linux
for the signal itself, then checks that the supervisor did not die before it asked.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

from rockmq.cli import main

PR_SET_PDEATHSIG = 1


def stop_with(supervisor: int) -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != supervisor:
        sys.exit(f"rockmq: the supervisor (pid {supervisor}) is gone; not starting")


if __name__ == "__main__":
    stop_with(int(sys.argv[1]))
    sys.exit(main(sys.argv[2:]))
