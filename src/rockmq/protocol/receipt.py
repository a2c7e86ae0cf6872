"""Receipt handles: signed tokens naming one delivery of one message to one group.

A receive writes one checkpoint for all the messages it hands out (broker/pop/checkpoints.py);
a handle is that checkpoint's signed token — group, topic, checkpoint id — followed by the
delivery's index in it. The token is signed once per receive, not per message: a handle with
another index names another delivery of the same receive, given to the same consumer, so the
index needs no signature of its own; everything else is checked against the checkpoint. The
deadline is not in it: the broker may extend it (auto-renew) without invalidating the handle.
A handle whose entry is settled (acked, moved by ChangeInvisibleDuration) or whose checkpoint
is gone (revived) is stale.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import cython

from rockmq.protocol import tokens

_BODY = struct.Struct(">BIIQ")
_pack_body, _unpack_body = _BODY.pack, _BODY.unpack  # bound once: no method lookup per handle
VERSION = 2
TOKEN_LENGTH = tokens.sealed_length(_BODY.size)
SEPARATOR = "."
# Deliveries one ack request names at most (its handles and its runs' entries together): a run's
# entry is one byte on the wire, so without it a 64 MiB request would name 64 million, each a
# step and a reply entry of the broker's. A client acks more in several requests.
MAX_ACK_ENTRIES = 65_536


class Receipt(NamedTuple):
    group_id: int
    topic_id: int
    checkpoint_id: int
    entry: int


def token(group_id: int, topic_id: int, checkpoint_id: int, secret: bytes) -> str:
    """What every handle of one checkpoint starts with (`handle`)."""
    return tokens.seal(_pack_body(VERSION, group_id, topic_id, checkpoint_id), secret)


@cython.locals(signed=str, index=cython.Py_ssize_t)  # compiled: the f-string formats a C integer
def handle(signed: str, index: int) -> str:
    """The handle of the checkpoint's `index`th delivery, `signed` its `token`."""
    return f"{signed}{SEPARATOR}{index:x}"


@cython.locals(handle=str, signed=str, separator=str, index=str)  # compiled: str slicing without generic calls
def split(handle: str) -> tuple[str, int]:
    """A handle -> (its token, its entry); raises ValueError if it has not that shape."""
    signed, separator, index = handle[:TOKEN_LENGTH], handle[TOKEN_LENGTH:TOKEN_LENGTH + 1], handle[TOKEN_LENGTH + 1:]
    if separator != SEPARATOR or not 0 < len(index) <= 8 or not (index.isascii() and index.isalnum()):
        raise tokens.InvalidToken("not a receipt handle")
    return signed, int(index, 16)


def runs(handles: list[str]) -> list[tuple[str, list[int]]]:
    """Handles in short, for an ack: (token, entries) per run of handles with one token, in their
    order; raises ValueError if one is not a handle (`split`)."""
    out: list[tuple[str, list[int]]] = []
    token = ""
    entries: list[int] = []
    for handle in handles:
        signed, entry = split(handle)
        if signed != token:
            token, entries = signed, []
            out.append((token, entries))
        entries.append(entry)
    return out


def open_token(signed: str, secret: bytes) -> tuple[int, int, int]:
    """A token -> (group id, topic id, checkpoint id); raises tokens.InvalidToken (a ValueError)
    for anything this broker did not issue. An ack of many handles of one receive opens it once."""
    version, group_id, topic_id, checkpoint_id = _unpack_body(tokens.unseal(signed, secret, _BODY.size))
    if version != VERSION:
        raise tokens.InvalidToken(f"unknown receipt handle version {version}")
    return group_id, topic_id, checkpoint_id


def decode(handle: str, secret: bytes) -> Receipt:
    """Raises tokens.InvalidToken (a ValueError) for anything this broker did not issue."""
    signed, entry = split(handle)
    return Receipt(*open_token(signed, secret), entry)
