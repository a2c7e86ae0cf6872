"""The connection limits a server hands gRPC core (plumbing/connection_limits.py)."""

from __future__ import annotations

from rockmq.config import Settings
from rockmq.plumbing.connection_limits import MIN_CONNECTIONS, ConnectionLimits, default_max_connections, fd_limit, open_sockets


def test_the_default_leaves_a_reserve_of_descriptors():
    assert default_max_connections(20_000) == 15_000  # a quarter kept back
    assert default_max_connections(4096) == 3072  # 1,024 kept back
    assert default_max_connections(1024) == MIN_CONNECTIONS  # a tiny limit still takes some


def test_settings_become_grpc_channel_args():
    options = dict(Settings(max_connections=100, idle_connection_timeout_s=2.5).connection_limits.server_options())
    assert options == {"grpc.max_allowed_incoming_connections": 100, "grpc.max_connection_idle_ms": 2500,
                       "grpc.server_handshake_timeout_ms": 10_000}
    unset = ConnectionLimits(0, 300, 10)
    assert unset.connections == default_max_connections(fd_limit())


def test_sockets_are_counted_only_near_the_limit():
    import socket

    a, b = socket.socketpair()
    try:
        assert open_sockets(1) >= 2  # counted: at least these two
        assert open_sockets(1 << 30) > open_sockets(1)  # far from the limit: every descriptor, unread
    finally:
        a.close()
        b.close()
