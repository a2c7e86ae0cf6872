"""Key encodings for the column families (docs/storage.md). Pure functions, no I/O.

Integers are big-endian so that RocksDB's byte order is numeric order: a queue's log is one
contiguous, offset-ordered key range, and checkpoints and timers sort by their deadline.
Topics and groups are named by small integer ids assigned at creation, keeping keys short.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import cython

_QUEUE = struct.Struct(">II")
_LOG = struct.Struct(">IIQ")
_GTQ = struct.Struct(">III")
_OFFSET = struct.Struct(">IIIc")
_INFLIGHT = struct.Struct(">QIIQ")
_RETRY = struct.Struct(">IIQ")
_TIMER = struct.Struct(">QQ")
_U64 = struct.Struct(">Q")
# The per-message packers bound once: `_LOG.pack(...)` looks the method up on every call (and, compiled,
# builds a bound method object each time: slower than Python 3.11's specialised call).
_pack_queue, _pack_log, _unpack_log, _pack_gtq, _pack_u64 = _QUEUE.pack, _LOG.pack, _LOG.unpack, _GTQ.pack, _U64.pack
_pack_inflight = _INFLIGHT.pack

COMMITTED = b"c"  # offset committed by a pull consumer (UpdateOffset)
POPPED = b"p"  # next offset POP consumption reads

# --- meta family ---------------------------------------------------------------------------


def topic_meta(name: str) -> bytes:
    return b"topic/" + name.encode()


def group_meta(name: str) -> bytes:
    return b"group/" + name.encode()


def subscription_meta(group_id: int, topic_id: int) -> bytes:
    return SUBSCRIPTION_PREFIX + _QUEUE.pack(group_id, topic_id)


TOPIC_META_PREFIX = b"topic/"
SUBSCRIPTION_PREFIX = b"sub/"  # a filtered group's registration (broker/subscriptions.py)
GROUP_META_PREFIX = b"group/"
SECRET_KEY = b"secret"
EPOCH_KEY = b"epoch"
NEXT_ID_KEY = b"next-id"
TIMER_COUNT_KEY = b"count/timers"  # pending delayed messages (store/counts.py)
HALF_COUNT_KEY = b"count/half"  # undecided transactions
REPLICATION_SEQ_KEY = b"repl/seq"  # number of the last batch written (primary) or applied (replica)
PROMOTED_KEY = b"repl/promoted"  # a replica that was promoted: it never follows again
PRIMARY_EPOCH_KEY = b"repl/epoch"  # the primary epoch: promotions so far (broker/cluster/fencing.py)
FENCED_KEY = b"repl/fenced"  # a primary superseded by a promoted replica: the epoch that did
FORMER_PRIMARY_KEY = b"repl/former"  # a promoted replica: its former primary's endpoint, until that heard the epoch
REPLICATED_KEY = b"repl/replicated"  # a primary a replica followed: restarted, it confirms it still is one
EPOCH_BEGAN_PREFIX = b"repl/began/"  # · epoch:u64 -> the last batch before that primary epoch began (fencing.py)
SCHEMA_VERSION_KEY = b"schema"  # the storage schema version of the data (store/schema.py)

# --- log family: topic_id · queue_id · offset -> stored message ---------------------------


def log_key(topic_id: int, queue_id: int, offset: int) -> bytes:
    return _pack_log(topic_id, queue_id, offset)


def queue_prefix(topic_id: int, queue_id: int) -> bytes:
    return _pack_queue(topic_id, queue_id)


def topic_prefix(topic_id: int) -> bytes:
    return topic_id.to_bytes(4, "big")


def parse_log_key(key: bytes) -> tuple[int, int, int]:
    return _unpack_log(key)


def log_offset(key: bytes) -> int:
    """A log key's offset."""
    return int(_unpack_log(key)[2])


# --- offsets family: group_id · topic_id · queue_id · kind -> u64 -------------------------


def offset_key(group_id: int, topic_id: int, queue_id: int, kind: bytes) -> bytes:
    return _OFFSET.pack(group_id, topic_id, queue_id, kind)


def group_prefix(group_id: int) -> bytes:
    return group_id.to_bytes(4, "big")


def parse_offset_key(key: bytes) -> tuple[int, int, int, bytes]:
    return _OFFSET.unpack(key)


def encode_u64(value: int) -> bytes:
    return _U64.pack(value)


def decode_u64(raw: bytes) -> int:
    value: int = _U64.unpack(raw)[0]
    return value


# --- inflight family: deadline_ms · group · topic · checkpoint id -> (empty) ------------------
# The same checkpoints ordered by deadline, for revive.


def inflight_key(deadline_ms: int, group_id: int, topic_id: int, checkpoint_id: int) -> bytes:
    return _pack_inflight(deadline_ms, group_id, topic_id, checkpoint_id)


def parse_inflight_key(key: bytes) -> tuple[int, int, int, int]:
    return _INFLIGHT.unpack(key)


def deadline_bound(deadline_ms: int) -> bytes:
    """Bound of the deadline-keyed families (inflight, timers, txnchecks): keys due before
    `deadline_ms` sort below it."""
    return _U64.pack(deadline_ms)


def deadline_of(key: bytes) -> int:
    """The deadline a key of a deadline-keyed family starts with."""
    deadline: int = _U64.unpack_from(key)[0]
    return deadline


# --- checkpoints family: group · topic · checkpoint id -> deadline · entries -----------------
# One checkpoint per receive: the deadline of its deliveries and how many are live, then per
# delivery (queue, offset, attempt), attempt 0 once it is settled (acked, moved to a new checkpoint). Receipt handles
# name the checkpoint and an entry's index (protocol/receipt.py).

_CHECKPOINT = struct.Struct(">IIQ")
_pack_checkpoint = _CHECKPOINT.pack
CHECKPOINT_HEAD = struct.Struct(">QI")  # deadline · live entries
CHECKPOINT_ENTRY = struct.Struct(">IQI")  # queue · offset · attempt


def checkpoint_key(group_id: int, topic_id: int, checkpoint_id: int) -> bytes:
    return _pack_checkpoint(group_id, topic_id, checkpoint_id)


def parse_checkpoint_key(key: bytes) -> tuple[int, int, int]:
    return _CHECKPOINT.unpack(key)


# --- retry family: group · topic · sequence -> (queue, offset, attempt) --------------------
# Messages whose invisible time ran out wait here, in revive order, for their next delivery.


def retry_key(group_id: int, topic_id: int, seq: int) -> bytes:
    return _RETRY.pack(group_id, topic_id, seq)


def retry_prefix(group_id: int, topic_id: int) -> bytes:
    return group_topic_prefix(group_id, topic_id)


def group_topic_prefix(group_id: int, topic_id: int) -> bytes:
    """What the keys of a group's checkpoints and retries on one topic start with."""
    return _QUEUE.pack(group_id, topic_id)


def parse_retry_key(key: bytes) -> tuple[int, int, int]:
    return _RETRY.unpack(key)


_RETRY_VALUE = struct.Struct(">IQI")


def retry_value(queue_id: int, offset: int, attempt: int) -> bytes:
    return _RETRY_VALUE.pack(queue_id, offset, attempt)


def parse_retry_value(raw: bytes) -> tuple[int, int, int]:
    return _RETRY_VALUE.unpack(raw)


# --- timers family: due_ms · sequence -> delayed message ----------------------------------


def timer_key(due_ms: int, seq: int) -> bytes:
    return _TIMER.pack(due_ms, seq)


# --- txnchecks family: deadline_ms · transaction id -> nothing ------------------------------


def txn_check_key(deadline_ms: int, transaction_id: str) -> bytes:
    return _U64.pack(deadline_ms) + transaction_id.encode()


def parse_txn_check_key(key: bytes) -> tuple[int, str]:
    return _U64.unpack_from(key)[0], key[_U64.size:].decode()


# --- matches family: group · topic · queue · offset -> nothing ---------------------------
# The offsets a filtered group's subscription matched, written with the messages.


def match_key(group_id: int, topic_id: int, queue_id: int, offset: int) -> bytes:
    return _pack_gtq(group_id, topic_id, queue_id) + _pack_u64(offset)


def match_prefix(group_id: int, topic_id: int, queue_id: int | None = None) -> bytes:
    if queue_id is None:
        return _QUEUE.pack(group_id, topic_id)
    return _GTQ.pack(group_id, topic_id, queue_id)


def match_offset(key: bytes) -> int:
    return int.from_bytes(key[12:], "big")


# --- dedup family: bucket · topic_id · message_id -> position (+ txn id / recall handle) ----
# Buckets are windows of time; expiring old entries is one delete_range over old buckets.


@cython.locals(message_id=str)  # compiled: encoded by a direct call, not a looked-up method
def dedup_key(bucket: int, topic_id: int, message_id: str) -> bytes:
    return _pack_queue(bucket, topic_id) + message_id.encode()


def dedup_bucket_start(bucket: int) -> bytes:
    return bucket.to_bytes(4, "big")


_POSITION = struct.Struct(">IQ")
_pack_position = _POSITION.pack


def dedup_value(queue_id: int, offset: int, transaction_id: str = "", recall_handle: str = "") -> bytes:
    """What a retried send must get back: its position, and its transaction id or recall handle."""
    if not transaction_id and not recall_handle:  # most sends
        return _pack_position(queue_id, offset) + b"\n"
    return _pack_position(queue_id, offset) + f"{transaction_id}\n{recall_handle}".encode()


def parse_dedup_value(raw: bytes) -> tuple[int, int, str, str]:
    queue_id, offset = _POSITION.unpack_from(raw)
    transaction_id, _, recall_handle = raw[_POSITION.size :].decode().partition("\n")
    return queue_id, offset, transaction_id, recall_handle


# --- index family: topic · hour · kind · ... (broker/message_index.py) -----------------------
# Every message stored, by its id and by each of its keys, in the hour of its store time: a lookup
# is a point read or a prefix scan per hour, and retention trims whole hours with one range delete
# per topic. A key's entries sort by store time, so a time window is one range of each hour.

INDEX_HOUR_MS = 3_600_000
BY_ID, BY_KEY = b"i", b"k"
_INDEX_HEAD = struct.Struct(">IIc")  # topic · hour · kind
_KEY_TAIL = struct.Struct(">QIQ")  # store_ms · queue · offset
_pack_index_head, _pack_key_tail, _pack_u16 = _INDEX_HEAD.pack, _KEY_TAIL.pack, struct.Struct(">H").pack


def index_heads(topic_id: int, hour: int) -> tuple[bytes, bytes]:
    """The heads of a topic's hour: of its id entries, and of its key entries (`MessageIndex`
    keeps the current hour's, so a message's entries pack none)."""
    return _pack_index_head(topic_id, hour, BY_ID), _pack_index_head(topic_id, hour, BY_KEY)


@cython.locals(message_id=str)  # compiled: encoded by a direct call, not a looked-up method
def index_id_key(id_head: bytes, message_id: str) -> bytes:
    """Of the message with this id stored in the hour of `id_head` (-> `index_position`)."""
    return id_head + message_id.encode()


@cython.locals(key=str, raw=bytes)
def index_key_prefix(key_head: bytes, key: str) -> bytes:
    """Of every entry of a message key in the hour of `key_head` (the key's length first: no key
    is another's prefix)."""
    raw = key.encode()
    return key_head + _pack_u16(len(raw)) + raw


@cython.locals(key=str, raw=bytes, tail=bytes)
def index_key_entries(key_head: bytes, store_ms: int, queue_id: int, offset: int,
                      message_keys: Sequence[str]) -> list[bytes]:
    """A message's key entries (-> nothing): per key `index_key_prefix` · store time · queue ·
    offset, so a key's entries sort by store time. Compiled: no Python between the packs."""
    tail = _pack_key_tail(store_ms, queue_id, offset)
    out = []
    for key in message_keys:
        raw = key.encode()
        out.append(key_head + _pack_u16(len(raw)) + raw + tail)
    return out


def index_position(queue_id: int, offset: int) -> bytes:
    """An id entry's value: where the message is."""
    return _pack_position(queue_id, offset)


def parse_index_key_tail(key: bytes) -> tuple[int, int, int]:
    """(store_ms, queue, offset) of a key's entry (`index_key_entries`)."""
    return _KEY_TAIL.unpack_from(key, len(key) - _KEY_TAIL.size)


def index_time_bound(prefix: bytes, store_ms: int) -> bytes:
    """Entries of `prefix` stored before `store_ms` sort below this."""
    return prefix + _pack_u64(store_ms)


def index_hour(topic_id: int, hour: int) -> bytes:
    """Every index entry of a topic's hours before `hour` sorts below this (retention's cut)."""
    return _pack_queue(topic_id, hour)


def parse_index_position(raw: bytes) -> tuple[int, int]:
    return _POSITION.unpack(raw)


# --- trace family: topic · queue · offset · event_ms · sequence -> event (broker/trace.py) -----
# A stored message's life after it was stored, beside its log entry's key: one prefix scan reads it,
# and retention trims it with the same range deletes (per queue, by offset) as the log.

_TRACE = struct.Struct(">IIQQI")
_pack_trace = _TRACE.pack


def trace_key(topic_id: int, queue_id: int, offset: int, event_ms: int, seq: int) -> bytes:
    return _pack_trace(topic_id, queue_id, offset, event_ms, seq)


def parse_trace_key(key: bytes) -> tuple[int, int, int, int, int]:
    return _TRACE.unpack(key)


# --- lite family: kind · parent topic · ... (broker/lite/topics.py) --------------------------
# A lite topic is a queue of its LITE parent (ids from LITE_QUEUE_BASE, never reused): its
# messages are ordinary log entries. This family names them: by name (`n`, the page order of a
# listing), by queue (`q`, what expiry walks), and per parent the next queue id and the count.

LITE_QUEUE_BASE = 1 << 16  # above every ordinary queue (metadata.MAX_QUEUES)
LITE_BY_NAME, LITE_BY_QUEUE, LITE_NEXT, LITE_COUNT = b"n", b"q", b"a", b"c"
_LITE_HEAD = struct.Struct(">cI")
_LITE_QUEUE = struct.Struct(">cII")
_U32 = struct.Struct(">I")


def lite_name_key(topic_id: int, name: str) -> bytes:
    return _LITE_HEAD.pack(LITE_BY_NAME, topic_id) + name.encode()


def lite_names_prefix(topic_id: int) -> bytes:
    return _LITE_HEAD.pack(LITE_BY_NAME, topic_id)


def lite_queue_key(topic_id: int, queue_id: int) -> bytes:
    return _LITE_QUEUE.pack(LITE_BY_QUEUE, topic_id, queue_id)


def lite_queues_prefix(topic_id: int) -> bytes:
    return _LITE_HEAD.pack(LITE_BY_QUEUE, topic_id)


def parse_lite_queue_key(key: bytes) -> tuple[int, int]:
    """(parent topic, queue) of a `lite_queue_key`."""
    _, topic_id, queue_id = _LITE_QUEUE.unpack(key)
    return topic_id, queue_id


def lite_counter_key(kind: bytes, topic_id: int) -> bytes:
    """A parent's next lite queue id (LITE_NEXT) or lite topic count (LITE_COUNT)."""
    return _LITE_HEAD.pack(kind, topic_id)


def lite_topic_ranges(topic_id: int) -> list[tuple[bytes, bytes]]:
    """Every key of a parent's lite topics (a deleted topic's), as ranges."""
    heads = [lite_names_prefix(topic_id), lite_queues_prefix(topic_id), lite_counter_key(LITE_NEXT, topic_id),
             lite_counter_key(LITE_COUNT, topic_id)]
    return [(head, prefix_end(head)) for head in heads]


def encode_u32(value: int) -> bytes:
    return _U32.pack(value)


def decode_u32(raw: bytes) -> int:
    value: int = _U32.unpack(raw)[0]
    return value


# --- staging family: kind · ... (broker/staging.py) ----------------------------------------
# A staged chunk and its index entry are named by its handle (expiry bucket · sequence), so
# expiring chunks is one range delete per kind; a sink's state by the sink id, a job by its number.

STAGED_CHUNK, STAGED_INDEX, SINK_STATE, PUBLISH_JOB = b"c", b"i", b"s", b"j"


def prefix_end(prefix: bytes) -> bytes:
    """The smallest key greater than every key starting with `prefix`."""
    b = bytearray(prefix)
    while b and b[-1] == 0xFF:
        b.pop()
    if not b:
        return b"\xff" * (len(prefix) + 1)
    b[-1] += 1
    return bytes(b)
