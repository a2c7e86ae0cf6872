"""How many connections a server holds, and for how long: bounded, so idle or half-open sockets
cannot use up its file descriptors (docs/architecture.md §14).

gRPC core enforces all three limits (channel args), at accept and on its timers, so neither the
data path nor the event loop pays anything in Python:

- `max_connections`: a connection past it is closed as it is accepted
  ('grpc.max_allowed_incoming_connections'); the client sees UNAVAILABLE, which clients retry.
  Those already open are served as before. 0 means sized from the open-files limit, which a server
  first raises to its hard limit (`raise_fd_limit`), keeping a reserve for what else holds a
  descriptor: RocksDB's tables and WAL, the broker's own connections (replicas, name servers, other
  brokers), the event loop's.
- `idle_connection_timeout_s`: a connection with no call in flight for that long gets a GOAWAY and
  is closed ('grpc.max_connection_idle_ms'); a client's channel reconnects on its next call. An open
  stream (Telemetry, a long poll, a replica's Follow) is a call, so a live client is never idle.
- `connection_handshake_timeout_s`: a socket that has not completed the TLS handshake and sent the
  HTTP/2 preface and SETTINGS by then is closed ('grpc.server_handshake_timeout_ms').

gRPC core refuses silently, so `watch` tells the operator: one line when the process's sockets
reach the limit, one when they are below it again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
from dataclasses import dataclass

FD_RESERVE_MIN = 1024  # descriptors kept back from connections, at least ...
FD_RESERVE_SHARE = 4  # ... or a quarter of the limit, whichever is more
MIN_CONNECTIONS = 64  # even under a tiny open-files limit
WATCH_S = 2.0  # how often `watch` looks (a directory listing; sockets are counted only near the limit)
FDS = "/proc/self/fd"

log = logging.getLogger(__name__)


def raise_fd_limit() -> int:
    """Raise this process's soft open-files limit to its hard limit (as far as the kernel lets) -> the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass  # a container may cap it below the hard limit: keep what we have
    return fd_limit()


def fd_limit() -> int:
    """This process's soft open-files limit."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def default_max_connections(fds: int) -> int:
    """The connections `fds` descriptors allow, after the reserve."""
    return max(MIN_CONNECTIONS, fds - max(FD_RESERVE_MIN, fds // FD_RESERVE_SHARE))


MAX_TIMEOUT_S = (2**31 - 1) / 1000  # gRPC core takes the timeouts as C int milliseconds (about 24.8 days)


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int  # 0: `default_max_connections` of the open-files limit when the server starts
    idle_timeout_s: float
    handshake_timeout_s: float

    @property
    def connections(self) -> int:
        return self.max_connections or default_max_connections(fd_limit())

    def server_options(self) -> list[tuple[str, int]]:
        """The gRPC server's channel args that enforce these limits."""
        return [("grpc.max_allowed_incoming_connections", self.connections),
                ("grpc.max_connection_idle_ms", round(self.idle_timeout_s * 1000)),
                ("grpc.server_handshake_timeout_ms", round(self.handshake_timeout_s * 1000))]

    def describe(self) -> str:
        """One line for the start log."""
        return (f"at most {self.connections} connections (open files limit {fd_limit()}), "
                f"closed after {self.idle_timeout_s:g} s without a call")


def open_sockets(at_least: int) -> int:
    """The sockets this process holds, counted only if it holds at least `at_least` descriptors
    (else their number, which is fewer); 0 where /proc is not there."""
    try:
        fds = os.listdir(FDS)
        if len(fds) < at_least:
            return len(fds)
        return sum(_is_socket(fd) for fd in fds)
    except OSError:
        return 0


def _is_socket(fd: str) -> bool:
    try:
        return os.readlink(f"{FDS}/{fd}").startswith("socket:")
    except OSError:  # closed meanwhile
        return False


async def watch(limits: ConnectionLimits) -> None:
    """Say when connections past the limit start being refused, and when they no longer are."""
    limit, full = limits.connections, False
    while True:
        await asyncio.sleep(WATCH_S)
        sockets = open_sockets(limit)
        if (sockets >= limit) != full:
            full = not full
            if full:
                log.warning("%d sockets open, max_connections %d reached: new connections are closed as they are "
                            "accepted (raise --max-connections, or the open-files limit it is sized from)", sockets, limit)
            else:
                log.warning("%d sockets open, below max_connections %d again: new connections are accepted", sockets, limit)
