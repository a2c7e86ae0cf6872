"""RocketMQ v2 message ids: unique across hosts, processes and restarts.

    "01" · MAC (6 bytes) · pid (2 bytes) · seconds since 2021-01-01 (4 bytes) · sequence (4 bytes)

in upper-case hex (34 characters), the layout the official clients use. The pid and a random
start of the sequence are taken at import and again in the child after `os.fork()`: a forked
child (gunicorn --preload, multiprocessing) would otherwise make its parent's ids, and the
broker's de-duplication would drop its messages while answering OK.
"""

from __future__ import annotations

import itertools
import os
import struct
import time
import uuid

_EPOCH_2021 = 1609459200
_MAC = uuid.getnode().to_bytes(6, "big")


def _seed() -> None:
    global _PREFIX, _SEQ
    _PREFIX = b"\x01" + _MAC + (os.getpid() & 0xFFFF).to_bytes(2, "big")
    _SEQ = itertools.count(int.from_bytes(os.urandom(3), "big"))


_PREFIX: bytes
_SEQ: itertools.count[int]
_seed()
os.register_at_fork(after_in_child=_seed)


def new_message_id() -> str:
    seconds = int(time.time()) - _EPOCH_2021
    return (_PREFIX + struct.pack(">II", seconds & 0xFFFFFFFF, next(_SEQ) & 0xFFFFFFFF)).hex().upper()
