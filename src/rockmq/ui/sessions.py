"""The dashboard's logins with --auth: a session per login, held in this process (bounded, each expiring),
named by a random token the browser keeps in a signed cookie (HttpOnly, SameSite=Strict, Secure over TLS),
with its own CSRF token that every change (a POST) must carry. The session holds the user's credentials:
the pages' admin calls are signed as that user, so the broker's ACLs decide what they see. A restart
logs everyone out (the signing key is the process's own)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass

from rockmq.plumbing.credentials import Credentials

COOKIE = "rockmq_ui"
TTL_S = 8 * 3600.0  # a login lasts a working day
MAX_SESSIONS = 1024  # past it, the oldest login is dropped


@dataclass(frozen=True)
class Session:
    user: Credentials
    csrf: str
    expires: float  # monotonic


class Sessions:
    def __init__(self, ttl_s: float = TTL_S, limit: int = MAX_SESSIONS) -> None:
        self.ttl_s, self.limit = ttl_s, limit
        self._key = secrets.token_bytes(32)
        self._open: OrderedDict[str, Session] = OrderedDict()

    def open(self, user: Credentials) -> tuple[str, Session]:
        """A new session of `user` -> (the cookie's value, the session)."""
        token = secrets.token_urlsafe(32)
        session = Session(user, secrets.token_urlsafe(32), time.monotonic() + self.ttl_s)
        self._open[token] = session
        while len(self._open) > self.limit:
            self._open.popitem(last=False)
        return f"{token}.{self._sign(token)}", session

    def get(self, cookie: str) -> Session | None:
        """The live session a cookie names (None: none, forged, or expired)."""
        token = self._token(cookie)
        session = self._open.get(token) if token else None
        if session is not None and session.expires <= time.monotonic():
            del self._open[token]
            return None
        return session

    def close(self, cookie: str) -> None:
        token = self._token(cookie)
        if token:
            self._open.pop(token, None)

    def _token(self, cookie: str) -> str:
        token, _, signature = cookie.partition(".")
        return token if signature and hmac.compare_digest(signature, self._sign(token)) else ""

    def _sign(self, token: str) -> str:
        return hmac.new(self._key, token.encode(), hashlib.sha256).hexdigest()
