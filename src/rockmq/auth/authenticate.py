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


class AuthFailed(Exception):
    """The request is not authenticated; the message says why and names the user, never a secret."""

    def __init__(self, message: str, user: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.user = user


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
            raise AuthFailed(f"unknown user {name[:64]!r}")
        if not date:
            raise AuthFailed(f"user {name!r}: the {signature.DATE_HEADER} header is missing", name)
        user = self.users.get(name)
        if user is None:
            raise AuthFailed(f"unknown user {name!r}", name)
        if not user.enabled:
            raise AuthFailed(f"user {name!r} is disabled", name)
        if not signature.verify(user.secret, date, digest):
            raise AuthFailed(f"user {name!r}: the signature does not match (wrong secret key?)", name)
        return user
