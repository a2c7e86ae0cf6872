"""How every rockmq process talks gRPC to a broker: the client's identity headers, channel
options, and channels cached per endpoint for this process only. Used by the client, the CLI,
the Spark source and sink, and the benchmark (the broker's own size limit is `MAX_MESSAGE` too).

- Channel options: a channel accepts (and may send) up to `MAX_MESSAGE`, the broker's limit, so
  a reply carrying a message of the largest body the broker takes (framed, it is larger than
  the body) is never refused by the receiving side.
- Headers: `client_metadata()` is the one definition of `x-mq-client-id`, `x-mq-language`,
  `x-mq-client-version` (and the lane and queue-choice headers, conventions.py).
- TLS: a `Tls` (the CA file to verify the server against) makes a channel TLS; None, plaintext.
  Caches are keyed by (endpoint, tls), so one process may dial a broker both ways.
- Fork: gRPC channels do not survive `os.fork()`. A `ChannelCache` forgets, in the child, every
  channel the parent made (without closing them: they are the parent's), so a child opens its own.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
import weakref
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

import grpc

from rockmq.plumbing.credentials import Credentials, signed
from rockmq.protocol.conventions import CLIENT_CHOOSES, LANE_HEADER, QUEUE_CHOICE_HEADER

MAX_MESSAGE = 64 * 1024 * 1024  # the broker's request and reply limit; above any valid request
CHANNEL_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE))

CLIENT_ID_HEADER = "x-mq-client-id"
LANGUAGE_HEADER = "x-mq-language"
VERSION_HEADER = "x-mq-client-version"

Metadata = tuple[tuple[str, str], ...]
C = TypeVar("C")
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Tls:
    """A client's TLS: the server's certificate must be signed by a CA of `ca_file` (PEM), or of
    the system's roots when it is empty (gRPC's, which GRPC_DEFAULT_SSL_ROOTS_FILE_PATH replaces),
    and name the host dialled."""

    ca_file: str = ""

    def credentials(self) -> grpc.ChannelCredentials:
        roots = None
        if self.ca_file:
            try:
                roots = Path(self.ca_file).read_bytes()
            except OSError as e:
                raise OSError(f"cannot read the TLS CA file {self.ca_file}: {e.strerror or e}") from None
        return grpc.ssl_channel_credentials(root_certificates=roots)


def tls_of(enabled: bool, ca_file: str | None = None) -> Tls | None:
    """The `--tls [--tls-ca FILE]` / `tls`, `tlsCaFile` options as a `Tls` (None: plaintext); a CA
    file alone turns TLS on."""
    return Tls(ca_file or "") if enabled or ca_file else None


def new_client_id(kind: str = "") -> str:
    """`[kind@]host@pid@random`: unique per client instance, readable in the broker's listings."""
    return f"{kind + '@' if kind else ''}{socket.gethostname()}@{os.getpid()}@{uuid.uuid4().hex[:12]}"


def client_metadata(client_id: str, *, version: str = "rockmq", lane: str | None = None,
                    chooses_queues: bool = False) -> Metadata:
    """The headers every call of a client carries; `chooses_queues`: its sends name their queue."""
    headers = ((CLIENT_ID_HEADER, client_id), (LANGUAGE_HEADER, "PYTHON"), (VERSION_HEADER, version))
    return (headers + (((LANE_HEADER, lane),) if lane else ())
            + (((QUEUE_CHOICE_HEADER, CLIENT_CHOOSES),) if chooses_queues else ()))


ChannelOptions = tuple[tuple[str, int], ...]


def open_channel(endpoint: str, tls: Tls | None = None) -> grpc.Channel:
    """A new blocking channel with rockmq's options."""
    if tls is None:
        return grpc.insecure_channel(endpoint, options=CHANNEL_OPTIONS)
    return grpc.secure_channel(endpoint, tls.credentials(), options=CHANNEL_OPTIONS)


def open_aio_channel(endpoint: str, tls: Tls | None = None, options: ChannelOptions = CHANNEL_OPTIONS,
                     interceptors: Sequence[grpc.aio.ClientInterceptor] = ()) -> grpc.aio.Channel:
    """A new asyncio channel with rockmq's options, or `options` (bound to the running event loop)."""
    if tls is None:
        return grpc.aio.insecure_channel(endpoint, options=options, interceptors=interceptors)
    return grpc.aio.secure_channel(endpoint, tls.credentials(), options=options, interceptors=interceptors)


_caches: weakref.WeakSet[ChannelCache[object, object]] = weakref.WeakSet()


class ChannelCache(Generic[K, C]):
    """One `C` (a channel, or what is built on one) per key (an endpoint, or an endpoint and its
    `Tls`), made on first use, for this process: after a fork the child starts empty."""

    def __init__(self, open: Callable[[K], C]) -> None:
        self._open = open
        self._items: dict[K, C] = {}
        self._lock = threading.Lock()
        _caches.add(self)  # type: ignore[arg-type]

    def get(self, key: K) -> C:
        item = self._items.get(key)
        if item is None:
            with self._lock:
                item = self._items.get(key)
                if item is None:
                    item = self._items[key] = self._open(key)
        return item

    def take_all(self) -> list[C]:
        """Empty the cache; -> what it held (for the caller to close)."""
        with self._lock:
            items, self._items = list(self._items.values()), {}
        return items

    def _forget(self) -> None:
        self._items = {}
        self._lock = threading.Lock()  # a lock held by another thread at fork time stays held in the child


def _forget_all_in_child() -> None:
    for cache in list(_caches):
        cache._forget()


os.register_at_fork(after_in_child=_forget_all_in_child)

Dial = tuple[str, Tls | None, Credentials | None]  # where and how: an endpoint, TLS or not, signed or not
_shared: ChannelCache[Dial, grpc.Channel] = ChannelCache(lambda dial: signed(open_channel(dial[0], dial[1]), dial[2]))


def channel(endpoint: str, tls: Tls | None = None, credentials: Credentials | None = None) -> grpc.Channel:
    """The process's blocking channel to `endpoint` (CLI, Spark), signing every call with
    `credentials` if given: shared, never closed."""
    return _shared.get((endpoint, tls, credentials))
