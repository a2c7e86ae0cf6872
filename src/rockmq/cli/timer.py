"""`rockmq timer stats`: delayed messages, pending and moved."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from rockmq.cli.common import admin_stub, format_ms, subcommands, table, with_endpoint

if TYPE_CHECKING:
    from rockmq.cli.common import Subparsers


def register(sub: Subparsers) -> None:
    timer = subcommands(sub, "timer", "inspect delayed messages", run)
    with_endpoint(timer.add_parser("stats", help="pending delayed messages, next due time, lateness histogram"))


def run(args: argparse.Namespace) -> int:
    from rockmq.protocol import admin

    st = admin_stub(args).GetTimerStats(admin.TimerStatsRequest(), timeout=10)
    if st.next_due_ms:
        nxt = f"{format_ms(st.next_due_ms)} (in {max(0.0, st.next_due_ms / 1000 - time.time()):.3f} s)"
    else:
        nxt = "-"
    print(f"pending delayed messages: {st.pending}")
    print(f"next due:                 {nxt}")
    print(f"moved since start:        {st.moved} (max lateness {st.max_lateness_ms} ms)")
    print(f"undecided transactions:   {st.half_messages}")
    rows, low = [], 0
    for b in st.lateness:
        rows.append([f"{low}-{b.le_ms} ms" if b.le_ms >= 0 else f"> {low} ms", b.count])
        low = b.le_ms
    table(rows, ["LATENESS", "MESSAGES"])
    return 0
