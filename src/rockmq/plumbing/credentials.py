"""A client's credentials: every call it makes carries `authorization` and `x-mq-date-time`,
signed as the official clients sign them (signature.py). The signature covers the date only, so
the headers are made once per second and reused."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

import grpc

from rockmq.plumbing.signature import AUTHORIZATION_HEADER, DATE_FORMAT, DATE_HEADER, authorization

USER_NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")  # no '/', ',' or '=': a name must survive the authorization header
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

    def __eq__(self, other: object) -> bool:  # a key of channel caches
        return isinstance(other, Credentials) and (self.access_key, self._secret_key) == (other.access_key, other._secret_key)

    def __hash__(self) -> int:
        return hash((self.access_key, self._secret_key))

    def __reduce__(self) -> tuple[type[Credentials], tuple[str, str]]:  # travels to Spark's executors
        return Credentials, (self.access_key, self._secret_key)

    @property
    def secret_key(self) -> str:
        return self._secret_key


def credentials_from(access_key: str | None, secret_key: str | None,
                     environ: Mapping[str, str] | None = None) -> Credentials | None:
    """Credentials from explicit keys (both), else from ROCKMQ_ACCESS_KEY / ROCKMQ_SECRET_KEY; None
    if neither is there. One key without the other is a ValueError (a mistake to say, not to ignore)."""
    if access_key is None and secret_key is None:
        env = os.environ if environ is None else environ
        access_key, secret_key = env.get(ACCESS_KEY_ENV) or None, env.get(SECRET_KEY_ENV) or None
    if access_key is None and secret_key is None:
        return None
    if not access_key or not secret_key:
        raise ValueError(f"give both an access key and a secret key (--access-key / --secret-key, or "
                         f"{ACCESS_KEY_ENV} / {SECRET_KEY_ENV})")
    return Credentials(access_key, secret_key)


class _Details(NamedTuple):
    method: str
    timeout: float | None
    metadata: Any
    credentials: Any
    wait_for_ready: bool | None
    compression: Any


class _Signing(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
               grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds the signing headers to every call of a blocking channel."""

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials

    def _signed(self, d: Any) -> Any:
        return _Details(d.method, d.timeout, (*(d.metadata or ()), *self.credentials.headers()), d.credentials,
                        d.wait_for_ready, d.compression)

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._signed(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._signed(details), request)

    def intercept_stream_unary(self, continuation: Any, details: Any, request_iterator: Any) -> Any:
        return continuation(self._signed(details), request_iterator)

    def intercept_stream_stream(self, continuation: Any, details: Any, request_iterator: Any) -> Any:
        return continuation(self._signed(details), request_iterator)


def signed(channel: grpc.Channel, credentials: Credentials | None) -> grpc.Channel:
    """`channel` signing every call with `credentials` (None: the channel as it is). For the
    blocking channels of the CLI and Spark; rockmq's asyncio client signs in its session."""
    return channel if credentials is None else grpc.intercept_channel(channel, _Signing(credentials))
