"""Request bytes that do not parse answer INVALID_ARGUMENT with one readable line, for every
service: the one place is each method's request deserializer (`guarded`), not a try per handler.

gRPC's own answer to a deserializer that raises is UNKNOWN, "Unexpected <class ...DecodeError>",
and a traceback in the log. A guarded deserializer returns `UNPARSED` instead, and the guarded
behaviour aborts the call with INVALID_ARGUMENT before the handler runs. A streaming method's
handler is not wrapped (a wrapper would sit on every frame of the hot receive path): it answers
`UNPARSED` with BAD_REQUEST in its status frame (Telemetry: in its reply to that command).
"""

from __future__ import annotations

from collections.abc import Mapping
from time import perf_counter
from typing import Any, Protocol

import grpc
from google.protobuf.message import DecodeError

from rockmq.plumbing.rpc_latency import RPC_LATENCY
from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError


class _Unparsed:
    """What a guarded deserializer returns for bytes that do not parse. A streaming handler
    (ReceiveMessage, PullMessage, Telemetry: no wrapper on their frames) gets it as its request:
    reading any field of it is a BAD_REQUEST refusal, which the handler answers as its others."""

    def __getattr__(self, name: str) -> Any:
        raise BrokerError(pb.BAD_REQUEST, "the request's bytes do not parse")


UNPARSED = _Unparsed()
Unparsed = _Unparsed  # the type a streaming handler's requests are annotated with beside theirs


_CODES = {v.number: v.name for v in pb.Code.DESCRIPTOR.values}


def _grpc_code(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """The gRPC status a call that raised ended with (an abort's, else UNKNOWN)."""
    code = context.code()
    return code.name if isinstance(code, grpc.StatusCode) and code is not grpc.StatusCode.OK else "UNKNOWN"


def guarded(handler: grpc.RpcMethodHandler[Any, Any], what: str) -> grpc.RpcMethodHandler[Any, Any]:
    """`handler` with bytes that do not parse as `what` refused: a unary method's call aborted with
    INVALID_ARGUMENT, a streaming one's handler given `UNPARSED` for the request (or the streamed
    request) that did not parse."""
    parse, behaviour = handler.request_deserializer, handler.unary_unary
    if parse is None:
        return handler
    message = f"the request's bytes do not parse as {what}"

    def deserialize(data: bytes) -> Any:
        try:
            return parse(data)
        except (DecodeError, ValueError):  # ValueError: also UnicodeDecodeError, and our readers' refusals
            return UNPARSED

    if behaviour is None:
        return handler._replace(request_deserializer=deserialize)  # type: ignore[attr-defined,no-any-return]
    inner: Any = behaviour  # an async handler (the stubs type it sync)

    async def call(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        start = perf_counter()
        code = "OK"
        try:
            if request is UNPARSED:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)
            reply = await inner(request, context)
            status = getattr(reply, "status", None)  # a RocketMQ-style reply says its code; an encoded one is OK
            if type(status) is pb.Status and status.code != pb.OK:
                code = _CODES.get(status.code, "UNKNOWN")
            return reply
        except BaseException:
            code = _grpc_code(context)
            raise
        finally:
            RPC_LATENCY.record(what, code, (perf_counter() - start) * 1000)

    return grpc.unary_unary_rpc_method_handler(call, deserialize, handler.response_serializer)


def generic_handler(service: str, methods: Mapping[str, grpc.RpcMethodHandler[Any, Any]]) -> grpc.GenericRpcHandler:
    """`grpc.method_handlers_generic_handler` with every method `guarded`."""
    return grpc.method_handlers_generic_handler(service, {
        name: guarded(h, f"{service}/{name}") for name, h in methods.items()})


class _Server(Protocol):
    def add_generic_rpc_handlers(self, handlers: Any) -> None: ...

    def add_registered_method_handlers(self, service: str, handlers: Any) -> None: ...


class Guarding:
    """A server as a generated `add_*Servicer_to_server` sees it: the method handlers it registers
    (it passes them all to `add_registered_method_handlers`) go to the server `guarded`."""

    def __init__(self, server: _Server) -> None:
        self.server = server

    def add_generic_rpc_handlers(self, handlers: object) -> None:
        """Ignored: the same methods come to `add_registered_method_handlers`, whose are guarded."""

    def add_registered_method_handlers(self, service: str, handlers: Mapping[str, grpc.RpcMethodHandler[Any, Any]]) -> None:
        methods = {name: guarded(h, f"{service}/{name}") for name, h in handlers.items()}
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, methods),))
        self.server.add_registered_method_handlers(service, methods)

