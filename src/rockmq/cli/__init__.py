"""The `rockmq` command: run a broker, manage topics and groups, send and tail messages.

Every command but `serve` talks to a running broker at `--endpoint HOST:PORT` (default: the
environment variable ROCKMQ_ENDPOINT, else 127.0.0.1:8081). Errors print one
line to stderr and exit non-zero (1: refused by the broker or bad input, 2: usage, 3: the broker
cannot be reached).

One module per command group, each registering its subcommands (`register`) and running them
(`run`); what they share (broker options, channels, tables, failures as one line) is in
common.py, and the server flags of `serve` and `namesrv`, declared once, in servers.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

# gRPC's own log lines (a failed TLS handshake's `I1129 ... CERTIFICATE_VERIFY_FAILED`) are not the
# command's: it says what failed in one line. Read once, when gRPC is first imported; the servers keep
# them, and so does a program that imports rockmq.cli (a test run, an application: its environment, and
# its servers', is not the command's to change) -- only the `rockmq` script and `python -m rockmq` quiet it.
if (Path(sys.argv[0]).name == "rockmq" or Path(sys.argv[0]).parts[-2:] == ("rockmq", "__main__.py")) and \
        sys.argv[1:2] not in (["serve"], ["namesrv"]):
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")

import grpc  # noqa: E402

from rockmq.cli import acl, bench, broker, client, cluster, dlq, group, message, namesrv, pipeline, serve, timer, topic, user
from rockmq.cli.common import EXIT_REFUSED, EXIT_USAGE, CliError, Parser, client_failed, glue_dashed_values, rpc_failed
from rockmq.client.errors import RockmqError
from rockmq.config import ConfigError

__all__ = ["main"]

# In the order `rockmq --help` lists them.
GROUPS = (serve, namesrv, cluster, topic, group, dlq, message, client, user, broker, acl, timer, pipeline, bench)


class _Version(argparse.Action):
    """`--version`: importing the data path to tell how it runs costs too much to do for every command."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> NoReturn:
        from rockmq import __version__, compiled

        print(f"rockmq {__version__}, {compiled.describe()}")
        parser.exit()


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="rockmq", description="rockmq: a RocketMQ-compatible message queue.")
    p.add_argument("--version", action=_Version, help="print the version and which data path runs (compiled or Python)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command_group in GROUPS:
        command_group.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:  # hand every flag to the benchmark's own parser
        return bench.run(argparse.Namespace(args=argv[1:]))
    args = parser().parse_args(glue_dashed_values(argv))
    try:
        code: int = args.run(args)
        return code
    except CliError as e:
        print(f"rockmq: {e}", file=sys.stderr)
        return e.code
    except ConfigError as e:
        print(f"rockmq: {e}", file=sys.stderr)
        return EXIT_USAGE
    except grpc.RpcError as e:
        return rpc_failed(args, e.code(), e.details() or "")
    except RockmqError as e:
        return client_failed(args, e)
    except OSError as e:
        print(f"rockmq: {e}", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        return 130
