"""The seam: every request of every service (messaging, Telemetry, batch, admin, users,
replication, name server) is authenticated here, once, before its handler runs.

`AuthSeam` is a gRPC server interceptor, installed only when authentication is on (with it off
the broker runs exactly as before: no per-call work). For each method it wraps the handler once
(cached): the wrapper reads the call's metadata, establishes the request's `Identity`, asks the
`authorize` hook (acl's), and then runs the handler with the identity in a context variable, or
answers the refusal itself:

- MessagingService (the official clients): the typed reply with `status{UNAUTHORIZED | FORBIDDEN}`
  (a stream: one frame with it; Telemetry: a `TelemetryCommand` with it);
- rockmq's own services: gRPC UNAUTHENTICATED | PERMISSION_DENIED with one readable line.

Handlers and authorization read who asked through `identity(context)`. docs/security.md has the API.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from typing import Any, TypeAlias

import grpc
from google.protobuf.message import Message

from rockmq.auth import audit
from rockmq.auth.authenticate import Authenticator, AuthFailed, InnerAuthenticator
from rockmq.auth.identity import Identity, source_ip
from rockmq.auth.inner_signature import NONCE_HEADER
from rockmq.auth.users import User
from rockmq.plumbing.channels import CLIENT_ID_HEADER
from rockmq.plumbing.interceptors import Handler, Wrapping, result
from rockmq.plumbing.requests import Context
from rockmq.plumbing.signature import AUTHORIZATION_HEADER, DATE_HEADER
from rockmq.plumbing.tls import is_tls
from rockmq.protocol import pb, rpc
from rockmq.protocol.conventions import MESSAGING_SERVICE
from rockmq.protocol.errors import BrokerError, status

_GRPC_CODE: dict[int, grpc.StatusCode] = {pb.UNAUTHORIZED: grpc.StatusCode.UNAUTHENTICATED,
                                          pb.FORBIDDEN: grpc.StatusCode.PERMISSION_DENIED,
                                          pb.TOO_MANY_REQUESTS: grpc.StatusCode.RESOURCE_EXHAUSTED}

# (identity, service, method, request) -> None, or raise Refused (forbidden(...)). `request` is
# None for the methods that stream requests (Telemetry, Follow): they check each request inside.
Authorize: TypeAlias = "Callable[[Identity, str, str, Any], None]"

_current: ContextVar[Identity] = ContextVar("rockmq_identity")


class Refused(BrokerError):
    """A request refused by the seam: not authenticated (UNAUTHORIZED) or not allowed (FORBIDDEN);
    or past its user's share of the call slots (TOO_MANY_REQUESTS, auth/slots.py)."""

    @property
    def grpc_code(self) -> grpc.StatusCode:
        """What rockmq's own services answer it with (INVALID_ARGUMENT: an illegal name, refused
        before it was authorized)."""
        return _GRPC_CODE.get(self.code, grpc.StatusCode.INVALID_ARGUMENT)


def unauthorized(message: str) -> Refused:
    return Refused(pb.UNAUTHORIZED, message)


def forbidden(message: str) -> Refused:
    """What `authorize` raises: the message names the user, the resource and the action."""
    return Refused(pb.FORBIDDEN, message)


def identity(context: Context) -> Identity:
    """Who sent the request being handled: the seam's identity (authentication on), else an
    anonymous one made from the call (authentication off: nobody is checked)."""
    known = _current.get(None)
    return known if known is not None else describe(context)


def current_identity() -> Identity | None:
    """The seam's identity of the request being handled, where no call is at hand (None: auth off,
    or the broker acting by itself, outside any request)."""
    return _current.get(None)


def describe(context: Context, user: str = "", super_user: bool = False, client_id: str = "",
             inner: bool = False) -> Identity:
    """The identity of `user` calling through `context`: where from, over what."""
    if not client_id:
        client_id = next((str(v) for k, v in context.invocation_metadata() or () if k == CLIENT_ID_HEADER), "")
    return Identity(user, super_user, source_ip(context.peer()), is_tls(context), client_id, inner)


def super_users_only(who: Identity, service: str, method: str, request: Any) -> None:
    """The one check of admin calls that only a super user may make (users, ACLs, promote):
    acl widens it to grants."""
    if not who.super_user:
        raise forbidden(f"user {who.user!r} may not call {method}: it needs a super user")


def inner_only(who: Identity, service: str, method: str) -> None:
    """The check of the control plane's calls (replication, name-server registration): only a
    broker of the cluster, signing with its inner credentials, may make them."""
    if not who.inner:
        raise forbidden(f"user {who.user!r} may not call {service}/{method}: it needs the cluster's inner credentials "
                        "(--inner-access-key / --inner-secret-key)")


class AuthSeam(Wrapping):
    def __init__(self, authenticator: Authenticator, authorize: Authorize | None = None,
                 super_only: frozenset[str] = frozenset(), inner: InnerAuthenticator | None = None,
                 inner_methods: frozenset[str] = frozenset(), open_methods: frozenset[str] = frozenset()) -> None:
        """`super_only`: the methods (service/Method, no leading '/') only super users may call,
        before `authorize` is asked; `inner_methods`: those only the cluster's inner credentials
        may call, authenticated by `inner` (auth/inner.py; None: nobody may); `open_methods`: those
        anyone may call (the inner handshake, whose answer is its own proof)."""
        self.authenticator = authenticator
        self.authorize = authorize
        self.super_only = super_only
        self.inner = inner
        self.inner_methods = inner_methods
        self.open_methods = open_methods
        super().__init__()

    def wraps(self, path: str) -> bool:
        return path.lstrip("/") not in self.open_methods

    def admit(self, context: Context, service: str, method: str, request: Any) -> Refused | None:
        """Authenticate (and authorize) one request: None, the identity set for its handler, or the
        refusal to answer (audited)."""
        authorization = date = client_id = nonce = ""
        for key, value in context.invocation_metadata() or ():
            if key == AUTHORIZATION_HEADER:
                authorization = str(value)
            elif key == DATE_HEADER:
                date = str(value)
            elif key == CLIENT_ID_HEADER:
                client_id = str(value)
            elif key == NONCE_HEADER:
                nonce = str(value)
        try:
            user = self._authenticate(authorization, date, f"/{service}/{method}", nonce)
        except AuthFailed as e:
            audit.record("authentication-failed", str(describe(context, e.user, client_id=client_id)),
                         f"{service}/{method}", e.reason)  # why, for the operator; the client gets e.message
            return unauthorized(e.message)
        who = describe(context, user.name, user.super_user, client_id, inner=bool(nonce))
        _current.set(who)
        try:
            path = f"{service}/{method}"
            if path in self.inner_methods:
                inner_only(who, service, method)
            if path in self.super_only:
                super_users_only(who, service, method, request)
            if self.authorize is not None:
                self.authorize(who, service, method, request)
        except Refused as e:
            audit.record("authorization-refused", str(who), f"{service}/{method}", e.message)
            return e
        return None

    def _authenticate(self, authorization: str, date: str, path: str, nonce: str) -> User:
        """A control-plane call (it carries a nonce) by the inner credentials' rules, else a user's."""
        if not nonce:
            return self.authenticator.authenticate(authorization, date)
        if self.inner is None:
            raise AuthFailed("a control-plane call to a server without the cluster's inner credentials "
                             "(--inner-access-key / --inner-secret-key)")
        return self.inner.authenticate(authorization, date, path, nonce)

    def wrap(self, path: str, h: Handler) -> Handler:
        service, _, method = path.lstrip("/").rpartition("/")
        answer = Answer(service, method, h)
        admit = self.admit
        if h.unary_unary is not None or h.stream_unary is not None:  # one reply
            streams = h.unary_unary is None
            inner_one: Any = h.stream_unary if streams else h.unary_unary

            async def one(request: Any, context: Context) -> Any:
                refused = admit(context, service, method, None if streams else request)
                if refused is not None:
                    return await answer.one(refused, context)
                return await result(inner_one(request, context))

            return h._replace(**{"stream_unary" if streams else "unary_unary": one})  # type: ignore[attr-defined,no-any-return]
        streaming_requests = h.stream_stream is not None
        inner: Any = h.stream_stream if streaming_requests else h.unary_stream
        if inspect.iscoroutinefunction(inner):  # writes its replies with context.write

            async def writer(request: Any, context: Context) -> None:
                refused = admit(context, service, method, None if streaming_requests else request)
                if refused is not None:
                    await context.write(await answer.one(refused, context))
                    return
                await inner(request, context)

            wrapped: Any = writer
        else:

            async def stream(request: Any, context: Context) -> AsyncIterator[Any]:
                refused = admit(context, service, method, None if streaming_requests else request)
                if refused is not None:
                    yield await answer.one(refused, context)
                    return
                if not streaming_requests:
                    async for reply in inner(request, context):
                        yield reply
                    return
                if identity(context).inner:  # the inner credentials do not change while a broker runs (and its nonce is spent)
                    async for reply in inner(request, context):
                        yield reply
                    return
                lapsed: list[Refused] = []  # the stream's user, disabled or deleted (or its secret changed) since it opened
                async for reply in inner(_still_admitted(request, lambda: admit(context, service, method, None), lapsed),
                                         context):
                    yield reply
                if lapsed:
                    yield await answer.one(lapsed[0], context)

            wrapped = stream
        field = "stream_stream" if streaming_requests else "unary_stream"
        return h._replace(**{field: wrapped})  # type: ignore[attr-defined,no-any-return]


async def _still_admitted(requests: AsyncIterator[Any], admit: Callable[[], Refused | None],
                          lapsed: list[Refused]) -> AsyncIterator[Any]:
    """A stream's requests, each admitted again with the metadata it opened with (a cached check):
    they end, the refusal in `lapsed`, once its user no longer passes."""
    async for request in requests:
        refused = admit()
        if refused is not None:
            lapsed.append(refused)
            return
        yield request


class Answer:
    """How one method answers a refusal: a typed reply (MessagingService) or a gRPC status."""

    def __init__(self, service: str, method: str, h: Handler) -> None:
        self.reply_type: type[Message] | None = None
        self.encoded = False
        if service == MESSAGING_SERVICE:  # answers refusals inside its typed replies
            self.reply_type = rpc.TelemetryCommand if method == "Telemetry" else getattr(rpc, f"{method}Response", None)
        if self.reply_type is not None and h.response_serializer is not None:
            # A handler whose serializer passes bytes through (pre-encoded frames) gets bytes.
            self.encoded = not isinstance(h.response_serializer(self.reply_type()), bytes)

    async def one(self, refused: Refused, context: Context) -> Any:
        if self.reply_type is None:
            await context.abort(refused.grpc_code, refused.message)
        reply = self.reply_type(status=status(refused.code, refused.message))
        return reply.SerializeToString() if self.encoded else reply
