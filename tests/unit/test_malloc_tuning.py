"""glibc malloc tuning (rockmq.malloc_tuning): after tune(), threads share at most two arenas, so
the broker's threads do not each keep their own free memory. Checked in a fresh process (the
settings are process-wide and must come before threads), counted from glibc's malloc_info."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import ctypes, sys, threading
from rockmq import malloc_tuning
if sys.argv[1] == "tuned":
    malloc_tuning.tune()
barrier = threading.Barrier(8)
def work():
    block = bytearray(4096)  # every thread mallocs while all are alive: none can reuse another's arena
    barrier.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc = ctypes.CDLL("libc.so.6")
libc.fopen.restype = ctypes.c_void_p
out = libc.fopen(sys.argv[2].encode(), b"w")
libc.malloc_info(0, ctypes.c_void_p(out))
libc.fclose(ctypes.c_void_p(out))
"""


def arenas(tmp_path: Path, mode: str) -> int:
    report = tmp_path / f"{mode}.xml"
    subprocess.run([sys.executable, "-c", PROBE, mode, str(report)], check=True, timeout=60)
    return report.read_text().count("<heap nr=")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_threads_share_two_arenas(tmp_path: Path) -> None:
    assert arenas(tmp_path, "untuned") > 2  # the probe does make glibc create arenas per thread
    assert arenas(tmp_path, "tuned") <= 2
