"""`rockmq namesrv`: the name server's gRPC service, in the foreground."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import grpc
from prometheus_client import CollectorRegistry, ProcessCollector

from rockmq.auth.exposure import warn_if_open
from rockmq.auth.inner import Prover, inner_seam
from rockmq.auth.scrape import admit_inner
from rockmq.auth.users import User
from rockmq.config import Settings
from rockmq.http.app import make_app, rendering
from rockmq.http.port import CannotServe, HttpPort
from rockmq.namesrv.metrics import NameServerMetrics
from rockmq.namesrv.registry import Registry
from rockmq.plumbing.connection_limits import ConnectionLimits, raise_fd_limit, watch
from rockmq.plumbing.ready_file import write_ready_file
from rockmq.plumbing.stop_signals import stop_event
from rockmq.plumbing.tls import add_port, server_credentials
from rockmq.plumbing.unparsed import Guarding
from rockmq.protocol import inner_grpc, namesrv, namesrv_grpc

log = logging.getLogger(__name__)


def _now_ms() -> int:
    return int(time.time() * 1000)


class NameServer(namesrv_grpc.NameServerServicer):
    def __init__(self, timeout_ms: int) -> None:
        self.registry = Registry(timeout_ms)

    def _expire(self) -> None:
        for name in self.registry.expire(_now_ms()):
            log.warning("broker %s dropped: no registration for %d ms", name, self.registry.timeout_ms)

    async def Register(self, request: namesrv.RegisterRequest,
                       context: grpc.aio.ServicerContext[Any, Any]) -> namesrv.RegisterResponse:
        try:
            held = self.registry.register(request.broker, _now_ms())
        except ValueError as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        self._expire()
        return namesrv.RegisterResponse(timeout_ms=self.registry.timeout_ms, epoch=held.epoch,
                                        epoch_proof=held.epoch_proof)

    async def Unregister(self, request: namesrv.UnregisterRequest,
                         context: grpc.aio.ServicerContext[Any, Any]) -> namesrv.UnregisterResponse:
        dropped = self.registry.unregister(request.broker)
        if dropped:
            log.info("broker %.100s at %.100s unregistered (draining)", request.broker.name, request.broker.endpoint)
        return namesrv.UnregisterResponse(dropped=dropped)

    async def ListBrokers(self, request: namesrv.ListBrokersRequest,
                          context: grpc.aio.ServicerContext[Any, Any]) -> namesrv.ListBrokersResponse:
        self._expire()
        return namesrv.ListBrokersResponse(brokers=self.registry.brokers(request.topic))


async def start(service: NameServer, host: str, port: int, limits: ConnectionLimits,
                credentials: grpc.ServerCredentials | None = None, inner: User | None = None) -> tuple[grpc.aio.Server, int]:
    """`service` serving on `host:port` (TLS with `credentials`), its connections held to `limits` ->
    (its gRPC server, the port it got); with `inner` (the cluster's inner credentials) it answers only
    calls signed with them. `rockmq serve --workers N` embeds a name server this way to join its shards."""
    # Only brokers call a name server, and brokers sign with a nonce: the users' date window never applies.
    interceptors = [inner_seam(inner, Settings.auth_max_clock_skew_s)] if inner is not None else []
    server = grpc.aio.server(options=[*limits.server_options(), ("grpc.so_reuseport", 0)], interceptors=interceptors)
    guarding = Guarding(server)
    namesrv_grpc.add_NameServerServicer_to_server(service, guarding)
    inner_grpc.add_InnerServicer_to_server(Prover(inner), guarding)
    bound = add_port(server, f"{host}:{port}", credentials)
    if bound == 0:
        raise OSError(f"cannot listen on {host}:{port}")
    await server.start()
    return server, bound


async def open_http_port(host: str, port: int, registry: Registry, tls_cert: str = "", tls_key: str = "",
                         inner: User | None = None) -> HttpPort:
    """The name server's HTTP port: its /metrics (namesrv/metrics.py; with `inner`, for the cluster's
    inner credentials only, auth/scrape.py), /healthz and /readyz (ready while it serves)."""
    metrics = CollectorRegistry(auto_describe=False)
    metrics.register(NameServerMetrics(registry))
    ProcessCollector(registry=metrics)

    def admit(authorization: str, peer: str) -> tuple[int, str] | None:
        return admit_inner(inner, authorization, peer) if inner is not None else None

    http = HttpPort(make_app(rendering(metrics), lambda: [], admit))
    await http.start(host, port, tls_cert, tls_key)
    return http


async def serve(host: str, port: int, timeout_ms: int, limits: ConnectionLimits, ready_file: str | None = None,
                tls_cert: str = "", tls_key: str = "", inner: User | None = None, http_port: int = -1) -> None:
    """Serve until SIGTERM/SIGINT; TLS only with a certificate (re-read when its files change); with
    `inner`, only to the cluster's brokers; with `http_port`, the HTTP port too."""
    warn_if_open("name server", host, inner is not None, "--inner-access-key / --inner-secret-key")
    raise_fd_limit()  # before the connection limit is sized from it
    log.info("%s", limits.describe())
    service = NameServer(timeout_ms)
    server, bound = await start(service, host, port, limits, server_credentials(tls_cert, tls_key), inner)
    print(f"rockmq name server listening on {host}:{bound}{' (TLS)' if tls_cert else ''}", flush=True)
    http = None
    if http_port >= 0:
        try:
            http = await open_http_port(host, http_port, service.registry, tls_cert, tls_key, inner)
        except CannotServe:
            await server.stop(grace=None)
            raise
        print(f"rockmq HTTP port on {'https' if tls_cert else 'http'}://{host}:{http.port} (/metrics, /healthz, /readyz)",
              flush=True)
    stop = stop_event()
    if ready_file:
        write_ready_file(ready_file, host, bound)
    watching = asyncio.create_task(watch(limits))  # says when connections are refused
    await stop.wait()
    watching.cancel()
    if http is not None:
        await http.stop()
    await server.stop(grace=1)
