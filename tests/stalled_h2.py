"""A client that opens gRPC server streams and never reads them: HTTP/2 spoken by hand on a raw socket.

A gRPC client library reads its socket on its own and buffers what arrives, so it cannot stall a
broker honestly. This one sends the preface, its SETTINGS (the stream window it grants), acknowledges
the server's SETTINGS, sends each call's HEADERS and request DATA, and from then on reads nothing:
whatever the broker writes beyond the windows stays with the broker. `frames()` reads what did arrive,
afterwards, to see how a stream ended (RST_STREAM, or trailers carrying grpc-status).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

from rockmq.plumbing.channels import Metadata

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7, 0x8
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
SETTINGS_ENABLE_PUSH, SETTINGS_INITIAL_WINDOW_SIZE = 0x2, 0x4
DEFAULT_WINDOW = 65_535


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes((kind, flags)) + struct.pack(">I", stream) + payload


def _hpack_int(value: int, prefix_bits: int = 7) -> bytes:
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((value,))
    out, value = bytearray((limit,)), value - limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def _hpack(headers: list[tuple[str, str]]) -> bytes:
    """Each header a literal without indexing, no Huffman: what any HPACK decoder takes."""
    out = bytearray()
    for name, value in headers:
        out += b"\x00"
        for text in (name.encode(), value.encode()):
            out += _hpack_int(len(text)) + text
    return bytes(out)


class StalledConnection:
    """One HTTP/2 connection whose server streams are never read."""

    def __init__(self, host: str, port: int, window: int = DEFAULT_WINDOW, timeout: float = 10.0) -> None:
        self.authority = f"{host}:{port}"
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self._next_stream = 1
        settings = struct.pack(">HI", SETTINGS_ENABLE_PUSH, 0) + struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, window)
        self.sock.sendall(PREFACE + frame(SETTINGS, 0, 0, settings))
        self._buffer = b""
        for kind, flags, _, _ in self.frames():  # up to the server's SETTINGS, which must be acknowledged
            if kind == SETTINGS and not flags & ACK:
                break
        self.sock.sendall(frame(SETTINGS, ACK, 0))

    def call(self, method: str, request: bytes, metadata: Metadata = (), end: bool = True) -> int:
        """Start `method` (/package.Service/Method) with one request message, the last unless `end` is
        False (a stream of requests left open); -> its stream id."""
        stream, self._next_stream = self._next_stream, self._next_stream + 2
        headers = [(":method", "POST"), (":scheme", "http"), (":path", method), (":authority", self.authority),
                   ("content-type", "application/grpc"), ("te", "trailers"), *metadata]
        message = b"\x00" + struct.pack(">I", len(request)) + request
        data = frame(DATA, END_STREAM if end else 0, stream, message)
        self.sock.sendall(frame(HEADERS, END_HEADERS, stream, _hpack(headers)) + data)
        return stream

    def frames(self) -> Iterator[tuple[int, int, int, bytes]]:
        """Read frames as they come -> (type, flags, stream, payload), until the connection ends or
        the socket's timeout passes with nothing."""
        while True:
            while len(self._buffer) >= 9:
                length = int.from_bytes(self._buffer[:3], "big")
                if len(self._buffer) < 9 + length:
                    break
                head, payload = self._buffer[:9], self._buffer[9:9 + length]
                self._buffer = self._buffer[9 + length:]
                yield head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF, payload
            try:
                chunk = self.sock.recv(1 << 16)
            except (TimeoutError, ConnectionError):
                return
            if not chunk:
                return
            self._buffer += chunk

    def close(self) -> None:
        self.sock.close()
