"""How many connections a server holds, and for how long: bounded, so idle or half-open sockets
cannot use up its file descriptors (issue 20 §2.2).

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
"""

from __future__ import annotations

import resource
from dataclasses import dataclass

FD_RESERVE_MIN = 1024  # descriptors kept back from connections, at least ...
FD_RESERVE_SHARE = 4  # ... or a quarter of the limit, whichever is more
MIN_CONNECTIONS = 64  # even under a tiny open-files limit


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
