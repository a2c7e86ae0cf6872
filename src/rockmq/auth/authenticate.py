"""Authentication of a request from its `authorization` and `x-mq-date-time` headers (no I/O):
Apache RocketMQ's rules (security-notes.md), with a bounded cache of signatures already checked."""

from __future__ import annotations

from typing import Protocol

from rockmq.auth import signature
from rockmq.auth.users import NAME, User

CACHE_SIZE = 4096  # (authorization, date) pairs remembered; a client re-signs once a second


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
    names exist and which are enabled (issue 32 §9)."""

    def __init__(self, reason: str, user: str = "", message: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.user = user
        self.message = message or reason


class Authenticator:
    def __init__(self, users: UserLookup) -> None:
        self.users = users
        self._checked: dict[tuple[str, str], User] = {}
        self._generation = users.generation

    def authenticate(self, authorization: str, date: str) -> User:
        """The user who signed the request, or AuthFailed."""
        if self._generation != self.users.generation:  # a user changed: check everything again
            self._checked = {}
            self._generation = self.users.generation
        known = self._checked.get((authorization, date))
        if known is not None:
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
        if not NAME.fullmatch(name):  # nobody's name: kept out of the audit line's `who` (it could forge its fields)
            raise AuthFailed(f"unknown user {name[:64]!r}", message=FAILED)
        if not date:
            raise AuthFailed(f"user {name!r}: the {signature.DATE_HEADER} header is missing", name)
        user = self.users.get(name)
        signed = signature.verify(_NOBODY if user is None else user.secret, date, digest)  # the same work whoever it is
        if user is None:
            raise AuthFailed(f"unknown user {name!r}", name, FAILED)
        if not user.enabled:
            raise AuthFailed(f"user {name!r} is disabled", name, FAILED)
        if not signed:
            raise AuthFailed(f"user {name!r}: the signature does not match (wrong secret key?)", name, FAILED)
        return user
