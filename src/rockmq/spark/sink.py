"""The rockmq Spark sink: `df.write.format("rockmq")` and `df.writeStream.format("rockmq")`,
exactly once.

Columns: `body` (binary or string, required); optional `topic` (per row, over the `topic`
option), `tag`, `keys` (array<string>), `message_group` (FIFO), `delivery_timestamp` (timestamp:
a delayed message), `properties` (map<string,string>) and `message_id` (see below). Options:
`endpoint` (required), `topic`, `tls`, `tlsCaFile`, `accessKey` and `secretKey` (rockmq/spark/connection.py), and the knobs in
`SinkOptions`. Append only.

How exactly-once works — stage, then publish once per (sink, batch)
---------------------------------------------------------------------
Spark runs a task again when an attempt fails, and a restarted streaming query runs its last
batch again when the driver died before recording it done. Either would send a second copy. So
nothing a task sends is visible until the driver decides, once per batch:

1. Tasks (`write`) send their rows with `BatchMessaging.Stage` in chunks (256 messages, several
   requests in flight). The broker validates each message as SendMessage would and keeps the
   chunk, invisible, in its RocksDB; it answers with a handle. The task's commit message carries
   its handles. A failing attempt discards its chunks if it still can; they expire otherwise.
2. The driver (`commit`) calls `PublishStaged(sink id, batch id, handles)`. The broker compares
   the batch id with the last one that sink published. Above it: it records the new batch id
   and the handles in one durable write (the decision), moves the chunks into their queues
   (delayed messages into the timers) and answers once all of it is durable; a broker killed
   midway finishes the job when it starts again. At or below it: the batch was published
   already, and its chunks are dropped. A batch that staged nothing is not published at all:
   replayed, it stages nothing again.

The sink id is the streaming query's id (kept in the checkpoint, so it survives restarts) and
the batch id Spark's; a batch job gets a fresh sink id and batch 0, so a retried PublishStaged
call is a no-op. Inside `foreachBatch`, pass options `sinkId` and `batchId` to make the batch
writes of a streaming query exactly-once the same way. Correctness depends neither on a replay
rebuilding identical rows nor on a time window; it assumes the sink id's record stays on the
broker (a streaming sink's is kept for ever, a batch job's for a day: `retainSeconds`). With
authentication on, a sink id is the user's (`accessKey`): another user's sink of the same id is
another sink, and publishing needs Pub on the topics written. A batch id more than a million past
the sink's last is refused (broker/staging.py MAX_BATCH_STEP): Spark's count up one by one.

A batch job run again is a new job: without `sinkId` it gets another fresh sink id and sends
every row again (50,000 rows run twice: 100,000 messages). Nothing in a rerun tells it from new
data, so only the user can say "this is the same write": option `sinkId`, the same in every run
of the same data (and another for other data: a sink id's batch is published once), makes a
rerun publish nothing while the broker remembers the id. A batch write without one logs a
warning that says so (`rerun_warning`), once per write: in the Python worker that plans the
write, whose stderr Spark copies to the driver's console (a `warnings.warn` would show only
once per worker, and Spark reuses them).

Chunks wait for their decision for `stageTtlSeconds` (an hour): a batch whose tasks ran longer
than that fails at commit (nothing is published) rather than publish part of itself.

Message ids: a `message_id` column sets them, and those messages are also de-duplicated by the
broker against earlier sends of the same (topic, id), like SendMessage retries, within its
`dedup_window_s` (10 min): for re-running a job that re-sends the same data. Otherwise each id
is derived from (sink, batch, partition, row), the same in every attempt.

Order: each task's messages enter the queues in row order; normal messages are spread round
robin over the topic's queues, messages with a `message_group` go to that group's queue.
One broker: everything goes through `endpoint` (in a cluster, into that broker's queues).

Cost: tasks encode rows straight from Arrow into protobuf bytes (sink_wire.py), and the broker
keeps each message as sent, so the broker's work per message is about that of a batched
SendMessage, plus one more RocksDB write (the staged copy): at 1 KiB bodies on a 2-core machine
shared with Spark, about the broker's own batched produce rate (bench/spark_write_bench.py).
"""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, DataType, MapType, StringType, StructType, TimestampNTZType, TimestampType

from rockmq.client.errors import from_rpc_error, from_status
from rockmq.plumbing import channels
from rockmq.plumbing.channels import Dial, Tls
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import batch as batch_pb
from rockmq.protocol import pb
from rockmq.spark.connection import credentials_option, tls_option
from rockmq.spark.sink_wire import COLUMNS, Encoder, id_prefix, stage_request

if TYPE_CHECKING:
    from pyspark import TaskContext

_SERVICE = "/rockmq.messaging.v1.BatchMessaging/"
_STRING = StringType()
_ACCEPTED: dict[str, tuple[str, tuple[DataType, ...]]] = {
    "body": ("binary or string", (BinaryType(), _STRING)),
    "topic": ("string", (_STRING,)),
    "tag": ("string", (_STRING,)),
    "keys": ("array<string>", (ArrayType(_STRING, True), ArrayType(_STRING, False))),
    "message_group": ("string", (_STRING,)),
    "delivery_timestamp": ("timestamp", (TimestampType(),)),
    "properties": ("map<string,string>", (MapType(_STRING, _STRING, True), MapType(_STRING, _STRING, False))),
    "message_id": ("string", (_STRING,)),
}
BATCH_RETAIN_S = 86_400
N = TypeVar("N", bound=float)  # a numeric option's type
D = TypeVar("D")  # its default's
RETRIES = 4  # attempts of an RPC that failed in transport (the broker is restarting, say)
log = logging.getLogger(__name__)


class SinkError(ValueError):
    """The sink cannot run as asked (a wrong column, option or save mode)."""


@dataclass(frozen=True)
class SinkOptions:
    """The writer's options (`.option(...)`, names case-insensitive)."""

    endpoint: str
    topic: str | None = None
    batch_size: int = 256  # `batchSize`: messages per Stage request
    batch_bytes: int = 1 << 20  # `batchBytes`: ... or fewer, to keep a request about this small
    max_inflight: int = 4  # `maxInflight`: Stage requests in flight per task
    stage_ttl_s: int = 3600  # `stageTtlSeconds`: how long staged chunks wait for their publish
    timeout_s: float = 60.0  # `timeoutSeconds`: per Stage request
    publish_timeout_s: float = 900.0  # `publishTimeoutSeconds`: per PublishStaged call
    sink_id: str | None = None  # `sinkId`: whose batches (default: the query id / one per job)
    batch_id: int | None = None  # `batchId`: batch writes only, with sinkId (foreachBatch)
    retain_s: int | None = None  # `retainSeconds`: how long the broker remembers the sink's last batch
    tls: Tls | None = None  # `tls`, `tlsCaFile`
    credentials: Credentials | None = None  # `accessKey`, `secretKey`

    @property
    def dial(self) -> Dial:
        return self.endpoint, self.tls, self.credentials

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        opts = {str(k).lower(): v for k, v in dict(options).items()}
        endpoint = (opts.get("endpoint") or "").strip()
        if not endpoint:
            raise SinkError("the rockmq sink needs option `endpoint` (host:port of a broker)")

        def number(name: str, default: D, kind: Callable[[str], N], low: float = 1) -> N | D:
            raw = opts.get(name.lower())
            if raw is None:
                return default
            try:
                value = kind(raw)
            except ValueError:
                raise SinkError(f"option `{name}` must be a number, not {raw!r}") from None
            if value < low:
                raise SinkError(f"option `{name}` must be at least {low}, not {raw!r}")
            return value

        sink_id = opts.get("sinkid") or None
        batch_id = number("batchId", None, int, 0)
        try:
            tls = tls_option(opts)
            credentials = credentials_option(opts)
        except ValueError as e:
            raise SinkError(str(e)) from None
        if batch_id is not None and sink_id is None:
            raise SinkError("option `batchId` needs option `sinkId` (whose batches they are)")
        return cls(endpoint=endpoint, topic=opts.get("topic") or None,
                   batch_size=number("batchSize", cls.batch_size, int), batch_bytes=number("batchBytes", cls.batch_bytes, int),
                   max_inflight=number("maxInflight", cls.max_inflight, int),
                   stage_ttl_s=number("stageTtlSeconds", cls.stage_ttl_s, int),
                   timeout_s=number("timeoutSeconds", cls.timeout_s, float),
                   publish_timeout_s=number("publishTimeoutSeconds", cls.publish_timeout_s, float),
                   sink_id=sink_id, batch_id=batch_id, retain_s=number("retainSeconds", None, int, 0), tls=tls,
                   credentials=credentials)


def check_schema(schema: StructType, options: SinkOptions) -> None:
    """Refuse, before any task runs, a DataFrame the sink would fail on."""
    names = [f.name for f in schema.fields]
    unknown = [n for n in names if n not in _ACCEPTED]
    if unknown:
        raise SinkError(f"the rockmq sink does not know column(s) {', '.join(map(repr, unknown))}; it takes "
                        f"{', '.join(COLUMNS)} (select or rename columns first)")
    if "body" not in names:
        raise SinkError("the rockmq sink needs a `body` column (binary or string)")
    for f in schema.fields:
        what, types = _ACCEPTED[f.name]
        if f.dataType not in types:
            hint = " (cast it: timestamp_ntz has no time zone)" if isinstance(f.dataType, TimestampNTZType) else ""
            raise SinkError(f"column `{f.name}` must be {what}, not {f.dataType.simpleString()}{hint}")
    if "topic" not in names and not options.topic:
        raise SinkError("the rockmq sink needs option `topic` (or a `topic` column)")


@dataclass
class RockmqCommitMessage(WriterCommitMessage):
    """What one task staged: chunk handles and their message counts, in order."""

    sink_id: str
    partition: int
    handles: list[bytes] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)

    @property
    def messages(self) -> int:
        return sum(self.counts)


def rerun_warning(options: SinkOptions, message_ids: bool) -> str | None:
    """What a batch write without `sinkId` tells its user (None with one): a rerun of the job is a
    new sink, so it sends its rows again, and nothing but the user can say otherwise."""
    if options.sink_id is not None:
        return None
    where = f"to topic {options.topic!r} " if options.topic else ""
    dedup = ("its `message_id` column de-duplicates a rerun only within the broker's de-dup window "
             "(dedup_window_s, 10 min by default)" if message_ids else "a rerun sends every row again")
    return (f"rockmq: this batch write {where}has no option `sinkId`, so it is exactly-once within this run only: "
            f"{dedup}. To make a rerun publish nothing, give the write a `sinkId` naming what it writes, "
            f"the same in every run of the same data (README, Spark)")


# --- connections: one channel per endpoint per process (Spark reuses its Python workers) --------

def _open_calls(dial: Dial) -> dict[str, Any]:
    """The BatchMessaging calls on the process's channel (plumbing/channels.py). Stage takes raw
    request bytes."""
    channel = channels.channel(*dial)
    return {
        "stage": channel.unary_unary(_SERVICE + "Stage", request_serializer=None,
                                     response_deserializer=batch_pb.StageResponse.FromString),
        "publish": channel.unary_unary(_SERVICE + "PublishStaged",
                                       request_serializer=batch_pb.PublishStagedRequest.SerializeToString,
                                       response_deserializer=batch_pb.PublishStagedResponse.FromString),
        "discard": channel.unary_unary(_SERVICE + "DiscardStaged",
                                       request_serializer=batch_pb.DiscardStagedRequest.SerializeToString,
                                       response_deserializer=batch_pb.DiscardStagedResponse.FromString),
    }


_calls = channels.ChannelCache(_open_calls).get


def _transient(endpoint: str, e: grpc.RpcError) -> bool:
    return from_rpc_error(endpoint, e).retriable


def _call(options: SinkOptions, name: str, request: Any, timeout: float) -> Any:
    """One RPC, retried while the transport fails (every call here is safe to repeat)."""
    for attempt in range(RETRIES):
        try:
            return _calls(options.dial)[name](request, timeout=timeout)
        except grpc.RpcError as e:
            if not _transient(options.endpoint, e) or attempt == RETRIES - 1:
                raise RuntimeError(f"rockmq {options.endpoint}: {name} failed: {e.code().name} {e.details()}") from None
            time.sleep(0.5 * 2 ** attempt)
    raise AssertionError("unreachable")


def _refused(what: str, status: pb.Status) -> RuntimeError:
    return RuntimeError(f"rockmq refused {what}: {from_status(status.code, status.message)}")


# --- the writers -----------------------------------------------------------------------------


class _Sink:
    """What the batch and streaming writers share: checks at creation, staging in tasks."""

    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool) -> None:
        if overwrite:
            raise SinkError("the rockmq sink only appends: a topic cannot be overwritten (use mode 'append', "
                            "or output mode 'append'/'update' for a stream)")
        self.options = SinkOptions.parse(options)
        check_schema(schema, self.options)
        self.deduplicate = "message_id" in schema.fieldNames()

    def _stage(self, iterator: Iterator[pa.RecordBatch], sink_id: str, batch_id: int, partition: int) -> RockmqCommitMessage:
        """Stage every row of this task; -> the handles. A failure discards what was staged."""
        o = self.options
        encoder = Encoder(o.topic, socket.gethostname(), id_prefix(sink_id, batch_id, partition))
        result = RockmqCommitMessage(sink_id, partition)
        inflight: deque[tuple[grpc.Future[batch_pb.StageResponse], int, bytes]] = deque()
        stage = _calls(o.dial)["stage"]
        ttl_ms = o.stage_ttl_s * 1000

        def settle(fut: grpc.Future[batch_pb.StageResponse], count: int, request: bytes) -> None:
            try:
                reply = fut.result()
            except grpc.RpcError as e:
                if not _transient(o.endpoint, e):
                    raise RuntimeError(f"rockmq {o.endpoint}: Stage failed: {e.code().name} {e.details()}") from None
                reply = _call(o, "stage", request, o.timeout_s)  # a chunk staged twice: one copy expires
            if reply.status.code != pb.OK:
                raise _refused("a row", reply.status)
            if reply.count != count:
                raise RuntimeError(f"rockmq staged {reply.count} of {count} messages")
            result.handles.append(reply.handle)
            result.counts.append(count)

        def send(messages: list[tuple[bytes, bytes]]) -> None:
            request = stage_request(messages, ttl_ms, self.deduplicate)
            inflight.append((stage.future(request, timeout=o.timeout_s), len(messages), request))
            while len(inflight) > o.max_inflight:
                settle(*inflight.popleft())

        try:
            pending: list[tuple[bytes, bytes]] = []
            size = 0
            for record_batch in iterator:
                for message in encoder.messages(record_batch, time.time_ns() // 1000):
                    pending.append(message)
                    size += len(message[1])
                    if len(pending) >= o.batch_size or size >= o.batch_bytes:
                        send(pending)
                        pending, size = [], 0
            if pending:
                send(pending)
            while inflight:
                settle(*inflight.popleft())
        except BaseException:
            for fut, _, _ in inflight:
                fut.cancel()
            _discard(o, result.handles)
            raise
        return result

    def _publish(self, messages: list[WriterCommitMessage | None], sink_id: str | None, batch_id: int,
                 retain_s: int) -> batch_pb.PublishStagedResponse | None:
        """Have the broker publish the batch (or drop it, if it did already); -> its answer."""
        ours = _ours(messages)
        chunks = [batch_pb.StagedChunk(handle=h, count=c) for m in ours for h, c in zip(m.handles, m.counts, strict=True)]
        if sink_id is None:
            sink_id = next((m.sink_id for m in ours), None)
        if sink_id is None or not chunks:
            return None  # nothing was written: nothing to decide (the broker records no empty batch)
        request = batch_pb.PublishStagedRequest(sink_id=sink_id, batch_id=batch_id, chunks=chunks, retain_ms=retain_s * 1000)
        reply: batch_pb.PublishStagedResponse = _call(self.options, "publish", request, self.options.publish_timeout_s)
        if reply.status.code != pb.OK:
            raise _refused(f"publishing batch {batch_id} of sink {sink_id}", reply.status)
        return reply

    def _abort(self, messages: list[WriterCommitMessage | None]) -> None:
        _discard(self.options, [h for m in _ours(messages) for h in m.handles])


def _ours(messages: list[WriterCommitMessage | None]) -> list[RockmqCommitMessage]:
    """The commit messages of tasks that wrote (Spark gives None for a failed one)."""
    return [m for m in messages if isinstance(m, RockmqCommitMessage)]


def _discard(options: SinkOptions, handles: list[bytes]) -> None:
    """Best effort: chunks left behind expire on the broker anyway."""
    if not handles:
        return
    try:
        _calls(options.dial)["discard"](batch_pb.DiscardStagedRequest(handles=handles), timeout=10)
    except grpc.RpcError:
        pass


def _task() -> TaskContext:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        raise RuntimeError("the rockmq sink's write() runs in a Spark task")
    return ctx


class RockmqBatchWriter(_Sink, DataSourceArrowWriter):
    """`df.write.format("rockmq")`: one sink id per job (or `sinkId`/`batchId` from the options)."""

    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool) -> None:
        super().__init__(options, schema, overwrite)
        o = self.options
        warning = rerun_warning(o, self.deduplicate)
        if warning is not None:
            log.warning(warning)
        self.sink_id = o.sink_id or f"batch-{uuid.uuid4().hex}"
        self.batch_id = o.batch_id or 0
        if o.retain_s is not None:
            self.retain_s = o.retain_s
        else:  # an own id must outlive the user's retries of the job; a job's own one only its commit
            self.retain_s = 0 if o.batch_id is not None else BATCH_RETAIN_S

    def write(self, iterator: Iterator[pa.RecordBatch]) -> RockmqCommitMessage:
        return self._stage(iterator, self.sink_id, self.batch_id, _task().partitionId())

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self._publish(messages, self.sink_id, self.batch_id, self.retain_s)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._abort(messages)


class RockmqStreamWriter(_Sink, DataSourceStreamArrowWriter):
    """`writeStream.format("rockmq")`: the sink id is the query id (or `sinkId`), kept for ever."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> RockmqCommitMessage:
        ctx = _task()
        sink_id = self.options.sink_id or ctx.getLocalProperty("sql.streaming.queryId")
        batch_id = ctx.getLocalProperty("streaming.sql.batchId")
        if not sink_id or batch_id is None:
            raise RuntimeError("the rockmq stream writer found no streaming query id / batch id in its task")
        return self._stage(iterator, sink_id, int(batch_id), ctx.partitionId())

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 (Spark's name)
        retain = self.options.retain_s if self.options.retain_s is not None else 0
        self._publish(messages, self.options.sink_id, batchId, retain)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        self._abort(messages)
