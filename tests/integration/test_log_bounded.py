"""No request can make a broker write an unbounded log (issue 20 §4.2): 10,000 malformed requests
(a forged signature, bytes that do not parse, a call of a method that needs a user) write a few
lines of each kind a second, the audit's still saying who and what, with a count of those left out."""

from __future__ import annotations

import time

import grpc
from broker_process import AUTH_ARGS, BrokerProcess
from mqwire import META, RPC_TIMEOUT

from rockmq.plumbing.log_limit import BURST, SUMMARY_S
from rockmq.plumbing.signature import date_now
from rockmq.protocol import pb, rpc, svc

REQUESTS = 10_000
IN_FLIGHT = 200


def test_malformed_requests_write_a_bounded_log(tmp_path):
    broker = BrokerProcess(tmp_path / "data", *AUTH_ARGS).start()
    forged = (*META, ("x-mq-date-time", date_now()),
              ("authorization", "MQv2-HMAC-SHA1 Credential=nobody, SignedHeaders=x-mq-date-time, Signature=00"))
    try:
        with grpc.insecure_channel(broker.endpoint) as channel:
            route = svc.MessagingServiceStub(channel).QueryRoute
            garbage = channel.unary_unary("/apache.rocketmq.v2.MessagingService/SendMessage")
            calls = [
                lambda: route.future(rpc.QueryRouteRequest(topic=pb.Resource(name="t")), metadata=forged, timeout=RPC_TIMEOUT),
                lambda: route.future(rpc.QueryRouteRequest(topic=pb.Resource(name="t")), metadata=META, timeout=RPC_TIMEOUT),
                lambda: garbage.future(b"\xff\xff\xff", metadata=META, timeout=RPC_TIMEOUT),
            ]
            before, start = broker.lines_logged, time.monotonic()
            for first in range(0, REQUESTS, IN_FLIGHT):
                pending = [calls[i % len(calls)]() for i in range(first, first + IN_FLIGHT)]
                for p in pending:
                    p.exception()  # answered (refused), whatever the answer
            elapsed = time.monotonic() - start
        time.sleep(SUMMARY_S + 0.5)  # the count of what was left out, and the last lines through the pipe
        written = broker.lines_logged - before
        log = "\n".join(broker.log)
    finally:
        broker.stop()
    assert written <= 3 * BURST * (elapsed + 2), f"{written} lines for {REQUESTS} requests in {elapsed:.1f} s:\n{log}"
    assert "authentication-failed who=" in log and "what=" in log, log
    assert "lines-left-out" in log, log
