"""How long unary calls take, by method and response code, for /metrics' rocketmq_rpc_latency.

One recorder per process (`RPC_LATENCY`), as prometheus-client's own default registry: each server of
the process (a broker, a name server) times its unary calls in the one place every unary call already
passes, the guard of its request bytes (plumbing/unparsed.py), not in an interceptor (a layer of
awaits per call). A call costs two clock reads, a bisect and a dict update. Streaming calls (receives,
Telemetry, Follow) are not timed: their length is how long a client waits or listens. Bounded: the
keys are the server's methods times the status codes."""

from __future__ import annotations

import bisect

from prometheus_client.core import HistogramMetricFamily

BUCKETS_MS = (1, 5, 10, 20, 50, 100, 200, 500, 1000, 3000)


class RpcLatency:
    __slots__ = ("calls",)

    def __init__(self) -> None:
        # (method path, response code) -> calls per bucket (not cumulative; the last past every
        # bound), then the sum of their milliseconds
        self.calls: dict[tuple[str, str], list[float]] = {}

    def record(self, method: str, code: str, ms: float) -> None:
        counts = self.calls.get((method, code))
        if counts is None:
            counts = self.calls[(method, code)] = [0.0] * (len(BUCKETS_MS) + 2)
        counts[bisect.bisect_left(BUCKETS_MS, ms)] += 1
        counts[-1] += ms

    def family(self) -> HistogramMetricFamily:
        """rocketmq_rpc_latency (ms), labelled as RocketMQ labels it: request_code is the method
        (`MessagingService/SendMessage`), response_code the reply's RocketMQ status (gRPC's, for an
        aborted call; OK for a reply sent encoded)."""
        family = HistogramMetricFamily("rocketmq_rpc_latency", "Unary calls' latency (ms)",
                                       labels=["protocol_type", "request_code", "response_code"])
        bounds = (*(str(float(b)) for b in BUCKETS_MS), "+Inf")
        for (method, code), counts in list(self.calls.items()):
            cumulative, running = [], 0.0
            for bound, n in zip(bounds, counts, strict=False):
                running += n
                cumulative.append((bound, running))
            family.add_metric(["grpc", method.rpartition(".")[2], code], cumulative, counts[-1])
        return family


RPC_LATENCY = RpcLatency()
