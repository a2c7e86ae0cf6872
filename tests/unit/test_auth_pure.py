"""The pure parts of authentication: the signature as the official clients make it, the header as
Apache's proxy reads it, the authenticator's rules and cache, the user store's file."""

from __future__ import annotations

import json

import pytest

from rockmq.auth.authenticate import FAILED, Authenticator, AuthFailed
from rockmq.auth.identity import source_ip
from rockmq.auth.users import UserError, Users
from rockmq.plumbing import signature
from rockmq.plumbing.credentials import Credentials, credentials_from


def test_signature_matches_the_captured_vector():
    digest = signature.signature("mysecret", "20261124T170205Z")
    assert digest.startswith("295802f0") and digest.endswith("383a")


@pytest.mark.parametrize("value, user", [
    ("MQv2-HMAC-SHA1 Credential=ak, SignedHeaders=x-mq-date-time, Signature=0a0B", "ak"),
    ("MQv2-HMAC-SHA1 Credential=ak//Rocketmq, SignedHeaders=x-mq-date-time, Signature=0a0b", "ak"),  # Go
    ("OTHER Signature=0a0b,Credential=ak", "ak"),  # neither algorithm nor order is checked
    ("MQv2-HMAC-SHA1 Credential=, SignedHeaders=x-mq-date-time, Signature=0a0b", ""),  # Credentials(): nobody
])
def test_parse(value, user):
    assert signature.parse(value) == (user, bytes.fromhex("0a0b") if user else b"")


@pytest.mark.parametrize("value, says", [
    ("MQv2-HMAC-SHA1", "no credential"),
    ("MQv2-HMAC-SHA1 Credential=ak, Signature", "has no '='"),
    ("MQv2-HMAC-SHA1 Credential=ak, Signature=xyz", "not hexadecimal"),
])
def test_parse_refuses(value, says):
    with pytest.raises(signature.BadSignature, match=says):
        signature.parse(value)


@pytest.fixture
def users(tmp_path):
    u = Users(tmp_path)
    u.create("alice", "alice-secret")
    u.create("root", "root-secret", super_user=True)
    return u


DATE = "20261125T000000Z"
AT = signature.date_seconds(DATE)  # the clock of these authenticators: the headers' date


def _header(user, secret, date=DATE):
    return signature.authorization(user, secret, date), date


def _authenticator(users):
    return Authenticator(users, 300, clock=lambda: AT)


@pytest.mark.parametrize("user, secret, says, answer", [
    ("alice", "wrong", "does not match", FAILED), ("bob", "x", "unknown user 'bob'", FAILED),
    ("", "x", "no credentials", "no credentials: sign the request with an access key and secret key")])
def test_authenticator_refuses(users, user, secret, says, answer):
    """The reason (for the audit log) says which; the answer (for the client) says nothing of who exists."""
    with pytest.raises(AuthFailed, match=says) as refused:
        _authenticator(users).authenticate(*_header(user, secret))
    assert refused.value.message == answer


def test_authenticator_forgets_what_it_checked_when_a_user_changes(users):
    auth = _authenticator(users)
    header = _header("alice", "alice-secret")
    assert auth.authenticate(*header).name == "alice"
    assert auth.authenticate(*header).name == "alice"  # cached
    users.update("alice", secret="new-secret")
    with pytest.raises(AuthFailed, match="does not match"):
        auth.authenticate(*header)
    users.update("alice", secret="alice-secret", enabled=False)
    with pytest.raises(AuthFailed, match="disabled"):
        auth.authenticate(*header)


def test_users_file_private_whole_and_reloaded(users, tmp_path):
    path = tmp_path / "users.json"
    assert path.stat().st_mode & 0o777 == 0o600
    assert {u["name"] for u in json.loads(path.read_text())} == {"alice", "root"}
    assert not list(tmp_path.glob(".*tmp"))
    again = Users(tmp_path)
    assert [(u.name, u.super_user, u.enabled) for u in again.all()] == [("alice", False, True), ("root", True, True)]
    assert "alice-secret" not in repr(again.all())


@pytest.mark.parametrize("change", [lambda u: u.create("alice", "x"), lambda u: u.create("a/b", "x"),
                                    lambda u: u.create("carol", ""), lambda u: u.delete("nobody"),
                                    lambda u: u.update("nobody", secret="x")])
def test_user_changes_refused(users, change):
    with pytest.raises(UserError):
        change(users)


def test_credentials_sign_as_the_clients_do():
    creds = Credentials("alice", "alice-secret")
    (date_key, date), (auth_key, value) = creds.headers()
    assert (date_key, auth_key) == (signature.DATE_HEADER, signature.AUTHORIZATION_HEADER)
    assert signature.parse(value) == ("alice", bytes.fromhex(signature.signature("alice-secret", date)))
    assert "alice-secret" not in repr(creds)


def test_credentials_from_flags_or_environment():
    assert credentials_from(None, None, {}) is None
    assert credentials_from(None, None, {"ROCKMQ_ACCESS_KEY": "a", "ROCKMQ_SECRET_KEY": "s"}).access_key == "a"
    assert credentials_from("b", "t", {"ROCKMQ_ACCESS_KEY": "a"}).access_key == "b"
    for given in (("a", None, {}), ("a", None, {"ROCKMQ_SECRET_KEY": "s"}), (None, None, {"ROCKMQ_SECRET_KEY": "s"})):
        with pytest.raises(ValueError, match="both"):
            credentials_from(*given)


@pytest.mark.parametrize("peer, ip", [("ipv4:10.1.2.3:5000", "10.1.2.3"), ("ipv6:[::1]:5000", "::1"), ("unix:/x", "")])
def test_source_ip(peer, ip):
    assert source_ip(peer) == ip
