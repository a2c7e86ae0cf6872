"""The broker's HTTP port (rockmq/http/): its /metrics (broker/metrics.py, computed before each scrape),
/healthz and /readyz, and the dashboard under /ui/ (rockmq/ui/, asking this broker's admin service);
with auth, /metrics for users granted Get on Cluster (auth/scrape.py). It outlives the broker it was
opened for: a promotion or a re-seed replaces the broker, and each scrape reads the one serving then
(`current`)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol, TypeVar

import grpc
from prometheus_client import CollectorRegistry, Metric, ProcessCollector
from prometheus_client.registry import Collector

from rockmq.auth import scrape
from rockmq.auth.access import AccessControl
from rockmq.auth.exposure import is_loopback
from rockmq.auth.users import Users
from rockmq.broker.dashboard_send import sender
from rockmq.broker.metrics import BrokerMetrics
from rockmq.broker.startup import CannotStart
from rockmq.config import Settings
from rockmq.http.app import Ready, collecting, make_app, rendering
from rockmq.http.port import CannotServe, HttpPort
from rockmq.protocol import acl_grpc, admin_grpc, messages_grpc, users_grpc
from rockmq.ui.history import Totals
from rockmq.ui.routes import add_ui

log = logging.getLogger(__name__)
S = TypeVar("S")


class Serving(Protocol):
    """What the port reads of the broker serving now."""

    metrics: BrokerMetrics
    users: Users
    access: AccessControl

    def stub_here(self, make: Callable[[grpc.aio.Channel], S]) -> S: ...
    def endpoint_here(self) -> str: ...


class _Current(Collector):
    def __init__(self, current: Callable[[], Serving]) -> None:
        self.current = current

    def describe(self) -> Iterable[Metric]:
        return ()

    def collect(self) -> Iterable[Metric]:
        return self.current().metrics.collect()


async def open_http_port(s: Settings, current: Callable[[], Serving], ready: Ready) -> HttpPort | None:
    """The HTTP port listening if `http_port` is set (CannotStart if it cannot), else None."""
    if s.http_port < 0:
        return None
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Current(current))
    ProcessCollector(registry=registry)

    def admit(authorization: str, peer: str) -> scrape.Refusal | None:
        broker = current()
        return scrape.admit(broker.users, broker.access, authorization, peer) if s.auth_enabled else None

    if s.auth_enabled and not s.tls_cert and not is_loopback(s.host):
        log.warning("the HTTP port on %s takes /metrics credentials (HTTP Basic) in cleartext: give --tls-cert and "
                    "--tls-key to make it HTTPS (docs/operations.md)", s.host)
    def refresh() -> Awaitable[None]:  # before the scrape's, and the dashboard's, reading
        return current().metrics.refresh()

    app = make_app(rendering(registry, refresh), ready, admit)
    async def totals(with_lag: bool) -> Totals:
        return Totals(*await current().metrics.totals(with_lag))

    add_ui(app, lambda: current().stub_here(admin_grpc.AdminStub), collecting(registry, refresh), s.auth_enabled,
           bool(s.tls_cert), s.ui_admin, messages=lambda: current().stub_here(messages_grpc.MessagesStub),
           users=lambda: current().stub_here(users_grpc.UsersStub), acls=lambda: current().stub_here(acl_grpc.AclsStub),
           send=sender(lambda: current().endpoint_here(), s.client_tls), totals=totals)
    port = HttpPort(app)
    try:
        await port.start(s.host, s.http_port, s.tls_cert, s.tls_key)
    except CannotServe as e:
        raise CannotStart(str(e)) from None
    return port
