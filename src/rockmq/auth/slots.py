"""Who may take the broker's call slots, with authentication on.

gRPC's `maximum_concurrent_rpcs` counts every call alike: one user's long-lived calls (a Telemetry
stream is open for a client's life, a receive long-polls) could fill it, and then every other call,
an operator's too, got RESOURCE_EXHAUSTED. `CallSlots` is a server interceptor installed after
the seam, whose identity it reads (seam.py), and counts the calls the seam admitted:

- a user has at most `max_streams_per_user` streaming calls open at once; super users' are not
  counted (the operator's, and the cluster's own replication, signed with the inner credentials);
- past `Settings.user_call_slots` calls at once, only super users' admin calls (Admin, Users, Acls)
  are served: the last slot of max_concurrent_rpcs is theirs.

gRPC's own bound is raised above max_concurrent_rpcs for refusals in flight (`grpc_call_limit`).
A refusal is TOO_MANY_REQUESTS in MessagingService's typed replies, RESOURCE_EXHAUSTED from
rockmq's own services (seam.Answer), naming the setting. Nothing here runs with authentication off.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any

from rockmq.auth.identity import Identity
from rockmq.auth.permissions import ACLS, ADMIN, USERS
from rockmq.auth.seam import Answer, Refused, current_identity
from rockmq.plumbing.interceptors import Handler, Wrapping, result
from rockmq.plumbing.requests import Context
from rockmq.protocol.errors import over_limit

ADMIN_SERVICES = frozenset({ADMIN, ACLS, USERS})
ANONYMOUS = Identity()  # a call the seam leaves open (the inner handshake): nobody's in particular


class CallSlots(Wrapping):
    def __init__(self, user_calls: int, streams_per_user: int) -> None:
        """`user_calls`: the calls served at once besides super users' admin calls."""
        self.user_calls = user_calls
        self.streams_per_user = streams_per_user
        self.in_use = 0
        self.streams: dict[str, int] = {}  # user -> streaming calls open (no key: none)
        super().__init__()

    def take(self, who: Identity, service: str, method: str, streaming: bool) -> Refused | None:
        """A slot for `who`'s call (None), or why not."""
        if self.in_use >= self.user_calls and not (who.super_user and service in ADMIN_SERVICES):
            return _quota(f"{method} of user {who.user!r}", "max_concurrent_rpcs", self.user_calls + 1,
                          "the last call is kept for super users' admin calls; retry later")
        if streaming and not who.super_user:
            if self.streams.get(who.user, 0) >= self.streams_per_user:
                return _quota(f"one more streaming call ({method}) of user {who.user!r}", "max_streams_per_user",
                              self.streams_per_user, "close some of its streams first")
            self.streams[who.user] = self.streams.get(who.user, 0) + 1
        self.in_use += 1
        return None

    def give_back(self, who: Identity, streaming: bool) -> None:
        self.in_use -= 1
        if streaming and not who.super_user:
            left = self.streams[who.user] - 1
            if left:
                self.streams[who.user] = left
            else:
                del self.streams[who.user]

    def wrap(self, path: str, h: Handler) -> Handler:
        """`h`, taking a slot for each call and giving it back when the call ends."""
        service, _, method = path.lstrip("/").rpartition("/")
        answer = Answer(service, method, h)
        streaming = h.unary_unary is None
        take, give_back = self.take, self.give_back

        def enter() -> tuple[Identity, Refused | None]:
            who = current_identity() or ANONYMOUS
            return who, take(who, service, method, streaming)

        if h.unary_unary is not None or h.stream_unary is not None:  # one reply
            field = "unary_unary" if h.unary_unary is not None else "stream_unary"
            inner_one: Any = getattr(h, field)

            async def one(request: Any, context: Context) -> Any:
                who, refused = enter()
                if refused is not None:
                    return await answer.one(refused, context)
                try:
                    return await result(inner_one(request, context))
                finally:
                    give_back(who, streaming)

            return h._replace(**{field: one})  # type: ignore[attr-defined,no-any-return]
        field = "stream_stream" if h.stream_stream is not None else "unary_stream"
        inner: Callable[..., Any] = getattr(h, field)
        if inspect.iscoroutinefunction(inner):  # writes its replies with context.write

            async def writer(request: Any, context: Context) -> None:
                who, refused = enter()
                if refused is not None:
                    await context.write(await answer.one(refused, context))
                    return
                try:
                    await inner(request, context)
                finally:
                    give_back(who, streaming)

            return h._replace(**{field: writer})  # type: ignore[attr-defined,no-any-return]

        async def stream(request: Any, context: Context) -> AsyncIterator[Any]:
            who, refused = enter()
            if refused is not None:
                yield await answer.one(refused, context)
                return
            try:
                async for reply in inner(request, context):
                    yield reply
            finally:
                give_back(who, streaming)

        return h._replace(**{field: stream})  # type: ignore[attr-defined,no-any-return]


def grpc_call_limit(max_concurrent_rpcs: int) -> int:
    """gRPC's own bound on calls at once where CallSlots bounds the calls served: as many again for
    calls being refused (not authenticated, not allowed, past a share), each answered at once, so
    that refusals still in flight never take the slot kept for super users' admin calls."""
    return 2 * max_concurrent_rpcs


def _quota(refused: str, setting: str, limit: int, remedy: str) -> Refused:
    """A quota's refusal as the seam answers it: TOO_MANY_REQUESTS (RESOURCE_EXHAUSTED)."""
    e = over_limit(refused, setting, limit, remedy)
    return Refused(e.code, e.message)
