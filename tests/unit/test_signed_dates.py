"""Issue 32 §2's pure parts: a request's date must be near the broker's clock (any time zone's
offset allowed), and rockmq's control-plane calls are signed over their method with a single-use
nonce; an endpoint proves it holds the inner credentials (§1)."""

from __future__ import annotations

import pytest

from rockmq.auth import inner_signature
from rockmq.auth.authenticate import FAILED, Authenticator, AuthFailed, InnerAuthenticator
from rockmq.auth.nonces import SeenNonces
from rockmq.auth.users import User
from rockmq.config import ConfigError, Settings
from rockmq.plumbing import signature

NOW = signature.date_seconds("20261129T100000Z")
HOUR = 3600


class _Users(dict):
    generation = 0


ALICE = User("alice", "alice-secret")


def _auth(now=NOW, skew=300):
    return Authenticator(_Users(alice=ALICE), skew, clock=lambda: now)


def _signed(date, user="alice", secret="alice-secret"):
    return signature.authorization(user, secret, date), date


@pytest.mark.parametrize("ahead_s", [0, 299, -299, 8 * HOUR, 8 * HOUR + 250, -5 * HOUR, 5.5 * HOUR, 5.75 * HOUR,
                                     14 * HOUR, -12 * HOUR])
def test_dates_near_the_clock_or_a_zone_offset_pass(ahead_s):
    """A client in UTC+8 signing its local time labelled Z (the official Python client 5.1.2) is 8 h ahead."""
    assert _auth().authenticate(*_signed(signature.date_now(NOW + ahead_s))).name == "alice"


@pytest.mark.parametrize("date, says", [
    ("19700101T000000Z", "s from the broker's clock"), ("20990101T000000Z", "s from the broker's clock"),
    (signature.date_now(NOW + 8 * HOUR + 450), "auth_max_clock_skew_s"), (signature.date_now(NOW + 15 * HOUR), "skew"),
    ("not-a-date", "not a date"), ("x" * 5000, "not a date"), ("20261399T000000Z", "not a date")])
def test_dates_far_from_any_zone_or_not_dates_are_refused(date, says):
    with pytest.raises(AuthFailed, match=says) as refused:
        _auth().authenticate(*_signed(date))
    assert refused.value.user == "alice" and "x" * 41 not in refused.value.reason


def test_the_date_is_checked_before_the_user_so_every_name_gets_one_answer():
    """§9: an unknown user and a known one get the same answer for a stale date."""
    stale = "20200101T000000Z"
    answers = set()
    for user in ("alice", "nobody"):
        with pytest.raises(AuthFailed) as refused:
            _auth().authenticate(*_signed(stale, user))
        answers.add(refused.value.message)
    assert len(answers) == 1 and FAILED not in answers


def test_a_cached_signature_ages_out_with_its_date():
    clock = [NOW]
    auth = Authenticator(_Users(alice=ALICE), 300, clock=lambda: clock[0])
    header = _signed(signature.date_now(NOW))
    assert auth.authenticate(*header).name == "alice"
    clock[0] += 301
    with pytest.raises(AuthFailed, match="skew"):
        auth.authenticate(*header)


INNER = User("cluster", "inner-secret", super_user=True)
REGISTER = "/rockmq.namesrv.v1.NameServer/Register"


def _inner_call(method=REGISTER, now=NOW, nonce=None, secret="inner-secret"):
    date, nonce = signature.date_now(now), nonce or inner_signature.new_nonce()
    return inner_signature.authorization("cluster", secret, date, method, nonce), date, method, nonce


def test_a_control_plane_call_works_once_for_its_method_within_its_window():
    auth = InnerAuthenticator(INNER, clock=lambda: NOW)
    call = _inner_call()
    assert auth.authenticate(*call) is INNER
    with pytest.raises(AuthFailed, match="replayed"):
        auth.authenticate(*call)
    header, date, _, nonce = _inner_call()
    with pytest.raises(AuthFailed, match="does not match its method"):  # a captured Register header opens no Follow
        auth.authenticate(header, date, "/rockmq.replication.v1.Replication/Follow", nonce)
    with pytest.raises(AuthFailed, match="s from this server's clock"):
        auth.authenticate(*_inner_call(now=NOW - inner_signature.INNER_WINDOW_S - 1))
    with pytest.raises(AuthFailed, match="does not match"):
        auth.authenticate(*_inner_call(secret="guess"))
    with pytest.raises(AuthFailed, match="32 lowercase hex"):
        auth.authenticate(*_inner_call(nonce="x" * 32))


def test_a_user_signature_is_not_a_control_plane_call():
    """The official scheme signs the date only: the inner user's name in it is nobody's (no nonce, no method)."""
    auth = InnerAuthenticator(INNER, clock=lambda: NOW)
    with pytest.raises(AuthFailed, match="not signed by the cluster's inner"):
        auth.authenticate(*_signed(signature.date_now(NOW), "alice"), REGISTER, inner_signature.new_nonce())
    assert _Users().get("cluster") is None  # and the users' authenticator does not know the inner user


def test_nonces_are_remembered_for_their_window_and_bounded():
    seen = SeenNonces(30, limit=3)
    assert seen.take("a", 0) and not seen.take("a", 59)
    assert seen.take("a", 61)  # its window passed: forgotten (a call that old is refused by its date)
    for n in "bcde":
        assert seen.take(n, 62)
    assert len(seen._until) == 3


def test_a_proof_answers_its_challenge_only():
    challenge = b"c" * 32
    answer = inner_signature.proof("inner-secret", challenge)
    assert inner_signature.proves("inner-secret", challenge, answer)
    assert not inner_signature.proves("inner-secret", b"d" * 32, answer)
    assert not inner_signature.proves("other", challenge, answer)
    # the answer can never be a request signature: those sign a date, or a date, a method and a nonce
    assert answer != bytes.fromhex(signature.signature("inner-secret", challenge.decode()))


@pytest.mark.parametrize("skew", [0, -1, 86401])
def test_the_skew_setting_is_checked(skew):
    with pytest.raises(ConfigError, match="auth_max_clock_skew_s"):
        Settings(auth_max_clock_skew_s=skew)
