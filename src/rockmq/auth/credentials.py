"""A client's credentials: every call it makes carries `authorization` and `x-mq-date-time`,
signed as the official clients sign them (signature.py). The signature covers the date only, so
the headers are made once per second and reused."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from rockmq.auth.signature import AUTHORIZATION_HEADER, DATE_FORMAT, DATE_HEADER, authorization

ACCESS_KEY_ENV, SECRET_KEY_ENV = "ROCKMQ_ACCESS_KEY", "ROCKMQ_SECRET_KEY"


class Credentials:
    __slots__ = ("access_key", "_secret_key", "_second", "_headers")

    def __init__(self, access_key: str, secret_key: str) -> None:
        if not access_key or not secret_key:
            raise ValueError("credentials need both an access key and a secret key")
        self.access_key = access_key
        self._secret_key = secret_key
        self._second = -1
        self._headers: tuple[tuple[str, str], ...] = ()

    def headers(self) -> tuple[tuple[str, str], ...]:
        """The two headers signing a call made now."""
        now = int(time.time())
        if now != self._second:
            date = time.strftime(DATE_FORMAT, time.gmtime(now))
            self._headers = ((DATE_HEADER, date), (AUTHORIZATION_HEADER, authorization(self.access_key, self._secret_key, date)))
            self._second = now
        return self._headers

    def __repr__(self) -> str:  # never the secret
        return f"Credentials({self.access_key!r}, ***)"


def credentials_from(access_key: str | None, secret_key: str | None,
                     environ: Mapping[str, str] | None = None) -> Credentials | None:
    """Credentials from explicit keys, else ROCKMQ_ACCESS_KEY / ROCKMQ_SECRET_KEY; None if neither.
    One key without the other is a ValueError (a mistake to say, not to ignore)."""
    env = os.environ if environ is None else environ
    access_key = access_key or env.get(ACCESS_KEY_ENV) or None
    secret_key = secret_key or env.get(SECRET_KEY_ENV) or None
    if access_key is None and secret_key is None:
        return None
    if access_key is None or secret_key is None:
        raise ValueError(f"give both an access key and a secret key (--access-key / --secret-key, or "
                         f"{ACCESS_KEY_ENV} / {SECRET_KEY_ENV})")
    return Credentials(access_key, secret_key)
