"""`rockmq serve`: run a broker (or, with --workers, a set of broker shards) in the foreground."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from rockmq.cli.common import CliError
from rockmq.cli.servers import CLUSTER, LISTENER, SERVE, add_flags, check_tls_files, log_at, overrides, private_files
from rockmq.config import load_settings

if TYPE_CHECKING:
    from rockmq.cli.common import Subparsers
    from rockmq.config import Settings


def register(sub: Subparsers) -> None:
    serve = sub.add_parser("serve", help="run a broker in the foreground")
    serve.set_defaults(run=run)
    add_flags(serve, SERVE, LISTENER, CLUSTER)


def run(args: argparse.Namespace) -> int:
    from rockmq import malloc_tuning

    malloc_tuning.tune()
    private_files()
    settings = load_settings(args.config, overrides(args, SERVE, LISTENER, CLUSTER))
    check_tls_files(settings.tls_cert, settings.tls_key, settings.tls_ca)
    log_at(settings.log_level, settings.audit_format)
    if settings.shards > 1:
        return _serve_shards(settings, args.ready_file)
    return _serve_one(settings, args.ready_file)


def _serve_shards(settings: Settings, ready_file: str | None) -> int:
    from rockmq.broker.startup import CannotStart
    from rockmq.workers.supervisor import serve as serve_shards

    try:
        asyncio.run(serve_shards(settings, ready_file))
    except CannotStart as e:
        raise CliError(str(e)) from None
    return 0


def _serve_one(settings: Settings, ready_file: str | None) -> int:
    from rockmq.broker.server import serve
    from rockmq.broker.startup import CannotStart, check_layout
    from rockmq.store.db import CannotOpenStore
    from rockmq.store.disk_space import DiskFull
    from rockmq.store.schema import SchemaError

    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    try:
        check_layout(settings.data_path, 1)
        asyncio.run(serve(settings, ready_file))
    except (CannotStart, CannotOpenStore, SchemaError) as e:
        raise CliError(str(e)) from None
    except DiskFull as e:  # the store opened, but not even the start's own small write found room
        raise CliError(f"cannot start: {e.message}") from None
    return 0
