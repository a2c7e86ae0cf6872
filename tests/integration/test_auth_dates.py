"""Issue 32 §2: a signature's date is checked. On d850dd3 headers dated 1970, 2099, `not-a-date` or
5,000 × `x` were accepted, so a header captured once signed every call forever. Now a date that is
not one, or further from the broker's clock than `auth_max_clock_skew_s` beyond any time zone's
offset, is refused UNAUTHORIZED (the typed status the official clients read) and audited; a client
in UTC+8 that signs its local time labelled Z (the official Python client 5.1.2) still gets in."""

from __future__ import annotations

import time

import pytest
from broker_process import AUTH_ADMIN, AUTH_SECRET
from mqwire import META, RPC_TIMEOUT
from waiting import wait_for

from rockmq.plumbing.channels import open_channel
from rockmq.plumbing.signature import AUTHORIZATION_HEADER, DATE_HEADER, authorization, date_now
from rockmq.protocol import pb, rpc, svc


def _route_status(endpoint: str, date: str) -> pb.Status:
    headers = (*META, (DATE_HEADER, date), (AUTHORIZATION_HEADER, authorization(AUTH_ADMIN, AUTH_SECRET, date)))
    with open_channel(endpoint) as ch:
        reply = svc.MessagingServiceStub(ch).QueryRoute(rpc.QueryRouteRequest(topic=pb.Resource(name="dates")),
                                                        metadata=headers, timeout=RPC_TIMEOUT)
    return reply.status


@pytest.mark.parametrize("date, says", [
    (lambda: "19700101T000000Z", "from the broker's clock"), (lambda: "20990101T000000Z", "from the broker's clock"),
    (lambda: "not-a-date", "not a date"), (lambda: "x" * 5000, "not a date"),
    (lambda: date_now(time.time() + 15 * 3600), "auth_max_clock_skew_s")],
    ids=["1970", "2099", "not-a-date", "5000-x", "15h-ahead"])
def test_a_date_far_from_the_clock_or_no_date_is_refused_and_audited(auth_broker, date, says):
    status = _route_status(auth_broker.endpoint, date())
    assert status.code == pb.UNAUTHORIZED and says in status.message, status
    assert "x" * 41 not in status.message  # the broker repeats at most a bounded part of it
    wait_for(lambda: any("authentication-failed" in line and says in line for line in auth_broker.log), 5,
             what="the refusal in the audit log")


@pytest.mark.parametrize("ahead_h", [0, 8, -5, 5.5])
def test_a_date_off_by_a_time_zone_passes(auth_broker, ahead_h):
    """The signature is right and the date is some zone's local time: the route is answered."""
    assert _route_status(auth_broker.endpoint, date_now(time.time() + ahead_h * 3600)).code == pb.OK
