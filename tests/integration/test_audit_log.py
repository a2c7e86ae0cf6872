"""The audit log as an attacker writes into it, against a real broker (issue 32 §6, §13): a name
carrying a made-up audit line stays inside its own line's quotes, and a flood of one stranger's
failures hides neither another user's failure nor the count of what it left out."""

from __future__ import annotations

import json
import re
import time

from acl_setup import TOPIC, signed, start_acl_broker
from broker_process import AUTH_ARGS, BrokerProcess
from mqwire import META, RPC_TIMEOUT

from rockmq.plumbing.channels import open_channel
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import pb, rpc, svc

# What an operator's tooling reads as a grant: a record of the audit logger, at a line's start.
GRANT_LINE = re.compile(r"^\d{4}-\d\d-\d\d \S+ WARNING rockmq\.audit: acl-grant ")
FORGED_LINE = ("2026-11-29 08:00:00,000 WARNING rockmq.audit: acl-grant who=admin from 127.0.0.1 "
               'what=mallory * All allow result=ok who="admin" from="127.0.0.1" what="mallory * All" result="ok"')
FLOOD = 50
LEFT_OUT = re.compile(r"left.out")  # the count of lines left out, however it is worded


def _route(broker, topic: str, metadata) -> rpc.QueryRouteResponse:
    with open_channel(broker.endpoint) as ch:
        return svc.MessagingServiceStub(ch).QueryRoute(rpc.QueryRouteRequest(topic=pb.Resource(name=topic)),
                                                       metadata=metadata, timeout=RPC_TIMEOUT)


def _forged_names() -> list[str]:
    """A topic name that smuggles a grant line in after each kind of line break a reader may split on."""
    return [f"{TOPIC}{brk}{FORGED_LINE}" for brk in ("\n", "\r\n", "\r", "\u2028", "\x85")]


def test_a_topic_name_with_a_forged_audit_line_writes_no_grant(tmp_path):
    broker = start_acl_broker(tmp_path / "data")
    try:
        for name in _forged_names():
            _route(broker, name, signed("alice"))  # alice may publish to TOPIC only: refused, audited
            _route(broker, name, META)  # anonymous: refused, audited
        time.sleep(0.5)  # the last lines through the pipe
        log = list(broker.log)
    finally:
        broker.stop()
    forged = [line for line in log if GRANT_LINE.match(line) and "mallory" in line]
    assert not forged, "\n".join(log)
    assert any("rockmq.audit: authorization-refused" in line or "rockmq.audit: authentication-failed" in line
               for line in log), "\n".join(log)


def test_audit_lines_as_json_parse_to_their_fields(tmp_path):
    broker = BrokerProcess(tmp_path / "data", *AUTH_ARGS, "--audit-format", "json").start()
    try:
        _route(broker, _forged_names()[0], META)  # anonymous: refused, audited
        time.sleep(0.5)
        log = list(broker.log)
    finally:
        broker.stop()
    audit = [json.loads(line) for line in log if line.startswith("{")]
    assert any(a["logger"] == "rockmq.audit" and a["event"] == "authentication-failed" and a["who"] == "anonymous"
               and a["from"] == "127.0.0.1" for a in audit), "\n".join(log)
    assert not any(GRANT_LINE.match(line) for line in log), "\n".join(log)


def test_a_flood_of_anonymous_failures_hides_no_other_user_and_is_counted_without_more_traffic(tmp_path):
    broker = start_acl_broker(tmp_path / "data")
    try:
        with open_channel(broker.endpoint) as ch:
            route = svc.MessagingServiceStub(ch).QueryRoute
            request = rpc.QueryRouteRequest(topic=pb.Resource(name=TOPIC))
            flood = [route.future(request, metadata=META, timeout=RPC_TIMEOUT) for _ in range(FLOOD)]
            assert all(f.result().status.code == pb.UNAUTHORIZED for f in flood)
            victim = route(request, metadata=(*META, *Credentials("bob", "not-bobs-secret").headers()), timeout=RPC_TIMEOUT)
            assert victim.status.code == pb.UNAUTHORIZED
        flooded = time.monotonic()
        deadline = flooded + 6  # a few seconds, with no more traffic to carry the count
        while time.monotonic() < deadline and not any(LEFT_OUT.search(line) for line in broker.log):
            time.sleep(0.1)
        told_after = time.monotonic() - flooded
        log = list(broker.log)
    finally:
        broker.stop()
    text = "\n".join(log)
    assert any("rockmq.audit: authentication-failed" in line and "bob" in line for line in log), text
    summaries = [line for line in log if LEFT_OUT.search(line)]
    assert summaries, f"no count of the lines left out {told_after:.1f} s after the flood:\n{text}"
    assert 'from="127.0.0.1"' in summaries[0] and "authentication-failed by anonymous" in summaries[0], summaries
