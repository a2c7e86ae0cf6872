"""Receipt handles: signed tokens naming one delivery of one message to one group.

A handle encodes where the message is (topic, queue, offset), which group received it, the
delivery attempt and the checkpoint version — exactly what locates and checks its in-flight
checkpoint. The deadline is not in it: the broker may extend it (auto-renew) without
invalidating the handle. A handle whose checkpoint is gone (acked, revived) or carries another
version (ChangeInvisibleDuration issued a new handle) is stale.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from rockmq.protocol import tokens

_BODY = struct.Struct(">BIIIQII")
VERSION = 1


class Receipt(NamedTuple):
    group_id: int
    topic_id: int
    queue_id: int
    offset: int
    attempt: int
    version: int


def encode(r: Receipt, secret: bytes) -> str:
    return tokens.seal(_BODY.pack(VERSION, *r), secret)


def decode(handle: str, secret: bytes) -> Receipt:
    """Raises tokens.InvalidToken for anything this broker did not issue."""
    version, *fields = _BODY.unpack(tokens.unseal(handle, secret, _BODY.size))
    if version != VERSION:
        raise tokens.InvalidToken(f"unknown receipt handle version {version}")
    return Receipt(*fields)
