"""The standard `grpc.health.v1` service on the broker's gRPC port, for load balancers, Kubernetes'
gRPC probes and `grpc_health_probe`: SERVING for the whole server ("") and for the services clients
use while the broker is ready (broker/health.py), NOT_SERVING while it is not (draining, fenced...).

Open to anyone, with authentication on and on the plaintext port too (auth/permissions.py says why):
the answer is one of two words.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, TypeAlias

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rockmq.broker.health import Health
from rockmq.plumbing.requests import Context
from rockmq.protocol.conventions import BATCH_SERVICE, MESSAGING_SERVICE

SERVICES = frozenset({"", MESSAGING_SERVICE, BATCH_SERVICE})  # what a health check may name
WATCH_POLL_S = 1.0  # how often a Watch looks again (readiness is computed; only a drain is an event)
Status: TypeAlias = "health_pb2.HealthCheckResponse.ServingStatus"


class HealthServicer(health_pb2_grpc.HealthServicer):
    def __init__(self, health: Health) -> None:
        self.health = health

    def _status(self, service: str) -> Status:
        if service not in SERVICES:
            return health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
        return health_pb2.HealthCheckResponse.SERVING if self.health.ready else health_pb2.HealthCheckResponse.NOT_SERVING

    async def Check(self, request: health_pb2.HealthCheckRequest, context: Any) -> health_pb2.HealthCheckResponse:
        status = self._status(request.service)
        if status == health_pb2.HealthCheckResponse.SERVICE_UNKNOWN:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {request.service[:100]!r}")
        return health_pb2.HealthCheckResponse(status=status)

    async def Watch(self, request: health_pb2.HealthCheckRequest, context: Context) -> None:
        """The status now, then each change; the stream ends once the broker drains (after saying
        NOT_SERVING), so that it does not hold the server's shutdown."""
        last: Status | None = None
        while True:
            draining = self.health.draining  # read first: the status written last then says it
            status = self._status(request.service)
            if status != last:
                await context.write(health_pb2.HealthCheckResponse(status=status))
                last = status
            if draining:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.health.drain_began.wait(), WATCH_POLL_S)
