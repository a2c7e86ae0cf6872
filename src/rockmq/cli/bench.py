"""`rockmq bench`: benchmark a running broker (rockmq.bench.cli parses every flag after `bench`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rockmq.cli.common import Subparsers


def register(sub: Subparsers) -> None:
    bench = sub.add_parser("bench", help="benchmark a running broker (see `rockmq bench --help`)", add_help=False)
    bench.set_defaults(run=run)
    bench.add_argument("args", nargs=argparse.REMAINDER)


def run(args: argparse.Namespace) -> int:
    from rockmq.bench.cli import main as bench_main

    return bench_main(args.args)
