"""What `serve` and `namesrv` share: their flags, declared once in tables that both build the
argparse options and map them to `Settings` overrides, and the steps of a server's start (private
files, its TLS files checked, its log)."""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, get_type_hints

from rockmq.cli.common import EXIT_USAGE, CliError
from rockmq.config import Settings
from rockmq.log_escape import AUDIT_FORMATS

_DEFAULTS: Mapping[str, Any] = {f.name: f.default for f in fields(Settings)}
_KINDS: Mapping[str, Any] = get_type_hints(Settings)


@dataclass(frozen=True)
class Flag:
    """One server flag. `name` is its argparse dest and, unless `setting` is False, the `Settings`
    field it overrides; the option is `--name-with-dashes` unless `option` says otherwise; its type is
    the field's (a bool field makes a switch that sets `const`); `{default}` in `help` is the field's
    default."""

    name: str
    help: str
    option: str = ""
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    const: bool = True  # a bool field's switch: the value it sets
    text: bool = False  # taken as text, converted by Settings (workers: a number or auto)
    setting: bool = True  # False: a flag of the command alone (--config, --ready-file), no Settings field

    @property
    def flag(self) -> str:
        return self.option or "--" + self.name.replace("_", "-")

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        kind: Callable[[str], Any] = _KINDS[self.name] if self.setting and not self.text else str
        if kind is bool:
            parser.add_argument(self.flag, dest=self.name, action="store_const", const=self.const, help=self.help)
            return
        parser.add_argument(self.flag, dest=self.name, type=kind, metavar=self.metavar, choices=self.choices,
                            help=self.help.format(default=_shown(_DEFAULTS.get(self.name))))


def _shown(default: Any) -> str:
    return f"{default:g}" if isinstance(default, float) else str(default)


# `rockmq serve`'s own flags.
SERVE = (
    Flag("host", "address to listen on (default {default})"),
    Flag("port", "gRPC port (default {default}; 0 = any free port)"),
    Flag("data_dir", "where RocksDB keeps the data (default {default})"),
    Flag("config", "TOML settings file", setting=False),
    Flag("flush", "WAL fsync policy (default {default})", choices=("sync", "async")),
    Flag("broker_name", "this broker's name in routes (unique in a cluster)"),
    Flag("namesrv", "name servers to register with: HOST:PORT[,HOST:PORT...] (default: standalone)"),
    Flag("replication", "keep batches for replicas; sync: a send waits for a replica (default {default})",
         choices=("off", "async", "sync")),
    Flag("replica_of", "follow this primary (a broker name known to --namesrv, or HOST:PORT): serve reads only until "
                       "promoted"),
    Flag("force_primary", "a primary a replica followed takes writes at once after a restart, without confirming it is "
                          "still the primary (by default it waits for a name server or its replica): if a replica was "
                          "promoted meanwhile, both take writes and this one's are lost when it is fenced"),
    Flag("max_attempts", "default deliveries per message before the DLQ ({default})"),
    Flag("default_queues", "queues of an auto-created topic ({default})"),
    Flag("max_topics", "topics this broker holds at most, its groups' retry and dead-letter topics aside ({default})"),
    Flag("max_groups", "consumer groups this broker holds at most ({default})"),
    Flag("max_lite_topics_per_topic", "lite topics one LITE topic holds at most on this broker ({default})"),
    Flag("lite_subscription_quota", "lite topics one lite consumer holds at most ({default})"),
    Flag("max_sessions_per_user", "with --auth: client sessions one user holds at most; past it its own longest silent "
                                  "one goes ({default})", metavar="N"),
    Flag("max_streams_per_user", "with --auth: streaming calls (Telemetry, receives) one user has open at once; past it "
                                 "they are refused ({default})", metavar="N"),
    Flag("disk_reserve_mib", "free disk space kept beside the memtables' next flush: below it sends are refused, "
                             "'disk full' ({default})", metavar="MIB"),
    Flag("trace_enabled", "record no message traces (rockmq message trace)", option="--no-trace", const=False),
    Flag("trace_ttl_s", "keep a message's trace at most this long after it was stored (default {default})",
         option="--trace-ttl", metavar="SECONDS"),
    Flag("lite_topic_ttl_s", "a lite topic expires this long after its last message, unless its LITE topic says "
         "otherwise (default {default})", option="--lite-topic-ttl", metavar="SECONDS"),
    Flag("auto_create_topics", "refuse sends and routes for unknown topics", option="--no-auto-create-topics",
         const=False),
    Flag("workers", "broker shard processes on this machine, joined as a cluster behind --port: a number, or auto "
                    "(one per core) (default {default})", metavar="N", text=True),
    Flag("stream_send_timeout_s", "cancel a server stream whose client reads nothing for this long (default {default})",
         option="--stream-send-timeout", metavar="SECONDS"),
    Flag("drain_timeout_s", "on SIGTERM, drain (not ready, out of routes, new sends and receives refused, in-flight "
                            "writes finished) and exit within this long (default {default})", option="--drain-timeout",
         metavar="SECONDS"),
    Flag("log_level", "DEBUG, INFO, WARNING or ERROR"),
    Flag("auth_enabled", "authenticate and authorize every request (docs/security.md)", option="--auth"),
    Flag("ui_admin", "without --auth, let the dashboard (/ui/) change things: reset offsets, resend and purge dead "
                     "letters (default: read-only; with --auth the users' ACLs decide)"),
    Flag("admin_user", "with --auth: the first super user, made when there are no users yet (env ROCKMQ_ADMIN_USER)",
         metavar="NAME"),
    Flag("admin_secret", "that user's secret key (env ROCKMQ_ADMIN_SECRET)", metavar="S"),
    Flag("plaintext_port", "with --tls-cert: a plaintext listener on this port beside the TLS one (0 = any free port)",
         metavar="P"),
    Flag("client_metrics_endpoint", "tell official clients to export their metrics (OTLP) to HOST:PORT",
         metavar="HOST:PORT"),
    Flag("tls_ca", "CA (PEM) that this broker's own connections to other brokers, name servers and its primary verify "
                   "against (turns them to TLS)", metavar="FILE"),
    Flag("coordinator", "the etcd that holds this broker group's primary: etcd://HOST:PORT[,HOST:PORT...] (automatic "
                        "failover: docs/cluster.md; the member needs a fixed --port)", metavar="URL"),
    Flag("coordinator_lease_s", "a member's lease in etcd, in whole seconds (default {default})",
         option="--coordinator-lease", metavar="SECONDS"),
    Flag("coordinator_user", "etcd user (with --coordinator-password, env ROCKMQ_COORDINATOR_PASSWORD)", metavar="NAME"),
    Flag("coordinator_password", "that etcd user's password (env ROCKMQ_COORDINATOR_PASSWORD)", metavar="S"),
    Flag("coordinator_ca", "CA (PEM) that etcd's certificate is verified against (turns the connection to TLS)",
         metavar="FILE"),
    Flag("coordinator_cert", "client certificate chain (PEM) for etcd's TLS", metavar="FILE"),
    Flag("coordinator_key", "the private key (PEM) of --coordinator-cert", metavar="FILE"),
)

# A listener's files, on both servers (a name server reads them from its arguments itself).
LISTENER = (
    Flag("tls_cert", "serve TLS on --port with this certificate chain (PEM), re-read when it changes", metavar="FILE"),
    Flag("tls_key", "the private key (PEM) of --tls-cert", metavar="FILE"),
    Flag("ready_file", "once accepting connections, write HOST:PORT to PATH", metavar="PATH", setting=False),
)

# On both servers, and resolved through Settings by both (flags, else ROCKMQ_* variables; checked once).
CLUSTER = (
    Flag("inner_access_key", "the cluster's inner credentials, the same on every broker and name server: with auth on, "
                             "replication and name servers answer only calls signed with them (env "
                             "ROCKMQ_INNER_ACCESS_KEY)", metavar="K"),
    Flag("inner_secret_key", "their secret key (env ROCKMQ_INNER_SECRET_KEY)", metavar="S"),
    Flag("max_connections", "close connections past N as they are accepted (default: from the open-files limit, raised "
                            "to its hard limit)", metavar="N"),
    Flag("idle_connection_timeout_s", "close a connection with no call for this long (default {default})",
         option="--idle-connection-timeout", metavar="SECONDS"),
    Flag("http_port", "serve /metrics, /healthz and /readyz over HTTP on this port of --host (HTTPS with --tls-cert; "
                      "/metrics behind HTTP Basic with --auth) (default: none; 0 = any free port)", metavar="P"),
    Flag("audit_format", "audit lines as text (fields in a fixed order, values quoted and escaped) or one JSON object "
                         "a line (default {default})", choices=AUDIT_FORMATS),
)


def add_flags(parser: argparse.ArgumentParser, *tables: Iterable[Flag]) -> None:
    for table in tables:
        for flag in table:
            flag.add_to(parser)


def overrides(args: argparse.Namespace, *tables: Iterable[Flag]) -> dict[str, Any]:
    """The `Settings` overrides the tables' flags give (None: not given)."""
    return {flag.name: getattr(args, flag.name) for table in tables for flag in table if flag.setting}


# --- a server's start ----------------------------------------------------------------------------


def private_files() -> None:
    """A server's files are its user's alone (umask 077): the data directory is made 0700 and every
    file 0600 — RocksDB's (message bodies, the receipt-handle secret), users.json, acl.json, the
    ready file — and RocksDB's threads and the shards of --workers inherit it (docs/security.md)."""
    os.umask(0o077)


def check_tls_files(cert: str, key: str, ca: str = "") -> None:
    """A server's TLS files read and fitting together before anything starts (exit 2 if not)."""
    from rockmq.plumbing.tls import TlsError, check_ca, check_files

    try:
        if cert:
            check_files(cert, key)
        if ca:
            check_ca(ca)
    except TlsError as e:
        raise CliError(str(e), EXIT_USAGE) from None


def log_at(level: str, audit_format: str = "text") -> None:
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
