"""`rockmq namesrv`: run a name server in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import math
from typing import TYPE_CHECKING

from rockmq.cli.common import EXIT_USAGE, CliError
from rockmq.cli.servers import CLUSTER, LISTENER, add_flags, check_tls_files, log_at, overrides, private_files
from rockmq.config import load_settings

if TYPE_CHECKING:
    from rockmq.cli.common import Subparsers


def register(sub: Subparsers) -> None:
    ns = sub.add_parser("namesrv", help="run a name server in the foreground")
    ns.set_defaults(run=run)
    ns.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    ns.add_argument("--port", type=int, default=9876, help="gRPC port (default 9876; 0 = any free port)")
    ns.add_argument("--broker-timeout", type=float, default=30.0, metavar="SECONDS",
                    help="drop a broker not heard from for this long (default 30)")
    ns.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    add_flags(ns, LISTENER, CLUSTER)


def run(args: argparse.Namespace) -> int:
    from rockmq.auth.inner import inner_user
    from rockmq.broker.startup import CannotStart, check_can_listen
    from rockmq.http.port import CannotServe
    from rockmq.namesrv.server import serve

    private_files()
    if not 0 < args.broker_timeout < math.inf or not 0 <= args.port <= 65535:  # NaN too
        raise CliError("--broker-timeout must be a number above 0 and --port in 0..65535", EXIT_USAGE)
    if bool(args.tls_cert) != bool(args.tls_key):
        raise CliError("--tls-cert and --tls-key go together: give both", EXIT_USAGE)
    check_tls_files(args.tls_cert, args.tls_key)
    # The inner credentials and connection limits as a broker reads them (flags, else ROCKMQ_* variables; checked once).
    settings = load_settings(overrides=overrides(args, CLUSTER))
    inner = inner_user(settings)
    try:
        check_can_listen(args.host, args.port)
        if settings.http_port > 0:
            check_can_listen(args.host, settings.http_port, "--http-port")
    except CannotStart as e:
        raise CliError(str(e)) from None
    log_at(args.log_level, settings.audit_format)
    try:
        asyncio.run(serve(args.host, args.port, int(args.broker_timeout * 1000), settings.connection_limits,
                          args.ready_file, args.tls_cert or "", args.tls_key or "", inner, settings.http_port))
    except CannotServe as e:
        raise CliError(str(e)) from None
    return 0
