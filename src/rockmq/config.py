"""One typed settings object for the broker: defaults < TOML file < ROCKMQ_* environment < flags.

Every field can be set in a TOML file (`rockmq serve --config rockmq.toml`: keys named as the
fields, in the table of their concern — `[storage]`, `[network]`, `[auth]`, `[cluster]`,
`[replication]`, `[messages]`, `[limits]` (`CONCERNS`) — or at the top level, as before), through an
environment variable `ROCKMQ_<FIELD>` (upper case; a tuple as comma separated numbers), or by a CLI
flag. The broker's limits and batch sizes are fields too: each is defined here once, and tests
shrink them.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

from rockmq.log_escape import AUDIT_FORMATS
from rockmq.plumbing.channels import MAX_MESSAGE, Tls
from rockmq.plumbing.connection_limits import MAX_TIMEOUT_S, ConnectionLimits
from rockmq.plumbing.credentials import USER_NAME
from rockmq.protocol.conventions import DEFAULT_MAX_ATTEMPTS, RETRY_LADDER_S
from rockmq.store.db import DISK_RESERVE_MIB, MEMORY_MIB, MIN_MEMORY_MIB
from rockmq.units import MiB

REPLY_OVERHEAD = 64 * 1024  # framing and the fields of a reply besides its messages, generously
MAX_CLOCK_SKEW_S = 86400.0
COORDINATOR_SCHEME = "etcd"  # the one coordinator implemented (broker/coordination/etcd.py)
# coordinator_lease_s: below 2 s etcd may lengthen the lease itself (its minimum is 1.5 election
# timeouts); above a minute a dead primary goes unreplaced too long.
MIN_LEASE_S, MAX_LEASE_S = 2, 60  # auth_max_clock_skew_s: more would let a captured header live for days


class ConfigError(ValueError):
    """A settings value is missing, unknown or of the wrong type."""


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8081
    data_dir: str = "./rockmq-data"
    # sync: a send is acknowledged after its WAL record is fsync'ed (group commit).
    # async: the WAL is fsync'ed every flush_interval_ms; a crash may lose that window.
    flush: str = "sync"
    flush_interval_ms: int = 100
    broker_name: str = "broker-a"
    # Name servers (HOST:PORT, comma separated) this broker registers with; empty: standalone.
    namesrv: str = ""
    namesrv_interval_s: float = 3.0  # how often the broker registers (keep well under their timeout)
    # Replication. A primary with `replication` async or sync keeps its recent batches for
    # replicas to follow; sync answers a send only once a replica applied it (or fails it after
    # replication_timeout_s). A broker started with replica_of (the primary's HOST:PORT) follows
    # it, serves reads only, and becomes a primary when promoted.
    replication: str = "off"
    # Under the official clients' default request timeout (3 s): a client sees SLAVE_PERSISTENCE_TIMEOUT
    # (and retries knowing the replica is missing) instead of timing out blind.
    replication_timeout_s: float = 2.0
    # In a coordinated group (coordinator), a replica more than this behind (or gone) leaves the in-sync
    # set, which a sync send otherwise waits for in full: the primary removes it before answering without it.
    replica_max_lag_ms: int = 1000
    replica_of: str = ""
    # A primary a replica followed restarts read-only until a name server or its replica confirms it
    # is still the primary (broker/cluster/fencing.py); force_primary takes writes at once.
    force_primary: bool = False
    # Broker shard processes `rockmq serve` runs on this machine, joined as a cluster (docs/cluster.md
    # "Every core"); 0: one per core (`--workers auto`). 1 is a single broker process.
    workers: int = 1
    auto_create_topics: bool = True
    auto_create_groups: bool = True
    default_queues: int = 8
    max_body_size: int = 4 * 1024 * 1024
    # Message keys and user properties together, in UTF-8 bytes (RocketMQ's proxy: 16 KiB).
    max_properties_size: int = 16 * 1024
    # Deliveries of one message to a group before it goes to %DLQ%<group>, and the wait before
    # each redelivery (RocketMQ's; the last step repeats); a FIFO group waits fifo_retry_s.
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    retry_ladder_s: tuple[float, ...] = RETRY_LADDER_S
    fifo_retry_s: float = 3.0
    dedup_window_s: int = 600
    # Retention: a queue's messages older than retention_s go, and with retention_bytes above 0,
    # the oldest messages of all queues go while the log holds more; checked every
    # retention_check_s. A queue always keeps its newest message.
    retention_s: int = 72 * 3600
    retention_bytes: int = 0
    retention_check_s: float = 60.0
    # The trace store (`rockmq message trace`): each stored message's events (delivered, acked, dead-
    # lettered...), kept with the message and at most trace_ttl_s after it was stored (docs/storage.md).
    trace_enabled: bool = True
    trace_ttl_s: int = 72 * 3600
    # A lite topic (docs/lite-topics.md) expires, its messages, name and positions removed, this long
    # after its last message: the default of a LITE topic that sets none (`topic create --lite-topic-ttl`).
    lite_topic_ttl_s: int = 24 * 3600
    # A filtered group whose POP position has not moved for this long loses its match index (the
    # entries written for it with every matching message); its next receive registers it again.
    idle_group_matches_s: int = 24 * 3600
    # RocksDB's memory, in MiB: two thirds for memtables, a third for the block cache
    # (docs/storage.md). The default, 192, keeps a broker under 300 MB RSS under load; the
    # shards of `--workers N` share it, each taking 1/N (at least MIN_MEMORY_MIB).
    store_memory_mib: int = MEMORY_MIB
    # Free disk space kept beside what the memtables' next flush writes: below it sends are refused
    # (TOO_MANY_REQUESTS, "disk full"); receives, acks and reads go on (docs/storage.md "A full disk").
    disk_reserve_mib: int = DISK_RESERVE_MIB
    max_delay_s: int = 365 * 24 * 3600
    # User properties that filtered subscriptions are indexed on, besides the tag (comma
    # separated), e.g. "MessageType": `MessageType = 'x' AND ...` then costs one lookup.
    filter_index_properties: str = ""
    # Undecided transactions: first check after txn_check_first_s, then every
    # txn_check_interval_s; after txn_check_max unanswered checks the broker rolls back.
    txn_check_first_s: float = 6.0
    txn_check_interval_s: float = 30.0
    txn_check_max: int = 15
    max_long_polling_s: float = 30.0
    # PushConsumers (auto_renew): invisible time of each delivery and of each extension, which
    # the broker keeps renewing while the client is heard from within client_silence_s.
    auto_renew_invisible_ms: int = 60_000
    client_silence_s: float = 30.0
    max_waiting_receives: int = 10_000
    # Server streams (ReceiveMessage, PullMessage, Telemetry, replication): the receives being written
    # hold at most stream_buffer_total_bytes of framed messages together; past it, each holds
    # stream_buffer_bytes (at least one message; the rest of its batch is read and framed as it is
    # written). A stream whose client reads nothing for stream_send_timeout_s is cancelled.
    stream_buffer_bytes: int = 128 * 1024
    stream_buffer_total_bytes: int = 64 * MiB
    stream_send_timeout_s: float = 30.0
    # SIGTERM drains (broker/server.py, Broker.drain): not ready, unregistered, new sends and receives
    # refused (retriable elsewhere), in-flight writes finished; the process exits within this long.
    drain_timeout_s: float = 30.0
    # Calls served at once (long polls included); beyond it gRPC answers RESOURCE_EXHAUSTED.
    max_concurrent_rpcs: int = 20_000
    # Connections (plumbing/connection_limits.py): past max_connections a new one is closed as it is accepted
    # (0: sized from the open-files limit, raised to its hard limit at start); one with no call for
    # idle_connection_timeout_s is closed (its client reconnects on its next call), and a socket
    # that has not sent the HTTP/2 preface within connection_handshake_timeout_s too.
    max_connections: int = 0
    idle_connection_timeout_s: float = 300.0
    connection_handshake_timeout_s: float = 10.0
    log_level: str = "INFO"
    # How audit lines are written (log_escape.py): text, fields in a fixed order with quoted, escaped
    # values; or json, one JSON object a line.
    audit_format: str = "text"
    # Authentication and authorization (docs/security.md): every request signed by a known user.
    # The first super user, made when the broker starts with auth on and has no users yet.
    auth_enabled: bool = False
    admin_user: str = ""
    admin_secret: str = field(default="", repr=False)
    # How far a signed request's date may be from the broker's clock, beyond any time zone's offset
    # (the official Python client signs local time labelled Z): a captured header ages out after it.
    auth_max_clock_skew_s: float = 300.0
    # TLS (docs/security.md). With tls_cert and tls_key (PEM files, re-read when they change) the `port`
    # listener is TLS only; plaintext_port adds a plaintext one beside it (-1: none; 0: any free port).
    # This broker's own clients (to other brokers, name servers, its primary) speak TLS when it serves
    # TLS or tls_ca is given, verifying against tls_ca (else the system's roots).
    tls_cert: str = ""
    tls_key: str = ""
    tls_ca: str = ""
    plaintext_port: int = -1
    # The HTTP port (rockmq/http/): /metrics, /healthz, /readyz on `host` (-1: none; 0: any free port);
    # HTTPS with tls_cert, /metrics behind HTTP Basic with auth_enabled (docs/operations.md "Metrics").
    http_port: int = -1
    # The dashboard (/ui/, docs/dashboard.md "Changes") without auth is read-only unless this is on; with
    # auth_enabled, logged-in users may change things and the broker's ACLs decide.
    ui_admin: bool = False
    # Where official clients export their own metrics (OTLP, HOST:PORT): their Settings reply says
    # `metric.on` and this endpoint ("": they export nothing).
    client_metrics_endpoint: str = ""
    # The cluster's inner credentials (auth/inner.py): with auth on, replication and the name
    # servers answer only calls signed with them; a broker signs its own calls to them and to
    # other brokers with them. Every broker and name server of a cluster gets the same pair.
    inner_access_key: str = field(default="", repr=False)
    inner_secret_key: str = field(default="", repr=False)
    # --- limits and batch sizes ---------------------------------------------------------------
    max_invisible_ms: int = 12 * 3600 * 1000  # longest invisible duration a receive may ask for
    max_receive_batch: int = 1024  # messages one receive or pull hands out at most
    receive_batch: int = 32  # ... and for a request that names no number (told to the official clients too)
    max_reply_bytes: int = 16 * MiB  # ... and bytes (at least one message)
    pop_scan_limit: int = 2048  # log entries one receive may skip per queue (filtered out)
    pull_scan_limit: int = 4096  # the same for one pull
    revive_batch: int = 1000  # expired deliveries revived per step
    revive_dlq_bytes: int = 16 * MiB  # ... and dead-letter copies written per step
    max_clients: int = 100_000  # client sessions remembered (the longest silent one of the same user goes first)
    # With auth on, one user's share (docs/security.md): its sessions (past it, its own longest silent
    # one goes), and its streaming calls open at once (past it, refused TOO_MANY_REQUESTS; super users'
    # are not counted). The last call of max_concurrent_rpcs is kept for super users' admin calls.
    max_sessions_per_user: int = 10_000
    max_streams_per_user: int = 2_000
    # Tables keyed by what clients send (docs/protocol.md "Limits"): past each, what would add an
    # entry is refused with TOO_MANY_REQUESTS naming the setting (Admin: RESOURCE_EXHAUSTED).
    max_topics: int = 100_000  # topics, besides the %RETRY%/%DLQ% topics of existing groups (bounded by max_groups)
    max_groups: int = 100_000  # consumer groups
    max_subscriptions_per_group: int = 1_000  # topics a group consumes through a filter (each its expression)
    max_client_topics: int = 1_000  # topics one client's Telemetry settings may publish or subscribe to
    max_lite_topics_per_topic: int = 10_000_000  # lite topics one LITE topic holds (LITE_TOPIC_QUOTA_EXCEEDED)
    lite_subscription_quota: int = 2_000  # lite topics one client holds (LITE_SUBSCRIPTION_QUOTA_EXCEEDED)
    max_transaction_checks: int = 1_000_000  # undecided transactions (half messages) the broker keeps checking
    max_staged_chunks: int = 100_000  # chunks the Spark sink staged and has not published or discarded (ttl: 1 h)
    max_list_page: int = 1_000  # topics or groups one ListTopics/ListGroups reply holds (the next page: its token)
    max_renewals: int = 200_000  # deliveries kept renewed for PushConsumers; beyond, their invisible time alone
    # Fetch (BatchMessaging): the caps of a request that names none, and the most it may ask for.
    fetch_records: int = 4096
    fetch_bytes: int = 8 * MiB
    max_fetch_records: int = 65536
    max_fetch_bytes: int = 32 * MiB
    timer_move_batch: int = 1000  # due delayed messages moved into their queues per write
    timer_move_bytes: int = 32 * MiB  # ... and that write's size, about
    staging_move_batch: int = 2048  # staged messages published per write
    txn_check_batch: int = 500  # due transaction checks handled per step
    replication_ring_bytes: int = 64 * MiB  # recent batches a primary keeps for replicas to catch up
    # Automatic failover (docs/cluster.md "Automatic failover"): the members of a broker group (one
    # broker_name) hold their primary, its epoch and the in-sync set in etcd at `coordinator`
    # (etcd://HOST:PORT[,HOST:PORT...]), each member under a lease of coordinator_lease_s (whole
    # seconds: etcd counts leases in seconds); with coordinator_user its password, with coordinator_ca TLS
    # (coordinator_cert and coordinator_key: a client certificate).
    coordinator: str = ""
    coordinator_lease_s: int = 3
    coordinator_user: str = ""
    coordinator_password: str = field(default="", repr=False)
    coordinator_ca: str = ""
    coordinator_cert: str = ""
    coordinator_key: str = ""

    def __post_init__(self) -> None:
        """Refuse settings no broker can run with, one ConfigError naming the setting (from a file, the
        environment or a flag alike). The checks run in this order: the first wrong setting is named."""
        self._check_finite()
        self._check_kinds_and_minimums()
        self._check_listeners_and_roles()
        self._check_credentials()
        self._check_connection_limits()
        self._check_coordinator()
        self._check_timeouts()
        self._check_reply_sizes()

    def _check_finite(self) -> None:
        """NaN passes every range check below (every comparison with it is false), so it is refused
        first; infinity would be no timeout or no size at all."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if any(isinstance(v, float) and not math.isfinite(v) for v in (value if isinstance(value, tuple) else (value,))):
                raise ConfigError(f"{f.name} must be a finite number, not {value}")

    def _check_kinds_and_minimums(self) -> None:
        """The settings that take one of a few words, and the counts and sizes below which the broker
        could not work (a queue, a batch, a byte of room)."""
        if self.flush not in ("sync", "async"):
            raise ConfigError(f"flush must be 'sync' or 'async', not {self.flush!r}")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port out of range: {self.port}")
        at_least_one = ("default_queues", "max_attempts", "max_body_size", "max_properties_size", "dedup_window_s",
                        "idle_group_matches_s",
                        "max_delay_s", "flush_interval_ms", "max_waiting_receives", "max_concurrent_rpcs", "max_invisible_ms",
                        "max_receive_batch", "max_reply_bytes", "pop_scan_limit", "pull_scan_limit", "revive_batch",
                        "revive_dlq_bytes", "max_clients", "max_sessions_per_user", "max_streams_per_user", "max_renewals",
                        "fetch_records", "fetch_bytes",
                        "max_fetch_records", "max_fetch_bytes", "timer_move_batch", "timer_move_bytes",
                        "staging_move_batch", "txn_check_batch", "replication_ring_bytes", "receive_batch",
                        "max_topics", "max_groups", "max_subscriptions_per_group", "max_client_topics",
                        "max_transaction_checks", "max_staged_chunks", "max_list_page", "stream_buffer_bytes",
                        "stream_buffer_total_bytes")
        for name in at_least_one:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, not {getattr(self, name)}")
        if self.auth_enabled and self.user_call_slots < 1:
            raise ConfigError(f"with auth_enabled, max_concurrent_rpcs ({self.max_concurrent_rpcs}) must leave users a "
                              "call besides the one kept for super users' admin calls")
        if self.audit_format not in AUDIT_FORMATS:
            raise ConfigError(f"audit_format must be 'text' or 'json', not {self.audit_format!r}")
        if self.replication not in ("off", "async", "sync"):
            raise ConfigError(f"replication must be 'off', 'async' or 'sync', not {self.replication!r}")
        if self.retention_s < 1 or self.retention_bytes < 0 or self.retention_check_s <= 0:
            raise ConfigError("retention_s must be at least 1, retention_bytes at least 0, retention_check_s above 0")
        for name in ("lite_topic_ttl_s", "max_lite_topics_per_topic", "lite_subscription_quota"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, not {getattr(self, name)}")
        if self.trace_ttl_s < 1:
            raise ConfigError(f"trace_ttl_s must be at least 1, not {self.trace_ttl_s}")
        if self.store_memory_mib < MIN_MEMORY_MIB:
            raise ConfigError(f"store_memory_mib must be at least {MIN_MEMORY_MIB}, not {self.store_memory_mib}")
        if self.disk_reserve_mib < 0:
            raise ConfigError(f"disk_reserve_mib must be at least 0, not {self.disk_reserve_mib}")
        if self.workers < 0:
            raise ConfigError(f"workers must be a number of processes or 'auto', not {self.workers}")

    def _check_listeners_and_roles(self) -> None:
        """Ports and TLS files that must fit together, and a broker's role in a cluster: what it
        listens on and whom it follows must be reachable as given."""
        if self.shards > 1 and (self.replication != "off" or self.replica_of):
            raise ConfigError("workers above 1 cannot be combined with replication or replica_of: "
                              "replicate single-process brokers")
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ConfigError("tls_cert and tls_key go together: give both (--tls-cert FILE --tls-key FILE)")
        if not -1 <= self.plaintext_port <= 65535:
            raise ConfigError(f"plaintext_port out of range: {self.plaintext_port}")
        if self.plaintext_port >= 0 and not self.tls_cert:
            raise ConfigError("plaintext_port is a plaintext listener beside a TLS one: give tls_cert and tls_key "
                              "(without them the port listener is plaintext already)")
        if not -1 <= self.http_port <= 65535:
            raise ConfigError(f"http_port out of range: {self.http_port}")
        if self.client_metrics_endpoint and not _host_port(self.client_metrics_endpoint):
            raise ConfigError(f"client_metrics_endpoint must be HOST:PORT, not {self.client_metrics_endpoint!r}")
        if self.replica_of and not names_an_address(self.replica_of) and not self.namesrv:
            raise ConfigError(f"replica_of {self.replica_of!r} is a broker name, found only through name servers: "
                              "give namesrv (--namesrv) too, or the primary's HOST:PORT")

    def _check_credentials(self) -> None:
        """Credentials that only work in pairs, and the inner credentials every broker of a cluster
        needs with auth on (its replicas and name servers answer only those)."""
        if bool(self.admin_user) != bool(self.admin_secret):
            raise ConfigError("admin_user and admin_secret (--admin-user, --admin-secret) go together")
        if not 0 < self.auth_max_clock_skew_s <= MAX_CLOCK_SKEW_S:
            raise ConfigError(f"auth_max_clock_skew_s must be above 0 and at most {MAX_CLOCK_SKEW_S:.0f} (a day), "
                              f"not {self.auth_max_clock_skew_s}")
        if bool(self.inner_access_key) != bool(self.inner_secret_key):
            raise ConfigError("inner_access_key and inner_secret_key (--inner-access-key, --inner-secret-key) go together")
        if self.inner_access_key and not USER_NAME.fullmatch(self.inner_access_key):  # it is a header's Credential
            raise ConfigError("inner_access_key: 1 to 64 letters, digits, '_', '.', '@' or '-'")
        if self.auth_enabled and not self.inner_access_key and (self.namesrv or self.replica_of or self.replication != "off"):
            raise ConfigError("with auth_enabled a broker of a cluster (namesrv, replica_of, replication) needs the "
                              "cluster's inner credentials: --inner-access-key K --inner-secret-key S (or "
                              "ROCKMQ_INNER_ACCESS_KEY / ROCKMQ_INNER_SECRET_KEY), the same on every broker and name server")

    def _check_connection_limits(self) -> None:
        """gRPC counts these timeouts in int milliseconds: out of range they would overflow or mean
        never."""
        if (self.max_connections < 0 or not 0 < self.idle_connection_timeout_s <= MAX_TIMEOUT_S
                or not 0 < self.connection_handshake_timeout_s <= MAX_TIMEOUT_S):
            raise ConfigError(f"max_connections must be at least 0 (0: from the open-files limit), "
                              f"idle_connection_timeout_s and connection_handshake_timeout_s above 0 and at most "
                              f"{MAX_TIMEOUT_S:.0f} (gRPC counts them in int milliseconds)")

    def _check_timeouts(self) -> None:
        """Every wait has a timeout above 0 (a wait of 0 or less would spin or never wait at all)."""
        if self.replication_timeout_s <= 0:
            raise ConfigError("replication_timeout_s must be above 0")
        if self.namesrv_interval_s <= 0:
            raise ConfigError(f"namesrv_interval_s must be above 0, not {self.namesrv_interval_s}")
        if self.txn_check_first_s <= 0 or self.txn_check_interval_s <= 0 or self.txn_check_max < 0:
            raise ConfigError("txn_check_first_s and txn_check_interval_s must be above 0, txn_check_max at least 0")
        if (self.auto_renew_invisible_ms < 100 or self.client_silence_s <= 0 or self.max_long_polling_s <= 0
                or self.stream_send_timeout_s <= 0):
            raise ConfigError("auto_renew_invisible_ms must be at least 100, client_silence_s, "
                              "max_long_polling_s and stream_send_timeout_s above 0")
        if self.drain_timeout_s <= 0:
            raise ConfigError(f"drain_timeout_s must be above 0, not {self.drain_timeout_s}")
        if not self.retry_ladder_s or min(self.retry_ladder_s) <= 0 or self.fifo_retry_s <= 0:
            raise ConfigError("retry_ladder_s must list waits above 0, and fifo_retry_s be above 0")

    def _check_reply_sizes(self) -> None:
        """A reply stops once past its cap, so it may hold one largest message more: all of it must
        fit in one gRPC message, or the receiving side refuses it."""
        if self.fetch_records > self.max_fetch_records or self.fetch_bytes > self.max_fetch_bytes:
            raise ConfigError("fetch_records and fetch_bytes must not exceed max_fetch_records and max_fetch_bytes")
        largest = max(self.max_reply_bytes, self.max_fetch_bytes) + self.max_body_size + self.max_properties_size
        if largest + REPLY_OVERHEAD > MAX_MESSAGE:
            raise ConfigError(f"max_reply_bytes and max_fetch_bytes plus one largest message (max_body_size + "
                              f"max_properties_size) must stay under the {MAX_MESSAGE // MiB} MiB gRPC message limit")

    def _check_coordinator(self) -> None:
        if self.coordinator:
            coordinator_endpoints(self.coordinator)
            if self.replica_of:
                raise ConfigError("with coordinator the coordinator decides who is primary: give no replica_of (--replica-of)")
            if self.replication == "off":  # and so one worker (workers above 1 do not replicate)
                raise ConfigError("with coordinator a broker is a member of a replicated group: give replication sync or "
                                  "async (--replication)")
            if not 0 < self.replica_max_lag_ms < self.replication_timeout_s * 1000:
                raise ConfigError("replica_max_lag_ms must be above 0 and under replication_timeout_s (a send waits "
                                  "that long for a lagging in-sync replica, then for its removal)")
            if bool(self.coordinator_user) != bool(self.coordinator_password):  # a password alone, without it: ignored
                raise ConfigError("coordinator_user and coordinator_password (--coordinator-user, "
                                  "--coordinator-password) go together")
        elif any((self.coordinator_user, self.coordinator_ca, self.coordinator_cert)):
            raise ConfigError("coordinator_user, coordinator_ca and coordinator_cert are for coordinator (--coordinator)")
        if not MIN_LEASE_S <= self.coordinator_lease_s <= MAX_LEASE_S:
            raise ConfigError(f"coordinator_lease_s must be {MIN_LEASE_S} to {MAX_LEASE_S} seconds, "
                              f"not {self.coordinator_lease_s}")
        if bool(self.coordinator_cert) != bool(self.coordinator_key):
            raise ConfigError("coordinator_cert and coordinator_key (--coordinator-cert, --coordinator-key) go together")
        if self.coordinator_cert and not self.coordinator_ca:
            raise ConfigError("coordinator_cert is a TLS client certificate: give coordinator_ca (--coordinator-ca) too")

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir)

    @property
    def user_call_slots(self) -> int:
        """With auth on, the calls served at once besides super users' admin calls: one is kept for
        them, so that no load of other calls keeps an operator out (auth/slots.py)."""
        return self.max_concurrent_rpcs - 1

    @property
    def shards(self) -> int:
        """How many broker processes `workers` means on this machine."""
        return self.workers or os.cpu_count() or 1

    @property
    def client_tls(self) -> Tls | None:
        """How this broker's own clients (to brokers, name servers, its primary) connect: TLS when it
        serves TLS or has a CA to verify with (None: plaintext)."""
        return Tls(self.tls_ca) if self.tls_cert or self.tls_ca else None

    @property
    def plaintext_address(self) -> str:
        """HOST:PORT of the plaintext listener beside the TLS one ('' if none)."""
        return f"{self.host}:{self.plaintext_port}" if self.tls_cert and self.plaintext_port >= 0 else ""

    @property
    def connection_limits(self) -> ConnectionLimits:
        return ConnectionLimits(self.max_connections, self.idle_connection_timeout_s, self.connection_handshake_timeout_s)

    def shard_settings(self) -> Settings:
        """What each of the `shards` processes runs with: its share of the store's memory."""
        return dataclasses.replace(self, store_memory_mib=max(MIN_MEMORY_MIB, self.store_memory_mib // self.shards))


def coordinator_endpoints(url: str) -> tuple[str, ...]:
    """The HOST:PORT endpoints of a `coordinator` URL, etcd://HOST:PORT[,HOST:PORT...] (ConfigError,
    one line, if it is not one)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme != COORDINATOR_SCHEME:
        raise ConfigError(f"coordinator must be {COORDINATOR_SCHEME}://HOST:PORT[,HOST:PORT...], not {url!r}")
    endpoints = tuple(e.strip() for e in rest.split(","))
    for e in endpoints:
        if not _host_port(e):
            raise ConfigError(f"coordinator {url!r}: {e!r} is not HOST:PORT")
    return endpoints


def names_an_address(primary: str) -> bool:
    """Whether `replica_of` is the primary's HOST:PORT; else it is a broker name (which has no ':')."""
    return ":" in primary


def _host_port(address: str) -> bool:
    host, _, port = address.rpartition(":")
    return bool(host.strip("[]")) and port.isdigit() and 0 < int(port) <= 65535


def _to_bool(value: Any) -> bool:
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError(value)
    return bool(value)


def _to_floats(value: Any) -> tuple[float, ...]:
    items = value.split(",") if isinstance(value, str) else value
    return tuple(float(v) for v in items)


def _to_workers(value: Any) -> int:
    return 0 if isinstance(value, str) and value.strip().lower() == "auto" else int(value)


def _to_text(value: Any) -> str:
    """A field's value as `ROCKMQ_<FIELD>` carries it (what `_coerce` reads back)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(repr(v) for v in value)
    return str(value)


_CONVERTERS: dict[Any, Callable[[Any], Any]] = {bool: _to_bool, int: int, float: float, str: str,
                                                 tuple[float, ...]: _to_floats}


def _converter(name: str, kind: Any) -> Callable[[Any], Any]:
    if kind not in _CONVERTERS:
        raise TypeError(f"Settings.{name}: no conversion from text to {kind}")
    return _CONVERTERS[kind]


# By the fields' types, resolved: with `from __future__ import annotations` a field's `.type` is a
# string, which is easy to compare wrongly (or not at all) and never fails loudly.
_TYPES = get_type_hints(Settings)
_CONVERT = {name: _converter(name, kind) for name, kind in _TYPES.items()} | {"workers": _to_workers}


def _coerce(name: str, value: Any) -> Any:
    try:
        return _CONVERT[name](value)
    except (TypeError, ValueError):
        kind = _TYPES[name]
        raise ConfigError(f"setting {name}: expected {kind.__name__ if isinstance(kind, type) else kind}, "
                          f"got {value!r}") from None


# Settings by concern: the TOML tables a config file may group them in, each field in exactly one
# (tests/unit/test_settings_concerns.py).
CONCERNS: Mapping[str, tuple[str, ...]] = {
    "network": ("host", "port", "max_concurrent_rpcs", "max_connections", "idle_connection_timeout_s",
                "connection_handshake_timeout_s", "stream_buffer_bytes", "stream_buffer_total_bytes",
                "stream_send_timeout_s", "drain_timeout_s", "tls_cert", "tls_key", "tls_ca", "plaintext_port", "log_level",
                "audit_format"),
    "auth": ("auth_enabled", "admin_user", "admin_secret", "auth_max_clock_skew_s", "inner_access_key",
             "inner_secret_key"),
    "storage": ("data_dir", "flush", "flush_interval_ms", "store_memory_mib", "disk_reserve_mib", "retention_s",
                "retention_bytes", "retention_check_s", "trace_enabled", "trace_ttl_s", "lite_topic_ttl_s",
                "idle_group_matches_s",
                "filter_index_properties"),
    "cluster": ("broker_name", "namesrv", "namesrv_interval_s", "workers"),
    "replication": ("replication", "replication_timeout_s", "replica_max_lag_ms", "replica_of", "force_primary",
                    "replication_ring_bytes"),
    "messages": ("auto_create_topics", "auto_create_groups", "default_queues", "max_body_size", "max_properties_size",
                 "max_attempts", "retry_ladder_s", "fifo_retry_s", "dedup_window_s", "max_delay_s",
                 "txn_check_first_s", "txn_check_interval_s", "txn_check_max", "max_long_polling_s",
                 "auto_renew_invisible_ms", "client_silence_s"),
    "limits": ("max_waiting_receives", "max_invisible_ms", "max_receive_batch", "receive_batch", "max_reply_bytes",
               "pop_scan_limit", "pull_scan_limit", "revive_batch", "revive_dlq_bytes", "max_clients",
               "max_sessions_per_user", "max_streams_per_user", "max_topics", "max_groups",
               "max_subscriptions_per_group", "max_client_topics", "max_lite_topics_per_topic",
               "lite_subscription_quota", "max_transaction_checks", "max_staged_chunks",
               "max_list_page", "max_renewals", "fetch_records", "fetch_bytes", "max_fetch_records", "max_fetch_bytes",
               "timer_move_batch", "timer_move_bytes", "staging_move_batch", "txn_check_batch"),
    "http": ("http_port", "client_metrics_endpoint", "ui_admin"),
    "coordination": ("coordinator", "coordinator_lease_s", "coordinator_user", "coordinator_password",
                     "coordinator_ca", "coordinator_cert", "coordinator_key"),
}
CONCERN_OF = {name: concern for concern, names in CONCERNS.items() for name in names}
# The settings never shown (repr, logs, `rockmq broker config`): those declared with repr=False —
# the admin's secret and the cluster's inner credentials. A new secret setting says so there.
SECRET_SETTINGS = frozenset(f.name for f in dataclasses.fields(Settings) if not f.repr)
HIDDEN = "<hidden>"


def shown(settings: Settings) -> list[tuple[str, str, bool]]:
    """Every setting as `rockmq broker config` shows it: (name, value, secret), a secret that is set
    as HIDDEN."""
    out = []
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        secret = f.name in SECRET_SETTINGS
        text = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
        out.append((f.name, HIDDEN if secret and value else text, secret))
    return out


def _file_values(data: Mapping[str, Any], source: str) -> dict[str, Any]:
    """A TOML file's settings by field name: top-level keys, and the keys of each concern's table
    (a key in another concern's table is refused, naming the right one; a key given twice too)."""
    values: dict[str, Any] = {}
    for key, value in data.items():
        if not isinstance(value, dict):
            _take(values, key, value, source)
            continue
        if key not in CONCERNS:
            raise ConfigError(f"unknown table [{key}] in {source}: the tables are {', '.join(CONCERNS)}")
        for inner, v in value.items():
            belongs = CONCERN_OF.get(inner.replace("-", "_"))
            if belongs is not None and belongs != key:
                raise ConfigError(f"setting {inner!r} is in [{key}] in {source}: it belongs in [{belongs}]")
            _take(values, inner, v, source)
    return values


def _take(values: dict[str, Any], key: str, value: Any, source: str) -> None:
    name = key.replace("-", "_")
    if name not in _CONVERT:
        raise ConfigError(f"unknown setting {key!r} in {source}")
    if name in values:
        raise ConfigError(f"setting {key!r} is given twice in {source}")
    values[name] = _coerce(name, value)


def load_settings(
    config_file: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Build the settings from the layers; `overrides` are the CLI flags (None = not given)."""
    values: dict[str, Any] = {}
    if config_file:
        try:
            data = tomllib.loads(Path(config_file).read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ConfigError(f"cannot read config file {config_file}: {e}") from None
        values.update(_file_values(data, str(config_file)))
    env = os.environ if environ is None else environ
    for name in _CONVERT:
        raw = env.get(f"ROCKMQ_{name.upper()}")
        if raw is not None:
            values[name] = _coerce(name, raw)
    for name, value in (overrides or {}).items():
        if value is not None:
            values[name] = _coerce(name, value)
    return dataclasses.replace(Settings(), **values)


def to_environ(settings: Settings) -> dict[str, str]:
    """Every setting as a `ROCKMQ_<FIELD>` variable: how `rockmq serve --workers N` hands the
    settings it resolved (file, environment, flags) to its shard processes."""
    return {f"ROCKMQ_{f.name.upper()}": _to_text(getattr(settings, f.name)) for f in dataclasses.fields(settings)}
