"""A seeded fuzzer of every RPC a broker and a name server serve (issue 20 §1.4).

Each case is a function of (seed, index) alone (`make_case`), so a failing one is replayed by its
two numbers. A case picks a method of a served service (from the services' descriptors: a method
added later is fuzzed too), builds a plausible request for it (a hand-written one where a method
needs a real message or handle, else every field filled with the names the fixture created), then
mutates it: field values at their edges (empty, huge, negative, unicode, unknown enum numbers,
out-of-range durations), fields cleared, repeated fields emptied or grown, the call's headers
changed, or the encoded bytes garbled (truncated, flipped, wrong wire types, random).

The pass (`Fuzzer.check`): no reply carries INTERNAL_ERROR (50001) in any status it holds, no call
ends in gRPC INTERNAL or UNKNOWN. tests/chaos/test_chaos_fuzz.py runs it against real processes;
bench/fuzz_bench.py is its command line (cases/s, the status histogram, replay of one case).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from broker_process import AUTH_ADMIN, AUTH_ARGS, AUTH_SECRET, BrokerProcess, NameServerProcess
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, ServiceDescriptor
from google.protobuf.message import Message

from rockmq.plumbing.channels import CLIENT_ID_HEADER
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import acl, admin, admin_grpc, batch, batch_grpc, namesrv, pb, receipt, replication, rpc, svc, users
from rockmq.protocol.conventions import LANE_HEADER, QUEUE_CHOICE_HEADER
from rockmq.protocol.message_id import new_message_id

# --- what the fixture creates (`prepare`) and the requests name ---------------------------
TOPIC_TYPES = {"fz-normal": "NORMAL", "fz-fifo": "FIFO", "fz-delay": "DELAY", "fz-txn": "TRANSACTION"}
TOPICS = tuple(TOPIC_TYPES)
GROUPS = ("fz-group", "fz-fifo-group", "fz-pull-group")  # the last is never POP'ed: pulls and offsets are its
CREATED = ("fz-new-0", "fz-new-1", "fz-new-2")  # what Create*/Delete* name: deleting them costs the run nothing
CLIENT = "fuzz-client@127.0.0.1"
ADMIN, ADMIN_SECRET = AUTH_ADMIN, AUTH_SECRET

BROKER, AUTH, WORKERS, NAMESRV = "broker", "auth", "workers", "namesrv"
ELSEWHERE = ((AUTH, 0.12), (WORKERS, 0.12))  # a broker's method goes there this often: access checks, shards
SERVICES: tuple[tuple[ServiceDescriptor, str], ...] = (
    (rpc.DESCRIPTOR.services_by_name["MessagingService"], BROKER),
    (batch.DESCRIPTOR.services_by_name["BatchMessaging"], BROKER),
    (admin.DESCRIPTOR.services_by_name["Admin"], BROKER),
    (replication.DESCRIPTOR.services_by_name["Replication"], BROKER),
    (users.DESCRIPTOR.services_by_name["Users"], AUTH),
    (acl.DESCRIPTOR.services_by_name["Acls"], AUTH),
    (namesrv.DESCRIPTOR.services_by_name["NameServer"], NAMESRV),
)
INTERNAL_ERROR = pb.INTERNAL_ERROR  # 50001: a bug in rockmq
BAD_GRPC = (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)
STATUS = pb.Status.DESCRIPTOR.full_name
# What this client's gRPC core says of a call on which it wrote after the server had ended it (the
# server's own status, e.g. FAILED_PRECONDITION, is lost): not the server's answer.
CLIENT_CORE_INTERNAL = "Internal error from Core"
STREAM_S = 0.5  # a streaming call's deadline: long polls and Follow streams end by it
UNARY_S = 10.0


@dataclass(frozen=True)
class Target:
    service: str  # full name
    method: str
    request: type[Message]
    response: type[Message]
    client_streaming: bool
    server_streaming: bool
    server: str  # BROKER, AUTH or NAMESRV: who serves it

    @property
    def path(self) -> str:
        return f"/{self.service}/{self.method}"


def _cls(desc: Descriptor) -> type[Message]:
    return message_factory.GetMessageClass(desc)  # type: ignore[no-any-return]


TARGETS: tuple[Target, ...] = tuple(
    Target(service.full_name, m.name, _cls(m.input_type), _cls(m.output_type), m.client_streaming, m.server_streaming, server)
    for service, server in SERVICES for m in service.methods)


# --- edge values ---------------------------------------------------------------------------
_INT32 = (0, 1, -1, 2**31 - 1, -(2**31), 1024, 65536, 100_000)
_INT64 = (*_INT32, 2**63 - 1, -(2**63), 2**53, 10**15, 10**18, -(10**15))
_UINT32 = (0, 1, 2**32 - 1, 2**31)
_UINT64 = (0, 1, 2**64 - 1, 2**63)
_STRINGS = ("", " ", "*", "||", "a||b", "%", "../..", "\u00e9t\u00e9", "\U0001f980", "\u202e", "\t\n",
            "x" * 256, "y" * 1025, "z" * 65_536, "w" * 70_000, "a" * 5000, "TAG", "a b", "%RETRY%fz-group",
            "rmq_sys_TRACE_DATA", "DLQ", "a=1", "(a > 1) AND", "a BETWEEN 1 AND", "0" * 40, "\x00", "-1", "9" * 30)
_HEADER_VALUES = ("", " ", "x" * 3000, "-1", "*", "%", "client-" + "9" * 40, "main", "lane-\x7e")


def _edge_string(rng: random.Random, pool: tuple[str, ...]) -> str:
    r = rng.random()
    if r < 0.55:
        return rng.choice(_STRINGS)
    if r < 0.8:  # a known name or handle, perturbed
        s = rng.choice(pool) if pool else "fz"
        if not s:
            return s
        i = rng.randrange(len(s))
        return rng.choice((s[:i], s[:i] + chr(rng.randrange(32, 0x3000)) + s[i + 1:], s + s, s[::-1], s.upper()))
    return "".join(chr(rng.choice((rng.randrange(32, 127), rng.randrange(0x80, 0xD7FF)))) for _ in range(rng.randrange(1, 40)))


def _edge_bytes(rng: random.Random) -> bytes:
    return rng.choice((b"", b"\x00", b"\xff" * 7, rng.randbytes(rng.randrange(1, 64)), rng.randbytes(70_000),
                       pb.SystemProperties(message_id="x").SerializeToString()[:-1], b"\x0a\xff\xff\xff\xff\x0f"))


def _edge_scalar(f: FieldDescriptor, rng: random.Random, pool: tuple[str, ...]) -> Any:
    t = f.type
    if t == FieldDescriptor.TYPE_STRING:
        return _edge_string(rng, pool)
    if t == FieldDescriptor.TYPE_BYTES:
        return _edge_bytes(rng)
    if t == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if t == FieldDescriptor.TYPE_ENUM:
        known = [v.number for v in f.enum_type.values]
        return rng.choice((*known, max(known) + 1, -1, 99, 2**31 - 1))
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return rng.choice((0.0, -1.0, 1e308, float("inf"), float("-inf"), float("nan")))
    if t in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
        return rng.choice(_UINT32)
    if t in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return rng.choice(_UINT64)
    if t in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64):
        return rng.choice(_INT64) if rng.random() < 0.8 else rng.randrange(-(2**63), 2**63)
    return rng.choice(_INT32) if rng.random() < 0.8 else rng.randrange(-(2**31), 2**31)


# --- plausible requests --------------------------------------------------------------------
@dataclass
class Pools:
    """What a plausible request names: the fixture's resources and what its sends and receives got."""

    handles: list[str] = field(default_factory=list)  # receipt handles
    message_ids: list[str] = field(default_factory=list)
    transactions: list[tuple[str, str]] = field(default_factory=list)  # (message id, transaction id) of half messages
    recall_handles: list[str] = field(default_factory=list)
    staged: list[bytes] = field(default_factory=list)  # Stage's handles

    def names(self, f: FieldDescriptor, method: str) -> tuple[str, ...]:
        name = f.name
        fixed = _FIELD_VALUES.get(name)
        if fixed is not None:
            return fixed
        if name == "recall_handle":
            return tuple(self.recall_handles) or ("none",)
        if "handle" in name:
            return tuple(self.handles) or ("none",)
        if name == "transaction_id":
            return tuple(t for _, t in self.transactions) or ("none",)
        if "message_id" in name:
            return tuple(self.message_ids) or (new_message_id(),)
        if method.startswith(("Create", "Delete", "Update", "Revoke", "Grant")):
            return CREATED
        if "group" in name:
            return GROUPS
        if "topic" in name or name == "name":
            return TOPICS + GROUPS
        return ("TAG", "fz", "a=1", "127.0.0.1:8081")


_FIELD_VALUES: dict[str, tuple[str, ...]] = {
    "user": (ADMIN, *CREATED),
    "resource": (*(f"Topic:{t}" for t in TOPICS), "Group:fz-group", "Topic:*", "Topic:fz-*", "*"),
    "actions": ("Pub", "Sub", "All", "Create", "Get", "List"),
    "decision": ("Allow", "Deny"),
    "message_types": tuple(TOPIC_TYPES.values()),
    "consume_mode": ("", "pop", "offset"),
    "secret": ("s3cret-fuzz", ""),
    "sink_id": ("fz-sink", "fz-sink-2"),
    "expression": ("*", "TAG", "TAG || other", "a > 1", "a = '1' AND b IS NULL"),
}


def _plausible_scalar(f: FieldDescriptor, rng: random.Random, pools: Pools, method: str) -> Any:
    t = f.type
    if t == FieldDescriptor.TYPE_STRING:
        return rng.choice(pools.names(f, method))
    if t == FieldDescriptor.TYPE_BYTES:
        return rng.randbytes(rng.randrange(0, 32))
    if t == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.3
    if t == FieldDescriptor.TYPE_ENUM:
        known = [v.number for v in f.enum_type.values]
        return rng.choice(known[1:] or known)
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return rng.random()
    return rng.randrange(0, 16)


_WELL_KNOWN = {"google.protobuf.Duration": "seconds", "google.protobuf.Timestamp": "seconds"}


def fill(msg: Message, rng: random.Random, pools: Pools, method: str, depth: int = 0) -> Message:
    """Set most of `msg`'s fields to plausible values (nested messages to depth 3)."""
    for f in msg.DESCRIPTOR.fields:
        if rng.random() < 0.25 or (f.containing_oneof is not None and msg.WhichOneof(f.containing_oneof.name)):
            continue
        if f.message_type is not None:
            if f.message_type.GetOptions().map_entry:
                getattr(msg, f.name)[_plausible_scalar(f.message_type.fields_by_name["key"], rng, pools, method)] = "1"
                continue
            if depth >= 3:
                continue
            if f.message_type.full_name in _WELL_KNOWN:
                sub = getattr(msg, f.name).add() if f.is_repeated else getattr(msg, f.name)
                sub.seconds = rng.randrange(0, 30) if "Duration" in f.message_type.full_name else int(time.time())
                continue
            sub = getattr(msg, f.name).add() if f.is_repeated else getattr(msg, f.name)
            fill(sub, rng, pools, method, depth + 1)
        elif f.is_repeated:
            getattr(msg, f.name).extend(_plausible_scalar(f, rng, pools, method) for _ in range(rng.randrange(1, 4)))
        else:
            setattr(msg, f.name, _plausible_scalar(f, rng, pools, method))
    return msg


def _message(rng: random.Random, topic: str) -> pb.Message:
    m = pb.Message(topic=pb.Resource(name=topic), body=rng.randbytes(rng.randrange(1, 64)))
    sp = m.system_properties
    sp.message_id = new_message_id()
    sp.born_host = "fuzz"
    sp.born_timestamp.GetCurrentTime()
    sp.tag = "TAG"
    sp.keys.append("k")
    sp.message_type = pb.MessageType.Value(TOPIC_TYPES[topic])
    sp.body_digest.type = pb.SHA1
    sp.body_digest.checksum = hashlib.sha1(m.body).hexdigest().upper()
    if topic == "fz-fifo":
        sp.message_group = "g1"
    if topic == "fz-delay":
        sp.delivery_timestamp.FromMilliseconds(int(time.time() * 1000) + rng.randrange(0, 5000))
    m.user_properties["a"] = "1"
    return m


def _stage(rng: random.Random) -> batch.StageRequest:
    m = _message(rng, rng.choice(TOPICS[:3]))
    sp = m.system_properties.SerializeToString()
    m.ClearField("system_properties")
    return batch.StageRequest(system_properties=[sp], contents=[m.SerializeToString()], ttl_ms=600_000)


def _queue(topic: str, qid: int = -1) -> pb.MessageQueue:
    return pb.MessageQueue(topic=pb.Resource(name=topic), id=qid, broker=pb.Broker(name=""))


def _seed(method: str, rng: random.Random, pools: Pools) -> Message | None:
    """A hand-written valid request for the methods whose plausible fill would rarely get past validation."""
    topic, group = rng.choice(TOPICS), rng.choice(GROUPS)
    handle = rng.choice(pools.handles) if pools.handles else "none"
    if method == "SendMessage":
        return rpc.SendMessageRequest(messages=[_message(rng, topic) for _ in range(rng.randrange(1, 4))])
    if method == "ReceiveMessage":
        r = rpc.ReceiveMessageRequest(group=pb.Resource(name=group), message_queue=_queue(topic), batch_size=4,
                                      filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"))
        r.invisible_duration.FromMilliseconds(10_000)
        r.long_polling_timeout.FromMilliseconds(0)
        return r
    if method == "AckMessage":
        return rpc.AckMessageRequest(group=pb.Resource(name=group), topic=pb.Resource(name=topic),
                                     entries=[rpc.AckMessageEntry(message_id="x", receipt_handle=handle)])
    if method == "ChangeInvisibleDuration":
        r2 = rpc.ChangeInvisibleDurationRequest(group=pb.Resource(name=group), topic=pb.Resource(name=topic),
                                                receipt_handle=handle, message_id="x")
        r2.invisible_duration.FromMilliseconds(5000)
        return r2
    if method in ("PullMessage", "QueryOffset", "GetOffset", "UpdateOffset"):
        cls = {"PullMessage": rpc.PullMessageRequest, "QueryOffset": rpc.QueryOffsetRequest,
               "GetOffset": rpc.GetOffsetRequest, "UpdateOffset": rpc.UpdateOffsetRequest}[method]
        r3: Any = cls(message_queue=_queue(topic, rng.randrange(0, 4)))
        if method != "QueryOffset":
            r3.group.name = "fz-pull-group"
        if method == "PullMessage":
            r3.batch_size = 8
            r3.long_polling_timeout.FromMilliseconds(0)
        if method == "QueryOffset":
            r3.query_offset_policy = pb.TIMESTAMP
            r3.timestamp.GetCurrentTime()
        return r3  # type: ignore[no-any-return]
    if method == "Telemetry":
        entry = pb.SubscriptionEntry(topic=pb.Resource(name=topic), expression=pb.FilterExpression(type=pb.TAG, expression="*"))
        return rpc.TelemetryCommand(settings=pb.Settings(client_type=pb.SIMPLE_CONSUMER, subscription=pb.Subscription(
            group=pb.Resource(name=group), subscriptions=[entry])))
    if method == "Stage":
        return _stage(rng)
    if method == "Fetch":
        return batch.FetchRequest(topic=topic, queue_id=rng.randrange(0, 4), offset=0, max_records=16)
    if method == "Ack":
        if rng.random() < 0.5:
            return batch.AckRequest(group=group, topic=topic, receipt_handles=[handle])
        try:  # in short, as rockmq's client sends them: the handles' token once, entry numbers
            runs = receipt.runs(rng.sample(pools.handles, min(len(pools.handles), rng.randrange(1, 4))))
        except ValueError:
            runs = []
        return batch.AckRequest(group=group, topic=topic, receipt_runs=[batch.ReceiptRun(token=t, entries=e) for t, e in runs])
    if method == "EndTransaction" and pools.transactions:
        mid, tid = rng.choice(pools.transactions)
        return rpc.EndTransactionRequest(topic=pb.Resource(name="fz-txn"), message_id=mid, transaction_id=tid,
                                         resolution=rng.choice((pb.COMMIT, pb.ROLLBACK)))
    if method == "RecallMessage" and pools.recall_handles:
        return rpc.RecallMessageRequest(topic=pb.Resource(name="fz-delay"), recall_handle=rng.choice(pools.recall_handles))
    if method in ("PublishStaged", "DiscardStaged") and pools.staged:
        handles = rng.sample(pools.staged, rng.randrange(1, 3))
        if method == "DiscardStaged":
            return batch.DiscardStagedRequest(handles=handles)
        chunks = [batch.StagedChunk(handle=h, count=1) for h in handles]
        return batch.PublishStagedRequest(sink_id="fz-sink", batch_id=rng.randrange(0, 2**40), chunks=chunks)
    if method == "Pull":
        return batch.PullRequest(group="fz-pull-group", topic=topic, queue_id=rng.randrange(0, 4), batch_size=8)
    if method == "Receive":
        return batch.ReceiveRequest(group=group, topic=topic, batch_size=8, invisible_duration_ms=10_000)
    if method == "Follow":
        return replication.FollowerState(applied_seq=rng.randrange(0, 50))
    return None


# --- mutations -----------------------------------------------------------------------------
def _fields(msg: Message, rng: random.Random) -> Iterator[tuple[Message, FieldDescriptor]]:
    """A random walk down `msg`: (message, one of its fields) at each level it goes."""
    while msg.DESCRIPTOR.fields:
        f = rng.choice(msg.DESCRIPTOR.fields)
        yield msg, f
        if f.message_type is None or f.message_type.GetOptions().map_entry or rng.random() < 0.4:
            return
        if f.is_repeated:
            items = getattr(msg, f.name)
            msg = rng.choice(items) if len(items) else items.add()
        else:
            msg = getattr(msg, f.name)


def mutate(msg: Message, rng: random.Random, pools: Pools, method: str) -> str:
    """One structured mutation of `msg` in place -> what it did (for a replay's printout)."""
    parent, f = rng.choice(list(_fields(msg, rng))) if msg.DESCRIPTOR.fields else (msg, None)
    if f is None:
        return "no fields"
    pool = pools.names(f, method)
    what = rng.random()
    if what < 0.2:
        parent.ClearField(f.name)
        return f"clear {f.full_name}"
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        entries = getattr(parent, f.name)
        for _ in range(rng.choice((1, 1, 2, 300))):
            entries[_edge_string(rng, pool)] = _edge_string(rng, pool)
        return f"map {f.full_name}"
    if f.is_repeated:
        items = getattr(parent, f.name)
        n = rng.choice((0, 2, 50, 1000))
        if f.message_type is not None:
            base = items[0] if len(items) else None
            for _ in range(n):
                (items.add().CopyFrom(base) if base is not None else items.add())
        else:
            items.extend(_edge_scalar(f, rng, pool) for _ in range(n))
        return f"repeat {f.full_name} +{n}"
    if f.message_type is not None:
        sub = getattr(parent, f.name)
        if f.message_type.full_name in _WELL_KNOWN:
            sub.seconds = rng.choice(_INT64)
            sub.nanos = rng.choice((0, -1, 999_999_999, 10**9, -(10**9), 2**31 - 1))
            return f"time {f.full_name} = {sub.seconds}s {sub.nanos}ns"
        sub.SetInParent()
        return f"present {f.full_name}"
    value = _edge_scalar(f, rng, pool)
    setattr(parent, f.name, value)
    return f"set {f.full_name} = {str(value)[:40]!r}"


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def garble(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """The encoded request, broken at the byte level."""
    what = rng.randrange(7)
    if what == 0 or not data:
        return rng.randbytes(rng.randrange(0, 200)), "random bytes"
    if what == 1:
        return data[:rng.randrange(len(data))], "truncated"
    if what == 2:
        b = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        return bytes(b), "bit flips"
    if what == 3:  # a known field number with the wrong wire type
        tag = rng.randrange(1, 12)
        wire = rng.choice((0, 1, 2, 5))
        value = {0: _varint(rng.choice((0, 1, 2**63))), 1: b"\xff" * 8, 5: b"\xff" * 4,
                 2: _varint(3) + b"\xff\xfe\x00"}[wire]
        return data + _varint(tag << 3 | wire) + value, f"field {tag} as wire type {wire}"
    if what == 4:  # a length that runs past the end
        return data + _varint(rng.randrange(1, 12) << 3 | 2) + _varint(2**31), "length past the end"
    if what == 5:  # an unknown field and group wire types
        return data + _varint(rng.randrange(1000, 536_870_911) << 3 | rng.choice((0, 3, 4, 6, 7))) + b"\x01", "odd tag"
    return data * rng.randrange(2, 5), "repeated bytes"


def _metadata(rng: random.Random, server: str) -> tuple[tuple[str, str], ...]:
    meta: list[tuple[str, str]] = [(CLIENT_ID_HEADER, CLIENT)]
    if server == AUTH:
        who = rng.random()  # mostly the super user; else a wrong secret, a user that does not exist, or no one
        if who < 0.95:
            meta += Credentials(ADMIN if who < 0.9 else "fz-nobody", ADMIN_SECRET if who < 0.85 else "x").headers()
    if rng.random() < 0.1:
        name = rng.choice((CLIENT_ID_HEADER, LANE_HEADER, QUEUE_CHOICE_HEADER, "authorization", "x-mq-date-time"))
        meta = [kv for kv in meta if kv[0] != name]
        if rng.random() < 0.7:
            meta.append((name, rng.choice(_HEADER_VALUES)))
    return tuple(meta)


@dataclass
class Case:
    seed: int
    index: int
    target: Target
    server: str  # who is called: the target's server, or for a broker's method sometimes another broker
    frames: list[bytes]  # one, or several for a client stream
    metadata: tuple[tuple[str, str], ...]
    what: list[str]


def make_case(seed: int, index: int, pools: Pools, targets: tuple[Target, ...] = TARGETS,
              servers: frozenset[str] = frozenset((BROKER,))) -> Case:
    """Case `index` of the run seeded `seed`: the same (seed, index) gives the same request."""
    rng = random.Random(seed * 1_000_003 + index)
    target = rng.choice(targets)
    server, r = target.server, rng.random()
    for other, share in ELSEWHERE if server == BROKER else ():
        if r < share and other in servers:
            server = other
            break
        r -= share
    frames, what = [], []
    for _ in range(rng.randrange(1, 4) if target.client_streaming else 1):
        request = _seed(target.method, rng, pools) if rng.random() < 0.6 else None
        if request is None:
            request = fill(target.request(), rng, pools, target.method)
        for _ in range(rng.choice((0, 1, 1, 1, 2, 3))):
            what.append(mutate(request, rng, pools, target.method))
        data = request.SerializeToString()
        if rng.random() < 0.15:
            data, how = garble(data, rng)
            what.append(how)
        frames.append(data)
    return Case(seed, index, target, server, frames, _metadata(rng, server), what)


# --- running -------------------------------------------------------------------------------
def internal_statuses(msg: Message) -> Iterator[str]:
    """Where in `msg` a status says INTERNAL_ERROR."""
    for f, value in msg.ListFields():
        if f.message_type is None:
            continue
        items = value if f.is_repeated else [value]
        for item in items:
            if not isinstance(item, Message):
                continue
            if f.message_type.full_name == STATUS:
                if item.code == INTERNAL_ERROR:  # type: ignore[attr-defined]
                    yield f"{f.name}: {item.message}"  # type: ignore[attr-defined]
            else:
                yield from internal_statuses(item)


@dataclass
class Failure:
    seed: int
    index: int
    method: str
    why: str
    what: list[str]
    methods: tuple[str, ...]  # the run's --method filter: the same index is another case without it

    def __str__(self) -> str:
        only = "".join(f" --method {m}" for m in self.methods)
        return (f"case seed={self.seed} index={self.index} {self.method}: {self.why} (mutations: {self.what}); "
                f"replay: python bench/fuzz_bench.py --seed {self.seed}{only} --replay {self.index}")


@dataclass
class Fuzzer:
    """Runs cases against the servers (`endpoints`: BROKER, AUTH, NAMESRV -> HOST:PORT), `concurrency` at a time."""

    endpoints: dict[str, str]
    pools: Pools
    concurrency: int = 64
    methods: tuple[str, ...] = ()  # only these (names), else every method
    histogram: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    cases: int = 0

    @property
    def targets(self) -> tuple[Target, ...]:
        return tuple(t for t in TARGETS if t.server in self.endpoints and (not self.methods or t.method in self.methods))

    async def run(self, seed: int, first: int, count: int, on_case: Callable[[Case, str], None] | None = None) -> None:
        channels = {k: grpc.aio.insecure_channel(v, options=[("grpc.max_receive_message_length", 64 << 20)])
                    for k, v in self.endpoints.items()}
        next_index = first
        targets, servers = self.targets, frozenset(self.endpoints)
        try:
            async def worker() -> None:
                nonlocal next_index
                while next_index < first + count:
                    index = next_index
                    next_index += 1
                    case = make_case(seed, index, self.pools, targets, servers)
                    outcome = await self.one(channels[case.server], case)
                    self.cases += 1
                    if on_case is not None:
                        on_case(case, outcome)

            await asyncio.gather(*(worker() for _ in range(self.concurrency)))
        finally:
            for ch in channels.values():
                await ch.close()

    async def one(self, channel: grpc.aio.Channel, case: Case) -> str:
        """Run `case` -> its outcome (the histogram's key); a failure is recorded."""
        t = case.target
        write_failed = False
        try:
            if not t.server_streaming:
                call = channel.unary_unary(t.path)
                replies = [await call(case.frames[0], metadata=case.metadata, timeout=UNARY_S)]
            elif not t.client_streaming:
                replies = await self._drain(channel.unary_stream(t.path)(case.frames[0], metadata=case.metadata,
                                                                         timeout=STREAM_S))
            else:
                stream = channel.stream_stream(t.path)(metadata=case.metadata, timeout=STREAM_S)
                try:
                    for frame in case.frames:
                        await stream.write(frame)
                    await stream.done_writing()
                except Exception:  # noqa: BLE001 - AioRpcError, InvalidStateError or core's ExecuteBatchError, by timing
                    write_failed = True  # the server ended the call already: its status comes from the reads
                replies = await self._drain(stream)
        except grpc.aio.AioRpcError as e:
            outcome = f"grpc {e.code().name}"
            if write_failed and e.details() == CLIENT_CORE_INTERNAL:
                outcome += " (this client's, after a write the server had ended)"
            elif e.code() in BAD_GRPC:
                self._fail(case, f"gRPC {e.code().name}: {e.details()}")
            self.histogram[outcome] += 1
            return outcome
        outcome = "OK (no status)"
        for i, raw in enumerate(replies):
            try:
                reply = t.response.FromString(raw)
            except Exception as e:  # noqa: BLE001 - a reply that does not parse is a finding, not a crash of the fuzzer
                self._fail(case, f"reply frame {i} does not parse: {e}")
                return "unparsable reply"
            for where in internal_statuses(reply):
                self._fail(case, f"INTERNAL_ERROR in {where}")
            st = getattr(reply, "status", None)
            if i == 0 and isinstance(st, Message) and reply.HasField("status"):
                outcome = pb.Code.Name(st.code) if st.code in pb.Code.values() else str(st.code)  # type: ignore[attr-defined]
        self.histogram[outcome] += 1
        return outcome

    @staticmethod
    async def _drain(call: Any) -> list[bytes]:
        frames: list[bytes] = []
        try:
            async for frame in call:
                frames.append(frame)
                if len(frames) >= 64:
                    call.cancel()
                    break
        except grpc.aio.AioRpcError as e:
            if e.code() in BAD_GRPC or not frames:
                raise
        return frames

    def _fail(self, case: Case, why: str) -> None:
        self.failures.append(Failure(case.seed, case.index, case.target.path, why, case.what, self.methods))


# --- the servers and what they hold --------------------------------------------------------


def prepare(broker: str, pools: Pools | None = None, signed: bool = False) -> Pools:
    """Create the fixture's topics and groups on `broker`, send to them, receive, stage: the pools a
    plausible request takes its receipt handles, message and transaction ids and staged chunks from
    (`pools`, added to; `signed`: calls signed as the super user, for the broker run with --auth)."""
    pools = pools or Pools()
    meta = ((CLIENT_ID_HEADER, CLIENT), *(Credentials(ADMIN, ADMIN_SECRET).headers() if signed else ()))
    rng = random.Random(0)
    with grpc.insecure_channel(broker) as ch:
        adm = admin_grpc.AdminStub(ch)
        for topic, kind in TOPIC_TYPES.items():
            adm.CreateTopic(admin.CreateTopicRequest(name=topic, queue_count=4, message_types=[kind]), metadata=meta,
                            timeout=UNARY_S)
        for group in GROUPS:
            adm.CreateGroup(admin.CreateGroupRequest(name=group, fifo=group == "fz-fifo-group"), metadata=meta, timeout=UNARY_S)
        mq = svc.MessagingServiceStub(ch)
        for topic in TOPICS:
            messages = [_message(rng, topic) for _ in range(16)]
            if topic == "fz-delay":  # far enough ahead to be recalled during the run
                for m in messages:
                    m.system_properties.delivery_timestamp.FromSeconds(int(time.time()) + 3600)
            reply = mq.SendMessage(rpc.SendMessageRequest(messages=messages), metadata=meta, timeout=UNARY_S)
            pools.message_ids += [e.message_id for e in reply.entries]
            pools.transactions += [(e.message_id, e.transaction_id) for e in reply.entries if e.transaction_id]
            pools.recall_handles += [e.recall_handle for e in reply.entries if e.recall_handle]
        for topic in ("fz-normal", "fz-fifo"):
            for group in GROUPS[:2]:
                req = rpc.ReceiveMessageRequest(group=pb.Resource(name=group), message_queue=_queue(topic), batch_size=8,
                                                filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"))
                req.invisible_duration.FromSeconds(3600)
                req.long_polling_timeout.FromMilliseconds(0)
                for frame in mq.ReceiveMessage(req, metadata=meta, timeout=UNARY_S):
                    if frame.HasField("message"):
                        pools.handles.append(frame.message.system_properties.receipt_handle)
        stage = batch_grpc.BatchMessagingStub(ch).Stage
        for _ in range(16):
            staged = stage(_stage(rng), metadata=meta, timeout=UNARY_S)
            assert staged.status.code == pb.OK, staged.status
            pools.staged.append(staged.handle)
    assert pools.handles and pools.transactions and pools.recall_handles, pools
    return pools


def still_serves(broker: str) -> None:
    """A normal send and receive on `broker` after the run: it is up and answers as before."""
    rng = random.Random(1)
    meta = ((CLIENT_ID_HEADER, CLIENT),)
    with grpc.insecure_channel(broker) as ch:
        mq = svc.MessagingServiceStub(ch)
        admin_grpc.AdminStub(ch).CreateTopic(admin.CreateTopicRequest(name="fz-after", queue_count=1), timeout=UNARY_S)
        sent = _message(rng, "fz-normal")
        sent.topic.name = "fz-after"
        reply = mq.SendMessage(rpc.SendMessageRequest(messages=[sent]), metadata=meta, timeout=UNARY_S)
        assert reply.status.code == pb.OK, reply
        req = rpc.ReceiveMessageRequest(group=pb.Resource(name="fz-group"), message_queue=_queue("fz-after"), batch_size=8,
                                        filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"))
        req.invisible_duration.FromSeconds(30)
        req.long_polling_timeout.FromSeconds(2)
        got = [f.message.system_properties.message_id for f in mq.ReceiveMessage(req, metadata=meta, timeout=UNARY_S)
               if f.HasField("message")]
        assert got == [sent.system_properties.message_id], got


@contextmanager
def servers(data: Path) -> Iterator[dict[str, BrokerProcess | NameServerProcess]]:
    """The processes the fuzzer calls: a broker keeping batches for replicas (so Replication is
    served), a broker run with --auth (Users, Acls: called as its super user), one run with
    --workers 2 (its shards a cluster) and a name server."""
    procs: dict[str, BrokerProcess | NameServerProcess] = {}
    try:
        procs[BROKER] = BrokerProcess(data / "broker", "--replication", "async").start()
        procs[AUTH] = BrokerProcess(data / "auth", *AUTH_ARGS).start()
        procs[WORKERS] = BrokerProcess(data / "workers", "--workers", "2").start()
        procs[NAMESRV] = NameServerProcess().start()
        yield procs
    finally:
        for p in procs.values():
            p.stop()


def prepare_all(procs: dict[str, BrokerProcess | NameServerProcess]) -> Pools:
    """`prepare` every broker of `servers`: the pools hold what each gave."""
    pools = prepare(procs[BROKER].endpoint)
    for name, signed in ((AUTH, True), (WORKERS, False)):
        if name in procs:
            prepare(procs[name].endpoint, pools, signed)
    return pools
