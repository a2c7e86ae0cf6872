"""The control plane's pure parts (issue 19 §4): the inner credentials' settings, the seam's table of
inner-only methods, and the warning of a server open beyond loopback."""

from __future__ import annotations

import logging

import pytest

from rockmq.auth.exposure import is_loopback, warn_if_open
from rockmq.auth.inner import INNER_ONLY, inner_credentials, inner_user
from rockmq.auth.users import User
from rockmq.broker.transactions import half_value, read_half
from rockmq.config import ConfigError, Settings

INNER = {"inner_access_key": "cluster", "inner_secret_key": "s3cret"}


def test_every_replication_and_name_server_method_needs_the_inner_credentials():
    assert INNER_ONLY == {"rockmq.replication.v1.Replication/Follow", "rockmq.replication.v1.Replication/Snapshot",
                          "rockmq.namesrv.v1.NameServer/Register", "rockmq.namesrv.v1.NameServer/ListBrokers",
                          "rockmq.namesrv.v1.NameServer/Unregister"}


@pytest.mark.parametrize("settings, says", [
    ({"inner_access_key": "cluster"}, "go together"),
    ({"inner_secret_key": "s"}, "go together"),
    ({"inner_access_key": "a,b", "inner_secret_key": "s"}, "letters, digits"),
    ({"auth_enabled": True, "namesrv": "127.0.0.1:9876"}, "inner credentials"),
    ({"auth_enabled": True, "replica_of": "127.0.0.1:8081"}, "inner credentials"),
    ({"auth_enabled": True, "replication": "async"}, "inner credentials"),
])
def test_settings_refused(settings, says):
    with pytest.raises(ConfigError, match=says):
        Settings(**settings)


def test_inner_credentials_sign_and_authenticate_as_a_super_user():
    s = Settings(auth_enabled=True, namesrv="127.0.0.1:9876", **INNER)
    assert "s3cret" not in repr(s)
    assert inner_user(Settings()) is None and inner_credentials(Settings()) is None
    inner = inner_user(s)
    assert inner == User("cluster", "s3cret", super_user=True)
    headers = dict(inner_credentials(s).headers())
    assert headers["authorization"].startswith("MQv2-HMAC-SHA1 Credential=cluster,")


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True),
                                            ("localhost", True), ("0.0.0.0", False), ("::", False),
                                            ("10.1.2.3", False), ("broker.example", False)])
def test_loopback(host, loopback):
    assert is_loopback(host) is loopback


def test_one_warning_when_open_beyond_loopback(caplog):
    caplog.set_level(logging.WARNING, "rockmq.auth.exposure")
    warn_if_open("broker", "127.0.0.1", False, "--auth")
    warn_if_open("broker", "0.0.0.0", True, "--auth")
    assert not caplog.records
    warn_if_open("broker", "0.0.0.0", False, "--auth")
    assert [r.getMessage() for r in caplog.records] == [
        "this broker listens on 0.0.0.0 without authentication: anyone who can reach it can use it "
        "(turn it on with --auth, docs/security.md)"]


@pytest.mark.parametrize("owner", ["", "alice", "a" * 64])
def test_a_half_message_keeps_its_owner(owner):
    fields = (7, 0, 1_700_000_000_000, 2)
    value = half_value(fields, owner, b"sealed record")
    assert value[:1] == (b"O" if owner else b"P")  # an unowned one is stored as before owners existed
    assert read_half(value) == (fields, owner, b"sealed record")
    assert read_half(b"C") is None and read_half(b"R") is None
