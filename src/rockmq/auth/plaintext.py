"""The plaintext listener beside a TLS one (--plaintext-port) serves the client data plane only.

It exists for clients that cannot speak TLS (sends, receives, acks); what travels on it can be read
and replayed by anyone on the path. So everything else — Admin, Users, Acls, replication, a name
server's calls — is refused there before authentication or the handler runs, with one status that
says to use the TLS port: a captured header or a secret in a CreateUser must never cross in clear.
Installed only when the broker has both listeners (the transport is the call's, not the server's).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

import grpc

from rockmq.auth.permissions import HEALTH
from rockmq.plumbing.interceptors import Handler, Wrapping, result
from rockmq.plumbing.tls import is_tls
from rockmq.protocol.conventions import BATCH_SERVICE, MESSAGING_SERVICE

# What a plaintext client may call; and health checks, which reveal nothing (auth/permissions.py).
DATA_PLANE = frozenset({MESSAGING_SERVICE, BATCH_SERVICE, HEALTH})
REFUSAL = grpc.StatusCode.PERMISSION_DENIED



def refusal(service: str, tls_address: str) -> str:
    """The one line a plaintext caller of a control-plane service gets."""
    return (f"{service} is served on the TLS port only ({tls_address}): this is the plaintext listener "
            f"(--plaintext-port), which serves the client data plane only")


class TlsOnlyControlPlane(Wrapping):
    """Refuses every service but the data plane's on a call that did not come over TLS."""

    def __init__(self) -> None:
        self.tls_address = ""  # HOST:PORT of the TLS listener, set once it is bound (for the refusal)
        super().__init__()

    def wraps(self, path: str) -> bool:
        return _service(path) not in DATA_PLANE

    def wrap(self, path: str, handler: Handler) -> Handler:
        return _guard(handler, refusal(_service(path), self.tls_address))


def _service(path: str) -> str:
    return path.lstrip("/").rpartition("/")[0]


def _guard(h: Handler, message: str) -> Handler:
    """`h`, answering PERMISSION_DENIED with `message` first when the call is not over TLS."""

    async def check(context: grpc.aio.ServicerContext[Any, Any]) -> None:
        if not is_tls(context):
            await context.abort(REFUSAL, message)

    field = next(f for f in ("unary_unary", "stream_unary", "unary_stream", "stream_stream") if getattr(h, f) is not None)
    inner: Any = getattr(h, field)
    wrapped: Any
    if field in ("unary_unary", "stream_unary") or inspect.iscoroutinefunction(inner):

        async def one(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            await check(context)
            return await result(inner(request, context))

        wrapped = one
    else:

        async def stream(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Any]:
            await check(context)
            async for reply in inner(request, context):
                yield reply

        wrapped = stream
    return h._replace(**{field: wrapped})  # type: ignore[attr-defined,no-any-return]
