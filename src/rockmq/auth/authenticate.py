"""Authentication of a request from its `authorization` and `x-mq-date-time` headers (no I/O but
the clock): Apache RocketMQ's rules (security-notes.md), with a bounded cache of signatures already
checked, and a date that must be near the broker's clock (docs/security.md); rockmq's own control-plane
calls by their stricter signature (`InnerAuthenticator`, inner_signature.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from rockmq.auth import inner_signature
from rockmq.auth.nonces import SeenNonces
from rockmq.auth.users import User
from rockmq.plumbing import signature
from rockmq.plumbing.credentials import USER_NAME

CACHE_SIZE = 4096  # (authorization, date) pairs remembered; a client re-signs once a second
DATES_CACHED = 64  # parsed dates remembered (a few a second arrive)


class UserLookup(Protocol):
    """Where users are found (users.Users); `generation` changes whenever one does."""

    @property
    def generation(self) -> int: ...

    def get(self, name: str) -> User | None: ...


FAILED = "authentication failed"  # all a client learns when its user is unknown or disabled or its secret wrong
_NOBODY = "\0no user"  # the secret an unknown user's signature is checked against: every name costs one HMAC


class AuthFailed(Exception):
    """The request is not authenticated. `reason` says why and names the user, never a secret: it
    goes to the audit log. `message` is what the client is told: the reason itself when it says
    nothing of who exists (no credentials, a malformed header), else FAILED for an unknown user, a
    disabled one and a wrong secret alike — different answers would tell a stranger which user
    names exist and which are enabled."""

    def __init__(self, reason: str, user: str = "", message: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.user = user
        self.message = message or reason


class NoUsers:
    """The UserLookup of a server only the cluster's brokers call (a name server)."""

    generation = 0

    def get(self, name: str) -> User | None:
        return None


def _bad_date(date: str, user: str) -> AuthFailed:
    return AuthFailed(f"the {signature.DATE_HEADER} header {date[:40]!r} is not a date of the form yyyyMMddTHHmmssZ", user)


class Authenticator:
    def __init__(self, users: UserLookup, max_skew_s: float, clock: Callable[[], float] = time.time) -> None:
        """`max_skew_s`: how far a request's date may be from `clock` (auth_max_clock_skew_s), after
        allowing for any time zone's offset (signature.within_skew)."""
        self.users = users
        self.max_skew_s = max_skew_s
        self.clock = clock
        self._checked: dict[tuple[str, str], User] = {}
        self._dates: dict[str, int | None] = {}
        self._generation = users.generation

    def authenticate(self, authorization: str, date: str) -> User:
        """The user who signed the request, or AuthFailed."""
        if self._generation != self.users.generation:  # a user changed: check everything again
            self._checked = {}
            self._generation = self.users.generation
        known = self._checked.get((authorization, date))
        if known is not None:
            self._check_date(date, known.name)  # the window moves on: checked every time
            return known
        user = self._check(authorization, date)
        if len(self._checked) >= CACHE_SIZE:
            self._checked = {}
        self._checked[(authorization, date)] = user
        return user

    def _check(self, authorization: str, date: str) -> User:
        try:
            name, digest = signature.parse(authorization) if authorization else ("", b"")
        except signature.BadSignature as e:
            raise AuthFailed(str(e)) from None
        if not name:
            raise AuthFailed("no credentials: sign the request with an access key and secret key")
        if not USER_NAME.fullmatch(name):  # nobody's name: kept out of the audit line's `who` (it could forge its fields)
            raise AuthFailed(f"unknown user {name[:64]!r}", message=FAILED)
        if not date:
            raise AuthFailed(f"the {signature.DATE_HEADER} header is missing", name)
        self._check_date(date, name)  # before the user is looked up: the same answer whoever it names
        user = self.users.get(name)
        signed = signature.verify(_NOBODY if user is None else user.secret, date, digest)  # the same work whoever it is
        if user is None:
            raise AuthFailed(f"unknown user {name!r}", name, FAILED)
        if not user.enabled:
            raise AuthFailed(f"user {name!r} is disabled", name, FAILED)
        if not signed:
            raise AuthFailed(f"user {name!r}: the signature does not match (wrong secret key?)", name, FAILED)
        return user

    def _check_date(self, date: str, user: str) -> None:
        """AuthFailed unless `date` is a date within the skew window (a replayed header ages out)."""
        signed = self._dates.get(date, -1)
        if signed == -1:
            if len(self._dates) >= DATES_CACHED:
                self._dates = {}
            signed = self._dates[date] = signature.date_seconds(date)
        if signed is None:
            raise _bad_date(date, user)
        now = self.clock()
        if not signature.within_skew(signed, now, self.max_skew_s):
            raise AuthFailed(f"the {signature.DATE_HEADER} header {date} is {signed - now:+.0f} s from the broker's clock: "
                             f"more than auth_max_clock_skew_s ({self.max_skew_s:g} s) from any time zone's offset "
                             "(is the client's clock right?)", user)


class InnerAuthenticator:
    """Authenticates rockmq's own control-plane calls (those carrying inner_signature.NONCE_HEADER):
    signed by the cluster's inner credentials over the date, the method and a nonce never seen
    before, the date within INNER_WINDOW_S."""

    def __init__(self, inner: User, clock: Callable[[], float] = time.time) -> None:
        self.inner = inner
        self.clock = clock
        self._seen = SeenNonces(inner_signature.INNER_WINDOW_S)

    def authenticate(self, authorization: str, date: str, method: str, nonce: str) -> User:
        """The inner user, or AuthFailed (`method`: the call's path, /package.Service/Method)."""
        try:
            name, digest = signature.parse(authorization)
        except signature.BadSignature as e:
            raise AuthFailed(str(e)) from None
        if name != self.inner.name:
            raise AuthFailed(f"a control-plane call ({inner_signature.NONCE_HEADER}) not signed by the cluster's inner "
                             f"credentials (by {name[:64]!r})", message=FAILED)
        if not inner_signature.NONCE.fullmatch(nonce):
            raise AuthFailed(f"the {inner_signature.NONCE_HEADER} header is not 32 lowercase hex digits", name)
        signed = signature.date_seconds(date)
        if signed is None:
            raise _bad_date(date, name)
        now = self.clock()
        if abs(signed - now) > inner_signature.INNER_WINDOW_S:
            raise AuthFailed(f"a control-plane call dated {date}, {signed - now:+.0f} s from this server's clock "
                             f"(at most {inner_signature.INNER_WINDOW_S} s: are the servers' clocks synchronized?)", name)
        if not inner_signature.verify_call(self.inner.secret, date, method, nonce, digest):
            raise AuthFailed("a control-plane call whose signature does not match its method (wrong inner secret key?)",
                             name, FAILED)
        if not self._seen.take(nonce, now):
            raise AuthFailed("a control-plane call whose nonce was used before: a replayed call", name, FAILED)
        return self.inner
