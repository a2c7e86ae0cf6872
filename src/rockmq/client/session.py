"""A client's conversation with its brokers: its identity headers, deadlines, RocketMQ statuses
turned into exceptions (errors.py), routes and access points. All I/O goes through its Transport
(transport.py).

Access points are the brokers asked what any broker can answer (routes, assignments): the ones
the client was given (`"host:port"`, `"h1:p1,h2:p2"` or a list) and every broker a route names
since. One that cannot be reached goes to the back of the list, so a dead access point costs one
failed call (at most one request timeout), not one per call, while any other broker is up."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from typing import Any, cast

from rockmq.client.errors import ClientClosed, ConnectionFailed, RockmqError, Timeout, from_status
from rockmq.client.queues import Queue
from rockmq.client.transport import ADMIN, BATCH, MESSAGING, Call, GrpcTransport, Transport
from rockmq.plumbing.channels import Tls, client_metadata, new_client_id
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import batch, pb, rpc
from rockmq.protocol.endpoints import address_of, endpoints_of

OK_CODES = (pb.OK, pb.MULTIPLE_RESULTS)
_BATCH_OK_CODES = (*OK_CODES, pb.MESSAGE_NOT_FOUND)
WRITABLE = (pb.WRITE, pb.READ_WRITE)  # a route's queue permissions that take sends

Endpoints = str | Sequence[str]  # what clients take as `endpoint`: "host:port", "h1:p1,h2:p2" or a list


def access_points(endpoint: Endpoints) -> list[str]:
    """The addresses of an `endpoint` argument, in order, each once; ValueError if there are none."""
    parts = endpoint.split(",") if isinstance(endpoint, str) else list(endpoint)
    if not all(isinstance(p, str) for p in parts):
        raise ValueError(f"endpoint must be 'host:port', a comma-separated list or a list of them, not {endpoint!r}")
    found = list(dict.fromkeys(p.strip() for p in parts if p.strip()))
    if not found:
        raise ValueError("endpoint names no broker: give 'host:port' (or several)")
    return found


def _ok(reply: Any, entries: int | None = None, ok_codes: tuple[int, ...] = OK_CODES) -> Any:
    """A reply whose status is OK (or per-entry results); else its status raised. An ack's reply
    with `entries` per-entry statuses comes back whatever its status: all refused alike, the
    broker answers with their status, and each entry says which message it was."""
    if reply.status.code not in ok_codes and (entries is None or len(reply.entries) != entries):
        raise from_status(reply.status.code, reply.status.message)
    return reply


def received_batch(reply: Any) -> Any:
    """A BatchMessaging Receive or Pull reply as `ReceivedBatch` (what GrpcTransport reads them
    as); one a transport handed back as a ReceiveResponse or PullResponse (say, a MockTransport
    handler's) is read again in that form."""
    if isinstance(reply, batch.ReceivedBatch):
        return reply
    return batch.ReceivedBatch.FromString(reply.SerializeToString())


def unreachable(e: RockmqError) -> bool:
    """The callee did not answer at all, or answered PROXY_TIMEOUT (a broker that drains, or a proxy
    whose broker did not answer), so another broker may: not a refusal, not a missing method."""
    return isinstance(e, ConnectionFailed | Timeout) and e.retriable or e.code == pb.PROXY_TIMEOUT


class Session:
    def __init__(self, endpoint: Endpoints, request_timeout_s: float, client_id: str | None = None,
                 lane: str | None = None, transport: Transport | None = None,
                 credentials: Credentials | None = None, tls: Tls | None = None) -> None:
        """With a `transport` of the caller's, the caller closes it; else the session makes a
        GrpcTransport (TLS with `tls`) and closes it with itself. With `credentials`, every call is signed."""
        self._access = access_points(endpoint)
        self.request_timeout_s = request_timeout_s
        self.client_id = client_id or new_client_id()
        self.metadata = client_metadata(self.client_id, lane=lane, chooses_queues=True)
        self.credentials = credentials
        self.transport: Transport = transport or GrpcTransport(tls)
        self._owns_transport = transport is None
        self.closed = False

    @property
    def access_point(self) -> str:
        """The access point asked first: the first one given, until it stops answering."""
        return self._access[0]

    @property
    def access_points(self) -> list[str]:
        """Every known access point, the one asked first first."""
        return list(self._access)

    def learn(self, endpoints: Iterable[str]) -> None:
        """More brokers to ask (say, the ones a route names), after the known ones."""
        self._access += [e for e in dict.fromkeys(endpoints) if e and e not in self._access]

    async def ask(self, method: str, request: Callable[[str], Any], timeout: float | None = None) -> Any:
        """A unary MessagingService call any broker answers, made to the access points in turn
        until one answers; `request(access_point)` builds it. An access point that cannot be
        reached goes to the back of the list. Refusals are raised at once."""
        last: RockmqError | None = None
        for endpoint in list(self._access):
            try:
                return await self.unary(endpoint, method, request(endpoint), timeout)
            except RockmqError as e:
                if not unreachable(e):
                    raise
                last = e
        assert last is not None
        raise last

    def _demote(self, endpoint: str) -> None:
        """An endpoint did not answer: if it is an access point, it is asked last from now on."""
        if endpoint in self._access and endpoint != self._access[-1]:
            self._access.remove(endpoint)
            self._access.append(endpoint)

    def _call(self, endpoint: str, service: str, method: str, request: Any, timeout: float | None) -> Call:
        if self.closed:
            raise ClientClosed("the client is closed")
        metadata = self.metadata if self.credentials is None else self.metadata + self.credentials.headers()
        return Call(endpoint, service, method, request, metadata, timeout or self.request_timeout_s)

    async def unary(self, endpoint: str, method: str, request: Any, timeout: float | None = None,
                    entries: int | None = None) -> Any:
        """Call a unary MessagingService method; raise for transport errors and non-OK statuses
        (`_ok`: an ack's `entries`). An access point that does not answer goes to the back of the
        list (whatever the call)."""
        try:
            reply = await self.transport.unary(self._call(endpoint, MESSAGING, method, request, timeout))
        except RockmqError as e:
            self._failed(endpoint, e)
            raise
        return _ok(reply, entries)

    @property
    def blocks(self) -> bool:
        """Whether the transport can also wait for a reply in the calling thread (`unary_blocking`)."""
        return hasattr(self.transport, "unary_blocking")

    def unary_blocking(self, endpoint: str, method: str, request: Any) -> Any:
        """`unary`, waited for in the calling thread (a thread other than the event loop's), when
        the transport `blocks`."""
        try:
            reply = cast(Any, self.transport).unary_blocking(self._call(endpoint, MESSAGING, method, request, None))
        except RockmqError as e:
            self._failed(endpoint, e)
            raise
        return _ok(reply)

    def _failed(self, endpoint: str, e: RockmqError) -> None:
        if unreachable(e):
            self._demote(endpoint)

    def stream(self, endpoint: str, method: str, request: Any, timeout: float) -> AsyncGenerator[Any, None]:
        """The frames of a streaming MessagingService method; statuses in them are the caller's."""
        return self.transport.stream(self._call(endpoint, MESSAGING, method, request, timeout))

    async def batch(self, endpoint: str, method: str, request: Any, timeout: float | None = None,
                    entries: int | None = None) -> Any:
        """Call a method of rockmq's BatchMessaging service (many messages per reply); raises
        Unimplemented against a broker without it, and for a non-OK status (`_ok`: an ack's `entries`)."""
        return _ok(await self.transport.unary(self._call(endpoint, BATCH, method, request, timeout)), entries, _BATCH_OK_CODES)

    async def admin(self, endpoint: str, method: str, request: Any, timeout: float | None = None) -> Any:
        """Call a method of rockmq's admin service (it answers with gRPC status codes)."""
        return await self.transport.unary(self._call(endpoint, ADMIN, method, request, timeout))

    async def route(self, topic: str) -> list[Queue]:
        """The topic's queues on every broker, from the first access point that answers; the
        brokers it names become access points too."""
        reply = await self.ask("QueryRoute", lambda at: rpc.QueryRouteRequest(topic=pb.Resource(name=topic),
                                                                               endpoints=endpoints_of(at)))
        queues = [Queue(topic, q.broker.name, address_of(q.broker.endpoints), q.id, q.permission in WRITABLE)
                  for q in reply.message_queues]
        self.learn(q.endpoint for q in queues)
        return queues

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._owns_transport:
            await self.transport.close()
