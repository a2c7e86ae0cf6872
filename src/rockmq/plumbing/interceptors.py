"""What rockmq's gRPC server interceptors share: the handler types, and `Wrapping`, an interceptor
that wraps each method's handler once (the wrapper cached per method path, made again only if
gRPC hands it another handler), so a check costs a dict lookup per call, not a new closure."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

import grpc

Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"  # generic in the stubs only
Continuation: TypeAlias = "Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]]"


async def result(outcome: Any) -> Any:
    """What a handler returned, awaited if it is awaitable."""
    return await outcome if inspect.isawaitable(outcome) else outcome


class Wrapping(grpc.aio.ServerInterceptor):
    """Subclasses say which methods they wrap (`wraps`) and how (`wrap`)."""

    def __init__(self) -> None:
        self._wrapped: dict[str, tuple[Handler, Handler]] = {}  # method path -> (handler, its wrapper)

    def wraps(self, path: str) -> bool:
        """Whether calls of `path` (/package.Service/Method) go through `wrap`'s wrapper."""
        return True

    def wrap(self, path: str, handler: Handler) -> Handler:
        raise NotImplementedError

    async def intercept_service(self, continuation: Continuation, details: grpc.HandlerCallDetails) -> Handler | None:
        handler = await continuation(details)
        if handler is None or not self.wraps(details.method):
            return handler
        known = self._wrapped.get(details.method)
        if known is None or known[0] is not handler:
            known = self._wrapped[details.method] = (handler, self.wrap(details.method, handler))
        return known[1]
