"""The unmodified official Python client (5.1.2) against `rockmq serve --auth`: `Credentials(ak, sk)`
with the right secret sends and receives; a wrong secret, an unknown user and no credentials are
refused with UNAUTHORIZED (40100: the client's status checker raises UnauthorizedException, which its
route lookup logs before failing the send)."""

from __future__ import annotations

import logging
import time

import pytest
from broker_process import AUTH_ADMIN as ADMIN
from broker_process import AUTH_SECRET as SECRET
from official_client import producer, receive_until, send, simple_consumer
from rocketmq import Credentials


def test_right_secret_sends_and_receives(auth_broker, unique):
    topic, group = unique("auth-py"), unique("auth-py-g")
    creds = Credentials(ADMIN, SECRET)
    with producer(auth_broker.endpoint, topic, credentials=creds) as p:
        sent = send(p, topic, b"signed")
    with simple_consumer(auth_broker.endpoint, group, {topic: "*"}, credentials=creds) as c:
        got = receive_until(c, lambda got: len(got) >= 1, timeout=20)
        for m in got:
            c.ack(m)
    assert [(m.message_id, m.body) for m in got] == [(sent.message_id, b"signed")]


@pytest.mark.parametrize("creds", [Credentials(ADMIN, "wrong"), Credentials("nobody", SECRET), Credentials()],
                         ids=["wrong-secret", "unknown-user", "no-credentials"])
def test_refused_with_unauthorized(auth_broker, unique, creds, caplog):
    topic = unique("auth-py-refused")
    caplog.set_level(logging.ERROR, logger="rocketmq-python-client")
    with pytest.raises(Exception, match="route"), producer(auth_broker.endpoint, credentials=creds) as p:
        send(p, topic, b"never stored")
    assert any("40100" in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]
    log = "\n".join(auth_broker.log)
    assert "authentication-failed" in log and SECRET not in log


@pytest.fixture
def china_time(monkeypatch):
    """This process's local time zone UTC+8 (POSIX spelling: CST-8), as a client in Shanghai runs."""
    monkeypatch.setenv("TZ", "CST-8")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_client_in_utc_plus_8_signs_local_time_and_still_gets_in(auth_broker, unique, china_time):
    """Issue 32 §2: 5.1.2 labels its local time Z, 8 h ahead of the broker's UTC clock: within the
    date window, which allows any zone's offset."""
    assert time.strftime("%z") == "+0800"
    topic = unique("auth-py-tz")
    with producer(auth_broker.endpoint, topic, credentials=Credentials(ADMIN, SECRET)) as p:
        sent = send(p, topic, b"from utc+8")
    assert sent.message_id
