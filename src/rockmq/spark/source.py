"""The `rockmq` Spark data source (PySpark Python Data Source API, pyspark >= 4.2): topics as
DataFrames, batch and streaming; writing goes to `rockmq.spark.sink`.

    spark.read.format("rockmq").option("endpoint", "127.0.0.1:8081").option("topic", "orders").load()
    spark.readStream.format("rockmq").option("endpoint", ...).option("topic", "orders,audit").load()

Options (names are case-insensitive; values strings):
- `endpoint` (required): HOST:PORT of any broker; every broker's queues are read.
- `topic` (required): a topic, or several separated by commas.
- `startingOffsets`: where reading starts (default `earliest` for batch, `latest` for a new
  streaming query; a restarted query resumes from its checkpoint and ignores this).
- `endingOffsets` (batch only; default `latest`): where reading stops, exclusive.
  Both take `earliest`, `latest`, a time — ms since the epoch (`1767225600000`) or ISO-8601
  (`2026-01-01T00:00:00Z`, naive = UTC), meaning per queue the first offset stored at or after
  it — or a JSON map `{"topic": {"broker:queueId": offset}}` with -2 for earliest and -1 for
  latest, e.g. `{"orders": {"broker-a:0": 1200, "broker-a:1": -2}}`. A queue is named by broker
  and id because ids are per broker; on a single broker the bare id (`"0"`) works too. Queues
  a map leaves out start at earliest and end at latest.
- `maxMessagesPerTrigger` (streaming; default 500000): messages per micro-batch, over all
  queues in proportion to their backlog. Each micro-batch costs Spark a fixed ~0.3 s: keep it large.
  `Trigger.AvailableNow` honours it (several batches up to the offsets present at the start).
- `maxMessagesPerPartition` (default 100000): a queue range larger than this is split into
  several Spark partitions (tasks).
- `failOnDataLoss` (default true): messages removed by retention before the query read them,
  or a queue that went back (topic recreated), fail the query with a DataLossError naming
  queue and range; `false` skips them with a warning.
- `requestTimeoutMs` (default 30000): deadline of each broker call.
- `tls`, `tlsCaFile`: connect over TLS; `accessKey`, `secretKey`: sign as this user (rockmq/spark/connection.py).

Columns: topic, queue_id, queue_offset, message_id, tag, keys, properties, body, born_timestamp,
store_timestamp, broker and lite_topic: (topic, broker, queue_id, queue_offset) identifies a message, since
in a cluster every broker has its own queue 0.

A LITE topic is read as its lite topics (each one queue, listed with ListLiteTopics, every page):
`lite_topic` is the lite topic's name, null for the messages of other topics (docs/spark.md).

Streaming offsets (the checkpoint) are the JSON map above with concrete offsets: the next offset
to read per queue. Queues of a topic that appear later (a topic created after the query
started, a broker added) are read from their first message. Spark shows per queue the offsets a
micro-batch read (`endOffset`) and the newest the broker holds (`latestOffset`, from
`reportLatestOffset`) in each query progress: `rockmq.spark.lag(progress["sources"][0])` is their
difference. (pyspark 4.3 gives Python streaming sources no custom-metrics hook.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rockmq.plumbing.channels import Tls
from rockmq.plumbing.credentials import Credentials
from rockmq.spark import offsets as om
from rockmq.spark.connection import credentials_option, tls_option
from rockmq.spark.fetch import Brokers, DataLossError, SourceError

if TYPE_CHECKING:
    import pyarrow as pa

DEFAULT_MAX_PER_TRIGGER = 500_000
DEFAULT_MAX_PER_PARTITION = 100_000
# Records per Fetch: the columnar decode costs a few hundred kernel calls a batch whatever its
# size, so bigger is cheaper per message; the broker builds a reply on its event loop, so not too big.
FETCH_RECORDS = 8192
FETCH_BYTES = 16 * 1024 * 1024

SCHEMA = StructType([
    StructField("topic", StringType()),
    StructField("queue_id", IntegerType()),
    StructField("queue_offset", LongType()),
    StructField("message_id", StringType()),
    StructField("tag", StringType()),
    StructField("keys", ArrayType(StringType())),
    StructField("properties", MapType(StringType(), StringType())),
    StructField("body", BinaryType()),
    StructField("born_timestamp", TimestampType()),
    StructField("store_timestamp", TimestampType()),
    StructField("broker", StringType()),
    StructField("lite_topic", StringType()),
])


class RockmqDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "rockmq"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return RockmqReader(SourceOptions.parse(self.options, streaming=False, schema=schema))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return RockmqStreamReader(SourceOptions.parse(self.options, streaming=True, schema=schema))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from rockmq.spark.sink import RockmqBatchWriter

        return RockmqBatchWriter(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from rockmq.spark.sink import RockmqStreamWriter

        return RockmqStreamWriter(self.options, schema, overwrite)


@dataclass(frozen=True)
class SourceOptions:
    """The reader options, checked once at planning (option errors surface before any task)."""

    endpoint: str
    topics: tuple[str, ...]
    starting: om.OffsetSpec
    ending: om.OffsetSpec
    max_per_trigger: int | None
    max_per_partition: int
    fail_on_data_loss: bool
    timeout_s: float
    tls: Tls | None = None
    credentials: Credentials | None = None  # `accessKey`, `secretKey`

    @classmethod
    def parse(cls, options: Mapping[str, str] | None, *, streaming: bool, schema: StructType | None = None) -> SourceOptions:
        opts = {str(k).lower(): str(v) for k, v in dict(options or {}).items()}
        if schema is not None and schema != SCHEMA:
            raise SourceError(f"the rockmq source has a fixed schema ({SCHEMA.simpleString()}); do not set another")
        endpoint = opts.get("endpoint", "").strip()
        if not endpoint:
            raise SourceError("the rockmq source needs option endpoint (HOST:PORT of a broker)")
        topics = tuple(dict.fromkeys(t.strip() for t in opts.get("topic", "").split(",") if t.strip()))
        if not topics:
            raise SourceError("the rockmq source needs option topic (one topic, or several separated by commas)")
        if streaming and "endingoffsets" in opts:
            raise SourceError("endingOffsets is for batch reads; a streaming query reads on")
        try:
            starting = om.parse_spec(opts.get("startingoffsets"), "latest" if streaming else "earliest", "startingOffsets")
            ending = om.parse_spec(opts.get("endingoffsets"), "latest", "endingOffsets")
            per_trigger = _count(opts, "maxmessagespertrigger", DEFAULT_MAX_PER_TRIGGER)
            per_partition = _count(opts, "maxmessagesperpartition", DEFAULT_MAX_PER_PARTITION)
            timeout_s = _count(opts, "requesttimeoutms", 30_000) / 1000
            tls = tls_option(opts)
            credentials = credentials_option(opts)
        except ValueError as e:
            raise SourceError(str(e)) from None
        fail = opts.get("failondataloss", "true").strip().lower()
        if fail not in ("true", "false"):
            raise SourceError(f"failOnDataLoss is true or false, not {fail!r}")
        return cls(endpoint, topics, starting, ending, per_trigger, per_partition, fail == "true", timeout_s, tls, credentials)

    def brokers(self) -> Brokers:
        return Brokers(self.endpoint, self.timeout_s, self.tls, self.credentials)


def _count(opts: dict[str, str], name: str, default: int) -> int:
    raw = opts.get(name)
    if raw is None:
        return default
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n <= 0:
        raise ValueError(f"option {name} must be a positive integer, not {raw!r}")
    return n


@dataclass
class QueueRange(InputPartition):
    """One Spark partition: messages [start, end) of one queue, and all a worker needs to read them."""

    endpoint: str
    topic: str
    broker: str
    queue_id: int
    start: int
    end: int
    fail_on_data_loss: bool
    timeout_s: float
    tls: Tls | None = None
    credentials: Credentials | None = None
    lite_topic: str | None = None  # the queue is this lite topic of `topic`


def read_range(partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """The partition's messages as Arrow record batches (one per Fetch reply)."""
    if not isinstance(partition, QueueRange):  # Spark's stand-in when there is nothing to read
        return
    from rockmq import malloc_tuning
    from rockmq.spark.columnar import decode
    from rockmq.spark.fetch import fetch_replies

    malloc_tuning.tune()  # Spark's Python worker receives replies of megabytes too (see rockmq.malloc_tuning)
    p = partition
    for reply in fetch_replies(p.endpoint, p.topic, p.broker, p.queue_id, p.start, p.end,
                               fail_on_data_loss=p.fail_on_data_loss, max_records=FETCH_RECORDS, max_bytes=FETCH_BYTES,
                               timeout_s=p.timeout_s, tls=p.tls, credentials=p.credentials):
        yield decode(p.topic, p.broker, p.queue_id, reply.first_offset, reply.records, reply.offsets, reply.count,
                     p.lite_topic)


def _discover(opts: SourceOptions) -> list[om.QueueState]:
    return _listing(opts)[0]


def _listing(opts: SourceOptions) -> tuple[list[om.QueueState], set[str]]:
    """Every queue of the topics (a LITE topic's: its lite topics), and the LITE topics listed completely."""
    brokers = opts.brokers()
    return [q for topic in opts.topics for q in brokers.queues(topic)], brokers.listed_lite


def _partitions(opts: SourceOptions, start: om.Offsets, end: om.Offsets, queues: list[om.QueueState]) -> list[QueueRange]:
    where = {(q.topic, q.broker): q.endpoint for q in queues}
    lite = {(q.topic, q.broker, q.queue_id): q.lite_topic for q in queues if q.lite_topic is not None}
    out = []
    for r in om.ranges(start, end, opts.max_per_partition):
        endpoint = where.get((r.topic, r.broker))
        if endpoint is None:
            raise SourceError(f"broker {r.broker!r} of topic {r.topic!r} is not in the topic's route now; "
                              f"cannot read [{r.start}, {r.end}) of its queue {r.queue_id}")
        out.append(QueueRange(endpoint, r.topic, r.broker, r.queue_id, r.start, r.end, opts.fail_on_data_loss, opts.timeout_s,
                              opts.tls, opts.credentials, lite.get((r.topic, r.broker, r.queue_id))))
    return out


class RockmqReader(DataSourceReader):
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def partitions(self) -> list[QueueRange]:
        opts = self.opts
        brokers = opts.brokers()
        queues = []
        for topic in opts.topics:
            found = brokers.queues(topic, strict=True)
            if not found:
                raise SourceError(f"topic {topic!r} does not exist (no broker reachable from {opts.endpoint} has it)")
            queues.extend(found)
        for spec, option in ((opts.starting, "startingOffsets"), (opts.ending, "endingOffsets")):
            try:
                om.check_json_queues(spec, queues, option)
            except ValueError as e:
                raise SourceError(str(e)) from None
        start = om.resolve(opts.starting, queues, brokers.offset_at, "earliest")
        end = om.resolve(opts.ending, queues, brokers.offset_at, "latest")
        return _partitions(opts, start, end, queues)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_range(partition)


class RockmqStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches in Spark's long-lived source process; `read` runs in workers on a
    pickled copy that never sees the state kept here (the partitions carry what it needs)."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._target: om.Offsets | None = None  # Trigger.AvailableNow: read up to these, then stop
        self._latest: om.Offsets | None = None  # for reportLatestOffset
        self._queues: list[om.QueueState] = []

    def initialOffset(self) -> om.Offsets:
        queues = self._queues = _discover(self.opts)
        try:
            om.check_json_queues(self.opts.starting, queues, "startingOffsets")
        except ValueError as e:
            raise SourceError(str(e)) from None
        return om.resolve(self.opts.starting, queues, self.opts.brokers().offset_at, "earliest")

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.opts.max_per_trigger) if self.opts.max_per_trigger else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = {}
        for q in _discover(self.opts):
            self._target.setdefault(q.topic, {})[q.key] = q.max_offset

    def latestOffset(self, start: om.Offsets, limit: ReadLimit) -> om.Offsets:
        queues, listed_lite = _listing(self.opts)
        self._queues = queues
        available: om.Offsets = {}
        effective = {t: dict(qs) for t, qs in start.items()}
        for q in queues:
            at = start.get(q.topic, {}).get(q.key, 0)  # a queue new to the query starts at 0
            newest = q.max_offset
            if self._target is not None:  # AvailableNow: nothing past the target; no queue born after it
                if q.key not in self._target.get(q.topic, {}):
                    continue
                newest = min(newest, self._target[q.topic][q.key])
            if at < q.min_offset and newest > at:
                self._lost(f"messages [{at}, {q.min_offset}) of queue {q.key} of topic {q.topic!r} were removed (retention) "
                           "before this query read them")
                effective.setdefault(q.topic, {})[q.key] = at = q.min_offset
            if q.max_offset < at:
                self._lost(f"queue {q.key} of topic {q.topic!r} now ends at {q.max_offset}, before this query's position "
                           f"{at} (topic deleted and recreated?)")
            available.setdefault(q.topic, {})[q.key] = newest
        self._latest = {t: dict(qs) for t, qs in available.items()}
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end = om.rate_limit(effective, available, max_rows)
        # Skipped (failOnDataLoss=false) ranges are not re-planned: past the loss, the end moves forward.
        return om.forget_gone(om.merge_forward(start, end), listed_lite, queues)

    def _lost(self, what: str) -> None:
        if self.opts.fail_on_data_loss:
            raise DataLossError(f"{what}; set the option failOnDataLoss=false to skip lost messages")
        import logging

        logging.getLogger(__name__).warning("rockmq: %s; skipping them (failOnDataLoss=false)", what)

    def reportLatestOffset(self) -> om.Offsets | None:
        return self._latest

    def partitions(self, start: om.Offsets, end: om.Offsets) -> list[QueueRange]:
        for topic, key, s, e in om.behind(start, end):  # a queue that went back: nothing to read, the end is the new position
            self._lost(f"queue {key} of topic {topic!r} went back from offset {s} to {e} (topic deleted and recreated?)")
        known = {(q.topic, q.broker) for q in self._queues}
        if any((r.topic, r.broker) not in known for r in om.ranges(start, end, 1 << 62)):
            self._queues = _discover(self.opts)  # a restart replays its last batch before any latestOffset
        return _partitions(self.opts, start, end, self._queues)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_range(partition)

    def commit(self, end: om.Offsets) -> None:
        """Nothing to do: the checkpoint is the truth, and the broker keeps no position for us."""
