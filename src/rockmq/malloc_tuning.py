"""glibc malloc tuning for processes that build or receive replies of megabytes: the
broker, and the Spark source's readers in Spark's Python workers.

glibc serves an allocation above its mmap threshold (dynamic, at most 32 MiB) with fresh pages
from mmap and returns them on free, and gives the top of the heap back once 128 KiB of it is
free. A Fetch reply (8 MiB by default) then costs thousands of page faults each time it is
built (or received): a fifth of Fetch's broker CPU, measured here. Fixing the threshold at 16 MiB and keeping
up to 32 MiB of free heap serves such replies from reused memory.

glibc also gives each thread that contends for the heap an arena of its own (up to 8 per core),
and each keeps its own free memory: the broker's gRPC, RocksDB and fsync threads each held
megabyte buffers of large sends and receives. Two arenas bring the broker's peak RSS down
(measured with 64 KiB messages, two runs each: 170-178 -> 157-163 MiB while receiving them,
192-226 -> 183-184 MiB while they are consumed) at no measurable CPU cost per message (1 KiB
produce and consume, interleaved). It must be set before the process starts threads (`rockmq
serve` calls tune() first). Elsewhere (not glibc) nothing changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

from rockmq.units import MiB

log = logging.getLogger(__name__)

_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -2, -3, -8
SETTINGS = ((_M_MMAP_THRESHOLD, 16 * MiB), (_M_TRIM_THRESHOLD, 32 * MiB), (_M_TOP_PAD, 8 * MiB), (_M_ARENA_MAX, 2))
_tuned = False


def tune() -> None:
    """Apply SETTINGS to this process's allocator, once (glibc only)."""
    global _tuned
    if _tuned:
        return
    _tuned = True
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return
    if not all(mallopt(option, value) == 1 for option, value in SETTINGS):
        log.warning("could not tune the allocator (mallopt refused)")
