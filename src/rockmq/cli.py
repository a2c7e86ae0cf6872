"""The `rockmq` command: run a broker, manage topics and groups, send and tail messages.

Every command but `serve` talks to a running broker at `--endpoint HOST:PORT` (default: the
environment variable ROCKMQ_ENDPOINT, else 127.0.0.1:8081). Errors print one
line to stderr and exit non-zero (1: refused by the broker or bad input, 2: usage, 3: the broker
cannot be reached).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import grpc

from rockmq.client.errors import RockmqError
from rockmq.config import ConfigError, load_settings

if TYPE_CHECKING:
    from rockmq.client import Message
    from rockmq.plumbing.channels import Tls
    from rockmq.plumbing.credentials import Credentials
    from rockmq.protocol import admin_grpc

DEFAULT_ENDPOINT = os.environ.get("ROCKMQ_ENDPOINT") or "127.0.0.1:8081"
EXIT_REFUSED, EXIT_USAGE, EXIT_UNREACHABLE = 1, 2, 3
REQUEST_TIMEOUT_S = 10.0
TAIL_POLL_S = 5.0  # a tail's long poll: how long a broker holds a receive open while it has nothing
SECRET_FROM_STDIN = "'-': read it from stdin, where ps does not show it"


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_REFUSED) -> None:
        super().__init__(message)
        self.code = code


# --- parsing -----------------------------------------------------------------------------------


def _number(kind: Callable[[str], float], least: float) -> Callable[[str], float]:
    """An argparse type: a number of `kind` (int or float), `least` or more."""
    def parse(text: str) -> float:
        try:
            n = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
        if n < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, not {text}")
        return n
    return parse


def _endpoint(text: str) -> str:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT with a port in 1..65535, not {text!r}")
    return text


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, like every other error of the command."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


class _Version(argparse.Action):
    """`--version`: importing the data path to tell how it runs costs too much to do for every command."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> NoReturn:
        from rockmq import __version__, compiled

        print(f"rockmq {__version__}, {compiled.describe()}")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="rockmq", description="rockmq: a RocketMQ-compatible message queue.")
    p.add_argument("--version", action=_Version, help="print the version and which data path runs (compiled or Python)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="run a broker in the foreground")
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="gRPC port (default 8081; 0 = any free port)")
    serve.add_argument("--data-dir", help="where RocksDB keeps the data (default ./rockmq-data)")
    serve.add_argument("--config", help="TOML settings file")
    serve.add_argument("--flush", choices=["sync", "async"], help="WAL fsync policy (default sync)")
    serve.add_argument("--broker-name", help="this broker's name in routes (unique in a cluster)")
    serve.add_argument("--namesrv", help="name servers to register with: HOST:PORT[,HOST:PORT...] (default: standalone)")
    serve.add_argument("--replication", choices=["off", "async", "sync"],
                       help="keep batches for replicas; sync: a send waits for a replica (default off)")
    serve.add_argument("--replica-of", help="follow this primary (a broker name known to --namesrv, or HOST:PORT): "
                                            "serve reads only until promoted")
    serve.add_argument("--force-primary", action="store_const", const=True, help=(
        "a primary a replica followed takes writes at once after a restart, without confirming it is still the "
        "primary (by default it waits for a name server or its replica): if a replica was promoted meanwhile, both "
        "take writes and this one's are lost when it is fenced"))
    serve.add_argument("--max-attempts", type=int, help="default deliveries per message before the DLQ (17)")
    serve.add_argument("--default-queues", type=int, help="queues of an auto-created topic (8)")
    serve.add_argument("--max-topics", type=int, help="topics this broker holds at most, its groups' retry and "
                                                      "dead-letter topics aside (100000)")
    serve.add_argument("--max-groups", type=int, help="consumer groups this broker holds at most (100000)")
    serve.add_argument("--max-sessions-per-user", type=int, metavar="N", help="with --auth: client sessions one user "
                       "holds at most; past it its own longest silent one goes (10000)")
    serve.add_argument("--max-streams-per-user", type=int, metavar="N", help="with --auth: streaming calls (Telemetry, "
                       "receives) one user has open at once; past it they are refused (2000)")
    serve.add_argument("--disk-reserve-mib", type=int, metavar="MIB", help="free disk space kept beside the memtables' "
                       "next flush: below it sends are refused, 'disk full' (32)")
    serve.add_argument("--no-auto-create-topics", dest="auto_create_topics", action="store_const", const=False,
                       help="refuse sends and routes for unknown topics")
    serve.add_argument("--workers", metavar="N", help="broker shard processes on this machine, joined as a cluster "
                                                      "behind --port: a number, or auto (one per core) (default 1)")
    serve.add_argument("--stream-send-timeout", dest="stream_send_timeout_s", type=float, metavar="SECONDS",
                       help="cancel a server stream whose client reads nothing for this long (default 30)")
    serve.add_argument("--log-level", help="DEBUG, INFO, WARNING or ERROR")
    serve.add_argument("--auth", dest="auth_enabled", action="store_const", const=True,
                       help="authenticate and authorize every request (docs/security.md)")
    serve.add_argument("--admin-user", metavar="NAME", help="with --auth: the first super user, made when there are no "
                                                            "users yet (env ROCKMQ_ADMIN_USER)")
    serve.add_argument("--admin-secret", metavar="S", help="that user's secret key (env ROCKMQ_ADMIN_SECRET)")

    ns = sub.add_parser("namesrv", help="run a name server in the foreground")
    ns.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    ns.add_argument("--port", type=int, default=9876, help="gRPC port (default 9876; 0 = any free port)")
    ns.add_argument("--broker-timeout", type=float, default=30.0, metavar="SECONDS",
                    help="drop a broker not heard from for this long (default 30)")
    ns.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    serve.add_argument("--plaintext-port", type=int, metavar="P",
                       help="with --tls-cert: a plaintext listener on this port beside the TLS one (0 = any free port)")
    serve.add_argument("--tls-ca", metavar="FILE", help="CA (PEM) that this broker's own connections to other brokers, "
                                                        "name servers and its primary verify against (turns them to TLS)")
    for server in (serve, ns):
        server.add_argument("--tls-cert", metavar="FILE", help="serve TLS on --port with this certificate chain (PEM), "
                                                               "re-read when it changes")
        server.add_argument("--tls-key", metavar="FILE", help="the private key (PEM) of --tls-cert")
        server.add_argument("--ready-file", metavar="PATH", help="once accepting connections, write HOST:PORT to PATH")
        server.add_argument("--inner-access-key", metavar="K", help="the cluster's inner credentials, the same on every "
                            "broker and name server: with auth on, replication and name servers answer only calls "
                            "signed with them (env ROCKMQ_INNER_ACCESS_KEY)")
        server.add_argument("--inner-secret-key", metavar="S", help="their secret key (env ROCKMQ_INNER_SECRET_KEY)")
        server.add_argument("--max-connections", type=int, metavar="N", help="close connections past N as they are "
                            "accepted (default: from the open-files limit, raised to its hard limit)")
        server.add_argument("--idle-connection-timeout", dest="idle_connection_timeout_s", type=float, metavar="SECONDS",
                            help="close a connection with no call for this long (default 300)")
        server.add_argument("--audit-format", choices=["text", "json"], help="audit lines as text (fields in a fixed "
                            "order, values quoted and escaped) or one JSON object a line (default text)")

    def with_endpoint(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        parser.add_argument("--endpoint", type=_endpoint, default=DEFAULT_ENDPOINT,
                            help=f"broker HOST:PORT (default {DEFAULT_ENDPOINT}; env ROCKMQ_ENDPOINT)")
        parser.add_argument("--tls", action="store_true", help="connect over TLS (verified against the system's roots "
                                                               "or --tls-ca)")
        parser.add_argument("--tls-ca", metavar="FILE", help="verify the broker's certificate against this CA (PEM); "
                                                             "implies --tls")
        parser.add_argument("--access-key", metavar="K", help="sign requests as this user (a broker run with --auth; "
                                                              "env ROCKMQ_ACCESS_KEY)")
        parser.add_argument("--secret-key", metavar="S", help="the user's secret key (env ROCKMQ_SECRET_KEY)")
        return parser

    topic = sub.add_parser("topic", help="manage topics").add_subparsers(dest="action", required=True, metavar="ACTION")
    tc = with_endpoint(topic.add_parser("create", help="create a topic"))
    tc.add_argument("name")
    tc.add_argument("--queues", type=_number(int, 1), help="number of queues (default: the broker's, 8)")
    tc.add_argument("--types", default="", help="accepted message types, e.g. NORMAL,FIFO,DELAY,TRANSACTION (default all)")
    tc.add_argument("--brokers", default="", help="in a cluster: brokers to spread the queues over, e.g. b1,b2 (default all)")
    with_endpoint(topic.add_parser("list", help="list topics"))
    with_endpoint(topic.add_parser("describe", help="show a topic's queues and offsets")).add_argument("name")
    with_endpoint(topic.add_parser("delete", help="delete a topic and its messages")).add_argument("name")

    group = sub.add_parser("group", help="manage consumer groups").add_subparsers(dest="action", required=True, metavar="ACTION")
    gc = with_endpoint(group.add_parser("create", help="create a consumer group"))
    gc.add_argument("name")
    gc.add_argument("--fifo", action="store_true", help="deliver each message group in order")
    gc.add_argument("--max-attempts", type=int, default=0, help="deliveries before the DLQ (default: the broker's, 17)")
    gc.add_argument("--consume-mode", choices=("pop", "offset"), default="",
                    help="how the group consumes: pop (ReceiveMessage) or offset (pull, UpdateOffset); the other way is "
                         "refused (default: set by the group's first use)")
    with_endpoint(group.add_parser("list", help="list consumer groups"))
    with_endpoint(group.add_parser("describe", help="show a group's offsets, lag and in-flight messages")).add_argument("name")

    message = sub.add_parser("message", help="send and tail messages").add_subparsers(dest="action", required=True,
                                                                                      metavar="ACTION")
    ms = with_endpoint(message.add_parser("send", help="send one message"))
    ms.add_argument("topic")
    ms.add_argument("body", nargs="?", help="the message body (or --body-file)")
    ms.add_argument("--body-file", metavar="PATH", help="read the body from this file (- for standard input)")
    ms.add_argument("--tag")
    ms.add_argument("--key", action="append", default=[], help="a message key (repeatable)")
    ms.add_argument("--message-group", help="message group (makes it a FIFO message)")
    ms.add_argument("--group", dest="consumer_group", help=argparse.SUPPRESS)  # only to say what to use instead
    ms.add_argument("--property", action="append", default=[], metavar="K=V", help="a user property (repeatable)")
    due = ms.add_mutually_exclusive_group()
    due.add_argument("--delay", help="deliver after this delay: 1500ms, 30s, 2h, 1d (a DELAY message)")
    due.add_argument("--deliver-at", help="deliver at this ISO 8601 time (local time unless it has a zone)")
    mr = with_endpoint(message.add_parser("recall", help="cancel a pending delayed message"))
    mr.add_argument("topic")
    mr.add_argument("handle", help="the recall handle `message send --delay` printed")
    mt = with_endpoint(message.add_parser("tail", help="receive, print and acknowledge messages"))
    mt.add_argument("topic")
    mt.add_argument("--group", required=True, help="consumer group")
    mt.add_argument("--tag", default="*", help="tag expression, e.g. 'a||b' (default *)")
    mt.add_argument("--count", type=_number(int, 0), default=0,
                    help="stop after this many messages (default: run until Ctrl-C)")
    mt.add_argument("--timeout", type=_number(float, 0), default=0, help="stop after this many idle seconds (default: never)")

    user = sub.add_parser("user", help="manage the users of a broker run with --auth (needs a super user)"
                          ).add_subparsers(dest="action", required=True, metavar="ACTION")
    uc = with_endpoint(user.add_parser("create", help="create a user"))
    uc.add_argument("name")
    uc.add_argument("--secret", required=True, help=f"the user's secret key ({SECRET_FROM_STDIN})")
    uc.add_argument("--super", dest="super_user", action="store_true", help="a super user: may do anything")
    uu = with_endpoint(user.add_parser("update", help="change a user's secret, or enable or disable it"))
    uu.add_argument("name")
    uu.add_argument("--secret", help=f"a new secret key ({SECRET_FROM_STDIN})")
    enable = uu.add_mutually_exclusive_group()
    enable.add_argument("--enable", dest="enabled", action="store_const", const=True, help="let the user in again")
    enable.add_argument("--disable", dest="enabled", action="store_const", const=False, help="refuse the user's requests")
    with_endpoint(user.add_parser("delete", help="delete a user")).add_argument("name")
    with_endpoint(user.add_parser("list", help="list users (never their secrets)"))

    broker = sub.add_parser("broker", help="manage a broker").add_subparsers(dest="action", required=True, metavar="ACTION")
    promote = with_endpoint(broker.add_parser(
        "promote", help="make a replica (at --endpoint) a primary; refused while its primary answers (stop it first)"))
    promote.add_argument("--force", action="store_true", help=(
        "promote even though the primary answers: it is fenced (refuses writes, its clients move to the new primary), "
        "and writes it acknowledged that the replica had not applied are lost from the new primary's view"))

    acls = sub.add_parser("acl", help="manage who may do what (ACL 2.0; needs a super user)").add_subparsers(
        dest="action", required=True, metavar="ACTION")
    ag = with_endpoint(acls.add_parser("grant", help="allow (or --deny) a user actions on a resource"))
    ag.add_argument("user")
    ag.add_argument("--resource", required=True, help="*, Topic:NAME, Topic:PREFIX*, Group:NAME or Group:PREFIX*")
    ag.add_argument("--actions", required=True, metavar="A[,A...]",
                    help="Pub, Sub, Create, Update, Delete, Get, List or All, comma separated")
    ag.add_argument("--source-ip", action="append", default=[], metavar="CIDR",
                    help="only from this IP or network, e.g. 10.0.0.0/8 (repeatable; default: anywhere)")
    ag.add_argument("--deny", action="store_true", help="refuse these actions instead (the most specific entry decides)")
    ar = with_endpoint(acls.add_parser("revoke", help="remove a user's entry on a resource"))
    ar.add_argument("user")
    ar.add_argument("--resource", required=True, help="the resource the entry names")
    with_endpoint(acls.add_parser("list", help="list ACL entries (of one user, or of all)")).add_argument(
        "user", nargs="?", default="")

    timer = sub.add_parser("timer", help="inspect delayed messages").add_subparsers(dest="action", required=True,
                                                                                   metavar="ACTION")
    with_endpoint(timer.add_parser("stats", help="pending delayed messages, next due time, lateness histogram"))

    pipeline = sub.add_parser("pipeline", help="Spark pipeline jobs (needs the spark extra)").add_subparsers(
        dest="action", required=True, metavar="ACTION")
    pa = with_endpoint(pipeline.add_parser("archive", help="archive a topic to Parquet by date (until stopped)"))
    pa.add_argument("--topic", required=True)
    pa.add_argument("--path", required=True, help="where the Parquet files go")
    pa.add_argument("--checkpoint", help="the job's checkpoint (default: PATH/_checkpoint)")
    pa.add_argument("--available-now", action="store_true", help="archive what is there now, then stop")
    pa.add_argument("--interval", type=float, default=10.0, help="seconds between micro-batches")
    pr = with_endpoint(pipeline.add_parser("replay", help="send archived messages into a topic (duplicate-safe)"))
    pr.add_argument("--path", required=True, help="an archive written by `pipeline archive`")
    pr.add_argument("--topic", required=True, help="the topic to send them to")
    pr.add_argument("--from", dest="start", help="only messages stored at or after this ISO 8601 time")
    pr.add_argument("--to", dest="end", help="only messages stored before this ISO 8601 time")
    for job in (pa, pr):
        job.add_argument("--master", default="local[*]", help="Spark master (default: local[*])")

    bench = sub.add_parser("bench", help="benchmark a running broker (see `rockmq bench --help`)", add_help=False)
    bench.add_argument("args", nargs=argparse.REMAINDER)
    return p


# --- commands ----------------------------------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    from rockmq import malloc_tuning
    from rockmq.broker.startup import CannotStart, check_layout
    from rockmq.store.db import CannotOpenStore
    from rockmq.store.disk_space import DiskFull
    from rockmq.store.schema import SchemaError

    malloc_tuning.tune()
    _private_files()
    overrides = {k: getattr(args, k) for k in ("host", "port", "data_dir", "flush", "broker_name", "namesrv", "max_attempts",
                                                "replication", "replica_of", "force_primary", "workers", "default_queues",
                                                "max_topics", "max_groups", "max_sessions_per_user",
                                                "max_streams_per_user", "disk_reserve_mib",
                                                "auto_create_topics", "log_level", "auth_enabled", "admin_user",
                                                "admin_secret", "tls_cert", "tls_key", "tls_ca", "plaintext_port",
                                                "inner_access_key", "inner_secret_key", "max_connections",
                                                "idle_connection_timeout_s", "stream_send_timeout_s", "audit_format")}
    settings = load_settings(args.config, overrides)
    _check_tls_files(settings.tls_cert, settings.tls_key, settings.tls_ca)
    _log_at(settings.log_level, settings.audit_format)
    if settings.shards > 1:
        from rockmq.workers.supervisor import serve as serve_shards

        try:
            asyncio.run(serve_shards(settings, args.ready_file))
        except CannotStart as e:
            raise CliError(str(e)) from None
        return 0
    from rockmq.broker.server import serve

    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    try:
        check_layout(settings.data_path, 1)
        asyncio.run(serve(settings, args.ready_file))
    except (CannotStart, CannotOpenStore, SchemaError) as e:
        raise CliError(str(e)) from None
    except DiskFull as e:  # the store opened, but not even the start's own small write found room
        raise CliError(f"cannot start: {e.message}") from None
    return 0


def _private_files() -> None:
    """A server's files are its user's alone (umask 077): the data directory is made 0700 and every
    file 0600 — RocksDB's (message bodies, the receipt-handle secret), users.json, acl.json, the
    ready file — and RocksDB's threads and the shards of --workers inherit it (docs/security.md)."""
    os.umask(0o077)


def _check_tls_files(cert: str, key: str, ca: str = "") -> None:
    """A server's TLS files read and fitting together before anything starts (exit 2 if not)."""
    from rockmq.plumbing.tls import TlsError, check_ca, check_files

    try:
        if cert:
            check_files(cert, key)
        if ca:
            check_ca(ca)
    except TlsError as e:
        raise CliError(str(e), EXIT_USAGE) from None


def _log_at(level: str, audit_format: str = "text") -> None:
    """A server's log on stderr from `level` up: each line escaped, cut and on one line, audit lines
    as `audit_format` says (log_escape.py); each kind of line rate-limited per user and source, with a
    count of those left out (plumbing/log_limit.py)."""
    from rockmq.log_escape import escape_handlers
    from rockmq.plumbing.log_limit import limit_handlers

    try:
        logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    except ValueError:
        raise CliError(f"unknown log level {level!r}: DEBUG, INFO, WARNING or ERROR", EXIT_USAGE) from None
    escape_handlers(logging.getLogger(), audit_format)
    limit_handlers(logging.getLogger())


def cmd_namesrv(args: argparse.Namespace) -> int:
    from rockmq.auth.inner import inner_user
    from rockmq.broker.startup import CannotStart, check_can_listen
    from rockmq.namesrv.server import serve

    _private_files()
    if not 0 < args.broker_timeout < math.inf or not 0 <= args.port <= 65535:  # NaN too
        raise CliError("--broker-timeout must be a number above 0 and --port in 0..65535", EXIT_USAGE)
    if bool(args.tls_cert) != bool(args.tls_key):
        raise CliError("--tls-cert and --tls-key go together: give both", EXIT_USAGE)
    _check_tls_files(args.tls_cert, args.tls_key)
    # The inner credentials and connection limits as a broker reads them (flags, else ROCKMQ_* variables; checked once).
    settings = load_settings(overrides={k: getattr(args, k) for k in ("inner_access_key", "inner_secret_key",
                                                                        "max_connections", "idle_connection_timeout_s",
                                                                        "audit_format")})
    inner = inner_user(settings)
    try:
        check_can_listen(args.host, args.port)
    except CannotStart as e:
        raise CliError(str(e)) from None
    _log_at(args.log_level, settings.audit_format)
    asyncio.run(serve(args.host, args.port, int(args.broker_timeout * 1000), settings.connection_limits, args.ready_file,
                      args.tls_cert or "", args.tls_key or "", inner))
    return 0


def _tls(args: argparse.Namespace) -> Tls | None:
    """`--tls [--tls-ca FILE]` of a command that talks to a broker (None: plaintext)."""
    from rockmq.plumbing.channels import tls_of

    tls = tls_of(getattr(args, "tls", False), getattr(args, "tls_ca", None))
    if tls is not None and tls.ca_file and not os.access(tls.ca_file, os.R_OK):
        raise CliError(f"cannot read --tls-ca {tls.ca_file}", EXIT_USAGE)
    return tls


def _channel(args: argparse.Namespace) -> grpc.Channel:
    from rockmq.plumbing.channels import open_channel

    return open_channel(args.endpoint, _tls(args))


def _credentials(args: argparse.Namespace) -> Credentials | None:
    """The credentials --access-key / --secret-key (or ROCKMQ_ACCESS_KEY / ROCKMQ_SECRET_KEY) give."""
    from rockmq.plumbing.credentials import credentials_from

    try:
        return credentials_from(args.access_key, args.secret_key)
    except ValueError as e:
        raise CliError(str(e), EXIT_USAGE) from None


def _signed_channel(args: argparse.Namespace) -> grpc.Channel:
    """A channel to --endpoint signing every call with the command's credentials."""
    from rockmq.plumbing.credentials import signed

    return signed(_channel(args), _credentials(args))


def _admin(args: argparse.Namespace) -> admin_grpc.AdminStub:
    from rockmq.protocol import admin_grpc

    return admin_grpc.AdminStub(_signed_channel(args))


def _table(rows: list[list[object]], header: list[str]) -> None:
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


def cmd_topic(args: argparse.Namespace) -> int:
    from rockmq.protocol import admin

    stub = _admin(args)
    if args.action == "create":
        types = [t for t in args.types.split(",") if t.strip()]
        brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
        request = admin.CreateTopicRequest(name=args.name, queue_count=args.queues or 0, message_types=types, brokers=brokers)
        info = stub.CreateTopic(request, timeout=30)
        held = sorted({q.broker for q in info.queues})
        where = f" on {', '.join(held)}" if len(held) > 1 else ""
        print(f"created topic {info.name} with {info.queue_count} queues{where} ({', '.join(info.message_types)})")
    elif args.action == "list":
        topics = _every_page(lambda token: stub.ListTopics(admin.ListTopicsRequest(page_token=token), timeout=10), "topics")
        _table([[t.name, t.queue_count, ",".join(t.message_types)] for t in topics], ["TOPIC", "QUEUES", "TYPES"])
    elif args.action == "describe":
        info = stub.DescribeTopic(admin.TopicRequest(name=args.name), timeout=10)
        print(f"topic {info.name}: {info.queue_count} queues, types {', '.join(info.message_types)}")
        _table([[q.broker, q.queue_id, q.min_offset, q.max_offset, q.max_offset - q.min_offset] for q in info.queues],
               ["BROKER", "QUEUE", "MIN_OFFSET", "MAX_OFFSET", "MESSAGES"])
        _warn_unreachable(info.unreachable)
    else:
        stub.DeleteTopic(admin.TopicRequest(name=args.name), timeout=30)
        print(f"deleted topic {args.name}")
    return 0


def cmd_group(args: argparse.Namespace) -> int:
    from rockmq.protocol import admin

    stub = _admin(args)
    if args.action == "create":
        request = admin.CreateGroupRequest(name=args.name, fifo=args.fifo, max_attempts=args.max_attempts,
                                           consume_mode=args.consume_mode)
        info = stub.CreateGroup(request, timeout=10)
        print(f"created group {info.name} ({'FIFO' if info.fifo else 'concurrent'}, max attempts {info.max_attempts}, "
              f"consume mode {_consume_mode(info.consume_mode)})")
    elif args.action == "list":
        groups = _every_page(lambda token: stub.ListGroups(admin.ListGroupsRequest(page_token=token), timeout=10), "groups")
        _table([[g.name, "FIFO" if g.fifo else "-", g.max_attempts, g.consume_mode or "-"] for g in groups],
               ["GROUP", "FIFO", "MAX_ATTEMPTS", "CONSUME_MODE"])
    else:
        info = stub.DescribeGroup(admin.GroupRequest(name=args.name), timeout=30)
        print(f"group {info.name}: {'FIFO' if info.fifo else 'concurrent'}, max attempts {info.max_attempts}, "
              f"consume mode {_consume_mode(info.consume_mode)}, {info.inflight} in flight")
        _table([[q.topic, q.broker, q.queue_id, q.pop_offset, "-" if q.committed_offset < 0 else q.committed_offset,
                 q.max_offset, q.lag, q.inflight] for q in info.queues],
               ["TOPIC", "BROKER", "QUEUE", "POP_OFFSET", "COMMITTED", "MAX_OFFSET", "LAG", "INFLIGHT"])
        _warn_unreachable(info.unreachable)
    return 0


def _every_page(call: Callable[[str], Any], field: str) -> list[Any]:
    """Every entry of a paged listing (ListTopics, ListGroups): `call(page_token)` until the last page."""
    entries: list[Any] = []
    token = ""
    while True:
        reply = call(token)
        entries.extend(getattr(reply, field))
        token = reply.next_page_token
        if not token:
            return entries


def _consume_mode(mode: str) -> str:
    return mode or "not set (the group's first use sets it)"


def _warn_unreachable(brokers: Sequence[str]) -> None:
    if brokers:
        print(f"warning: not shown, did not answer: {', '.join(brokers)}", file=sys.stderr)


def _due_ms(args: argparse.Namespace) -> int | None:
    """The delivery time `--delay` / `--deliver-at` ask for, in ms since the epoch."""
    from rockmq.when import parse_delay_ms, parse_instant_ms

    try:
        if args.delay is not None:
            return int(time.time() * 1000) + parse_delay_ms(args.delay)
        if args.deliver_at is not None:
            return parse_instant_ms(args.deliver_at)
    except ValueError as e:
        raise CliError(str(e), EXIT_USAGE) from None
    return None


def _format_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).astimezone().isoformat(timespec="milliseconds")


def _body(args: argparse.Namespace) -> bytes:
    """The body given as an argument or read from `--body-file` (- for standard input)."""
    if args.body is not None and args.body_file is not None:
        raise CliError("give the body as an argument or with --body-file, not both", EXIT_USAGE)
    if args.body is None and args.body_file is None:
        raise CliError("no body: give it as an argument or with --body-file PATH (- for standard input)", EXIT_USAGE)
    if args.body is not None:
        return str(args.body).encode()
    if args.body_file == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(args.body_file).read_bytes()
    except OSError as e:
        raise CliError(f"cannot read --body-file {args.body_file}: {e.strerror}", EXIT_USAGE) from None


def _message_to_send(args: argparse.Namespace) -> Message:
    from rockmq.client import Message

    if args.consumer_group is not None:
        raise CliError("on send, name a FIFO message group with --message-group (--group names a consumer group)",
                       EXIT_USAGE)
    props = {}
    for kv in args.property:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            raise CliError(f"--property expects K=V, got {kv!r}")
        props[k] = v
    due = _due_ms(args)
    if due is not None and args.message_group:
        raise CliError("--message-group cannot be combined with --delay/--deliver-at: a message is FIFO or delayed",
                       EXIT_USAGE)
    return Message(args.topic, _body(args), tag=args.tag, keys=tuple(args.key), properties=props,
                   message_group=args.message_group or None,
                   deliver_at=None if due is None else datetime.fromtimestamp(due / 1000, UTC))


def cmd_message(args: argparse.Namespace) -> int:
    """send, recall and tail go through rockmq's own client: routed like any client's requests."""
    if args.action == "tail":
        from rockmq.protocol import admin

        _admin(args).DescribeTopic(admin.TopicRequest(name=args.topic), timeout=REQUEST_TIMEOUT_S)  # tailing creates no topic
        return asyncio.run(_tail(args))
    return asyncio.run(_send_or_recall(args))


async def _send_or_recall(args: argparse.Namespace) -> int:
    from rockmq.client import AsyncProducer, at_random

    message = _message_to_send(args) if args.action == "send" else None
    # One send per process: a round robin would always start at the first queue.
    async with AsyncProducer(args.endpoint, request_timeout=REQUEST_TIMEOUT_S, selector=at_random, tls=_tls(args),
                             credentials=_credentials(args)) as producer:
        if message is None:
            print(f"recalled {await producer.recall(args.topic, args.handle)} from {args.topic}")
            return 0
        receipt = await producer.send(message)
    if receipt.recall_handle and message.deliver_at is not None:
        due = _format_ms(round(message.deliver_at.timestamp() * 1000))
        print(f"sent {receipt.message_id} to {args.topic}, due at {due}; recall handle {receipt.recall_handle}")
    else:
        print(f"sent {receipt.message_id} to {args.topic} at offset {receipt.offset}")
    return 0


async def _tail(args: argparse.Namespace) -> int:
    """Receive, print and acknowledge until `--count` messages or `--timeout` idle seconds."""
    from rockmq.client import AsyncSimpleConsumer, Filter

    poll_s = min(TAIL_POLL_S, args.timeout) if args.timeout else TAIL_POLL_S
    received, idle_since = 0, time.monotonic()
    async with AsyncSimpleConsumer(args.endpoint, args.group, {args.topic: Filter.tag(args.tag)}, await_s=poll_s,
                                   request_timeout=REQUEST_TIMEOUT_S, tls=_tls(args), credentials=_credentials(args)) as consumer:
        while not args.count or received < args.count:
            batch = await consumer.receive(min(32, args.count - received) if args.count else 32, invisible_s=30)
            for m in batch:
                print(f"[{m.broker}:{m.queue_id}:{m.offset}] id={m.message_id} tag={m.tag or '-'} "
                      f"attempt={m.delivery_attempt} {m.body.decode(errors='replace')}", flush=True)
            if batch:
                for m, why in await consumer.ack_many(batch):
                    print(f"rockmq: not acknowledged, it will come again: {m.message_id} ({why})", file=sys.stderr)
                received += len(batch)
                idle_since = time.monotonic()
            elif args.timeout and time.monotonic() - idle_since >= args.timeout:
                break
    return 0


def _secret(given: str) -> str:
    """--secret's value; '-' reads it from stdin's first line (a secret in argv is visible to every `ps`)."""
    if given != "-":
        return given
    secret = sys.stdin.readline().rstrip("\r\n")
    if not secret:
        raise CliError("--secret -: stdin gave no secret", EXIT_USAGE)
    return secret


def cmd_user(args: argparse.Namespace) -> int:
    from rockmq.protocol import users, users_grpc

    if getattr(args, "secret", None) is not None:  # create and update take one
        args.secret = _secret(args.secret)
    stub = users_grpc.UsersStub(_signed_channel(args))
    if args.action == "create":
        info = stub.CreateUser(users.CreateUserRequest(name=args.name, secret=args.secret, super_user=args.super_user),
                               timeout=REQUEST_TIMEOUT_S)
        print(f"created {'super ' if info.super_user else ''}user {info.name}")
    elif args.action == "update":
        if args.secret is None and args.enabled is None:
            raise CliError("nothing to update: give --secret, --enable or --disable", EXIT_USAGE)
        request = users.UpdateUserRequest(name=args.name)
        if args.secret is not None:
            request.secret = args.secret
        if args.enabled is not None:
            request.enabled = args.enabled
        info = stub.UpdateUser(request, timeout=REQUEST_TIMEOUT_S)
        print(f"updated user {info.name} ({'enabled' if info.enabled else 'disabled'})")
    elif args.action == "delete":
        stub.DeleteUser(users.UserRequest(name=args.name), timeout=REQUEST_TIMEOUT_S)
        print(f"deleted user {args.name}")
    else:
        listed = stub.ListUsers(users.ListUsersRequest(), timeout=REQUEST_TIMEOUT_S).users
        _table([[u.name, "super" if u.super_user else "normal", "enabled" if u.enabled else "disabled"] for u in listed],
               ["USER", "TYPE", "STATUS"])
    return 0


def cmd_broker(args: argparse.Namespace) -> int:
    from rockmq.protocol import admin

    reply = _admin(args).Promote(admin.PromoteRequest(force=args.force), timeout=30)
    print(f"promoted {args.endpoint} (primary epoch {reply.epoch}): it holds the primary's writes up to batch "
          f"{reply.applied_seq} and now serves writes")
    if reply.primary_answered:
        print("forced while the old primary still answered: it refuses writes once it hears of the new epoch (from the "
              "replica or a name server); writes it acknowledged that were not replicated here are lost from this "
              "primary's view (re-seed the old primary from this one to use it again)")
    return 0


def cmd_acl(args: argparse.Namespace) -> int:
    from rockmq.protocol import acl, acl_grpc

    stub = acl_grpc.AclsStub(_signed_channel(args))
    if args.action == "grant":
        actions = [a.strip() for a in args.actions.split(",") if a.strip()]
        ips = [ip.strip() for given in args.source_ip for ip in given.split(",") if ip.strip()]
        decision = "Deny" if args.deny else "Allow"
        stub.GrantAcl(acl.AclEntry(user=args.user, resource=args.resource, actions=actions, source_ips=ips,
                                   decision=decision), timeout=REQUEST_TIMEOUT_S)
        where = f" from {', '.join(ips)}" if ips else ""
        print(f"{'denied' if args.deny else 'granted'} {args.user} {','.join(actions)} on {args.resource}{where}")
    elif args.action == "revoke":
        gone = stub.RevokeAcl(acl.RevokeAclRequest(user=args.user, resource=args.resource), timeout=REQUEST_TIMEOUT_S).revoked
        print(f"revoked {gone.user}'s entry on {gone.resource} ({gone.decision} {','.join(gone.actions)})")
    else:
        entries = stub.ListAcls(acl.ListAclsRequest(user=args.user), timeout=REQUEST_TIMEOUT_S).entries
        _table([[e.user, e.resource, ",".join(e.actions), ",".join(e.source_ips) or "*", e.decision] for e in entries],
               ["USER", "RESOURCE", "ACTIONS", "SOURCE_IPS", "DECISION"])
    return 0


def cmd_timer(args: argparse.Namespace) -> int:
    from rockmq.protocol import admin

    st = _admin(args).GetTimerStats(admin.TimerStatsRequest(), timeout=10)
    if st.next_due_ms:
        nxt = f"{_format_ms(st.next_due_ms)} (in {max(0.0, st.next_due_ms / 1000 - time.time()):.3f} s)"
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
    _table(rows, ["LATENESS", "MESSAGES"])
    return 0


def cmd_pipeline(args: argparse.Namespace) -> int:
    from rockmq.when import parse_instant_ms

    try:
        from rockmq.spark import jobs
        from rockmq.spark.connection import credentials_options, tls_options
    except ImportError as e:
        raise CliError(f"the pipeline needs Spark: pip install 'rockmq[spark]' ({e})", EXIT_USAGE) from None
    try:
        start = parse_instant_ms(args.start) if getattr(args, "start", None) else None
        end = parse_instant_ms(args.end) if getattr(args, "end", None) else None
    except ValueError as e:
        raise CliError(str(e), EXIT_USAGE) from None
    connection = {**tls_options(_tls(args)), **credentials_options(_credentials(args))}
    spark = jobs.session(args.master, f"rockmq pipeline {args.action}")
    try:
        if args.action == "replay":
            count = jobs.replay(spark, endpoint=args.endpoint, path=args.path, topic=args.topic, start_ms=start, end_ms=end,
                                connection=connection)
            print(f"replayed {count} messages into {args.topic}")
            return 0
        checkpoint = args.checkpoint or str(Path(args.path) / "_checkpoint")
        query = jobs.archive(spark, endpoint=args.endpoint, topic=args.topic, path=args.path, checkpoint=checkpoint,
                             available_now=args.available_now, interval_s=args.interval, connection=connection)
        query.awaitTermination()
        if query.exception() is not None:
            raise CliError(f"the archive job failed: {query.exception()}")
        return 0
    finally:
        spark.stop()


def cmd_bench(args: argparse.Namespace) -> int:
    from rockmq.bench.cli import main as bench_main

    return bench_main(args.args)


COMMANDS = {"serve": cmd_serve, "namesrv": cmd_namesrv, "topic": cmd_topic, "group": cmd_group, "message": cmd_message,
            "user": cmd_user, "acl": cmd_acl, "broker": cmd_broker, "timer": cmd_timer, "pipeline": cmd_pipeline,
            "bench": cmd_bench}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:  # hand every flag to the benchmark's own parser
        return cmd_bench(argparse.Namespace(args=argv[1:]))
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except CliError as e:
        print(f"rockmq: {e}", file=sys.stderr)
        return e.code
    except ConfigError as e:
        print(f"rockmq: {e}", file=sys.stderr)
        return 2
    except grpc.RpcError as e:
        return _rpc_failed(args, e.code(), e.details() or "")
    except RockmqError as e:
        return _client_failed(args, e)
    except OSError as e:
        print(f"rockmq: {e}", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        return 130


def _rpc_failed(args: argparse.Namespace, code: grpc.StatusCode, details: str) -> int:
    """One line for a failed admin call."""
    endpoint = getattr(args, "endpoint", "?")
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        from rockmq.protocol.conventions import BROKER_SAYS_UNREACHABLE

        if details.startswith(BROKER_SAYS_UNREACHABLE):  # the broker answered: another did not
            print(f"rockmq: {details}", file=sys.stderr)
        else:
            print(f"rockmq: cannot reach the broker at {endpoint} ({code.name.lower()})", file=sys.stderr)
        return EXIT_UNREACHABLE
    if code == grpc.StatusCode.UNIMPLEMENTED and _is_name_server(args):
        return _name_server_named(endpoint)
    print(f"rockmq: {details}", file=sys.stderr)
    return EXIT_REFUSED


def _client_failed(args: argparse.Namespace, e: RockmqError) -> int:
    """One line for a failed send, recall or tail."""
    from rockmq.client.errors import ConnectionFailed, Timeout

    endpoint = getattr(args, "endpoint", "?")
    if isinstance(e, ConnectionFailed) and not e.retriable and _is_name_server(args):
        return _name_server_named(endpoint)
    print(f"rockmq: {e}", file=sys.stderr)
    return EXIT_UNREACHABLE if isinstance(e, ConnectionFailed | Timeout) and e.retriable else EXIT_REFUSED


def _is_name_server(args: argparse.Namespace) -> bool:
    """Whether `--endpoint` answers as a name server (asked only after it refused a broker's method)."""
    from rockmq.protocol import namesrv, namesrv_grpc

    try:
        with _channel(args) as channel:
            namesrv_grpc.NameServerStub(channel).ListBrokers(namesrv.ListBrokersRequest(), timeout=2)
        return True
    except grpc.RpcError as e:  # a name server asking for the cluster's inner credentials is one too
        return e.code() == grpc.StatusCode.UNAUTHENTICATED


def _name_server_named(endpoint: str) -> int:
    print(f"rockmq: {endpoint} is a name server, not a broker: give --endpoint a broker's HOST:PORT", file=sys.stderr)
    return EXIT_REFUSED
