"""The client side of rockmq's control plane (docs/security.md, "The control plane"): channels on which a broker calls
name servers and other brokers, signing every call with the cluster's inner credentials over its
method and a fresh nonce (inner_signature.py) — and only once the endpoint has proved, by the
`Inner.Prove` handshake, that it holds the same credentials. An endpoint that cannot prove it (a
name server started without them, a stranger registered in its place) gets no signed call and no
secret: the call fails UNAUTHENTICATED, and the reason is logged once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

import grpc

from rockmq.auth.inner_signature import CHALLENGE_MAX, NONCE_HEADER, authorization, new_nonce, proves
from rockmq.plumbing.channels import CHANNEL_OPTIONS, ChannelOptions, Tls, open_aio_channel
from rockmq.plumbing.credentials import Credentials
from rockmq.plumbing.signature import AUTHORIZATION_HEADER, DATE_HEADER, date_now
from rockmq.protocol import inner, inner_grpc

log = logging.getLogger(__name__)

PROVE_METHOD = "/rockmq.inner.v1.Inner/Prove"
PROOF_TTL_S = 60.0  # an endpoint proves itself again after this (another process may hold its port by then)
PROVE_TIMEOUT_S = 5.0
_NOT_PROVEN = (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.UNAUTHENTICATED,
               grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.INVALID_ARGUMENT)


class NotProven(grpc.aio.AioRpcError):
    """The endpoint did not prove it holds the inner credentials: the call was not sent."""

    def __init__(self, endpoint: str, why: str) -> None:
        super().__init__(grpc.StatusCode.UNAUTHENTICATED, grpc.aio.Metadata(), grpc.aio.Metadata(),
                         f"{endpoint} did not prove it holds the cluster's inner credentials: no signed call "
                         f"goes to it ({why})")


class InnerSigning:
    """Proves one endpoint (again every PROOF_TTL_S) and signs each call to it."""

    def __init__(self, endpoint: str, credentials: Credentials) -> None:
        self.endpoint = endpoint
        self.credentials = credentials
        self._stub: inner_grpc.InnerStub | None = None
        self._proven_until = 0.0  # monotonic
        self._lock: asyncio.Lock | None = None
        self._said = ""  # the last refusal logged (once, not at every retry)

    def bind(self, channel: grpc.aio.Channel) -> None:
        self._stub = inner_grpc.InnerStub(channel)

    async def sign(self, details: Any) -> Any:
        """`details` with the signing headers (the handshake itself goes unsigned)."""
        method = details.method.decode() if isinstance(details.method, bytes) else details.method
        if method == PROVE_METHOD:
            return details
        await self._proven()
        date, nonce = date_now(), new_nonce()
        c = self.credentials
        signed = ((DATE_HEADER, date), (NONCE_HEADER, nonce),
                  (AUTHORIZATION_HEADER, authorization(c.access_key, c.secret_key, date, method, nonce)))
        return details._replace(metadata=grpc.aio.Metadata(*(details.metadata or ()), *signed))

    async def _proven(self) -> None:
        if time.monotonic() < self._proven_until:
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # one handshake at a time; the others wait for its outcome
            if time.monotonic() < self._proven_until:
                return
            await self._prove()
            self._proven_until = time.monotonic() + PROOF_TTL_S
            self._said = ""

    async def _prove(self) -> None:
        assert self._stub is not None, "bind() the channel first"
        challenge = os.urandom(CHALLENGE_MAX // 2)
        try:
            reply = await self._stub.Prove(inner.ProveRequest(challenge=challenge), timeout=PROVE_TIMEOUT_S)
        except grpc.aio.AioRpcError as e:
            if e.code() not in _NOT_PROVEN:
                raise  # unreachable, overloaded: the caller's usual retry
            if e.code() == grpc.StatusCode.FAILED_PRECONDITION:
                self._refuse("it has none: give it the same --inner-access-key / --inner-secret-key")
            self._refuse(f"it answered {e.code().name}: {(e.details() or '')[:80]}")
        if not proves(self.credentials.secret_key, challenge, reply.proof):
            self._refuse("its proof is wrong: it holds other inner credentials")

    def _refuse(self, why: str) -> None:
        refusal = NotProven(self.endpoint, why)
        if refusal.details() != self._said:
            log.error("%s", refusal.details())
            self._said = refusal.details() or ""
        raise refusal


class _UnaryUnary(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, signing: InnerSigning) -> None:
        self.signing = signing

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(await self.signing.sign(details), request)


class _UnaryStream(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, signing: InnerSigning) -> None:
        self.signing = signing

    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(await self.signing.sign(details), request)


class _StreamStream(grpc.aio.StreamStreamClientInterceptor):
    def __init__(self, signing: InnerSigning) -> None:
        self.signing = signing

    async def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return await continuation(await self.signing.sign(details), requests)


def inner_channel(endpoint: str, tls: Tls | None, credentials: Credentials | None,
                  options: ChannelOptions = CHANNEL_OPTIONS) -> grpc.aio.Channel:
    """An asyncio channel to a name server or broker of the cluster: with `credentials` (the inner
    ones), proving the endpoint and signing every call; without, a plain channel (auth off)."""
    if credentials is None:
        return open_aio_channel(endpoint, tls, options)
    signing = InnerSigning(endpoint, credentials)
    # One interceptor object per kind: grpc.aio files an object under the first kind it is.
    channel = open_aio_channel(endpoint, tls, options,
                               (_UnaryUnary(signing), _UnaryStream(signing), _StreamStream(signing)))
    signing.bind(channel)
    return channel
