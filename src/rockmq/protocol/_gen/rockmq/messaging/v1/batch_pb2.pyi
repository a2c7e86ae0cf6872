from rockmq.protocol._gen.apache.rocketmq.v2 import definition_pb2 as _definition_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReceiveRequest(_message.Message):
    __slots__ = ("group", "topic", "filter_expression", "batch_size", "invisible_duration_ms", "long_polling_timeout_ms")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    FILTER_EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    INVISIBLE_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    LONG_POLLING_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    group: str
    topic: str
    filter_expression: _definition_pb2.FilterExpression
    batch_size: int
    invisible_duration_ms: int
    long_polling_timeout_ms: int
    def __init__(self, group: _Optional[str] = ..., topic: _Optional[str] = ..., filter_expression: _Optional[_Union[_definition_pb2.FilterExpression, _Mapping]] = ..., batch_size: _Optional[int] = ..., invisible_duration_ms: _Optional[int] = ..., long_polling_timeout_ms: _Optional[int] = ...) -> None: ...

class ReceiveResponse(_message.Message):
    __slots__ = ("status", "messages")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    messages: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., messages: _Optional[_Iterable[bytes]] = ...) -> None: ...

class ReceivedBatch(_message.Message):
    __slots__ = ("status", "messages", "next_offset")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    messages: _containers.RepeatedCompositeFieldContainer[_definition_pb2.Message]
    next_offset: int
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., messages: _Optional[_Iterable[_Union[_definition_pb2.Message, _Mapping]]] = ..., next_offset: _Optional[int] = ...) -> None: ...

class AckRequest(_message.Message):
    __slots__ = ("group", "topic", "receipt_handles", "receipt_runs")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_HANDLES_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_RUNS_FIELD_NUMBER: _ClassVar[int]
    group: str
    topic: str
    receipt_handles: _containers.RepeatedScalarFieldContainer[str]
    receipt_runs: _containers.RepeatedCompositeFieldContainer[ReceiptRun]
    def __init__(self, group: _Optional[str] = ..., topic: _Optional[str] = ..., receipt_handles: _Optional[_Iterable[str]] = ..., receipt_runs: _Optional[_Iterable[_Union[ReceiptRun, _Mapping]]] = ...) -> None: ...

class ReceiptRun(_message.Message):
    __slots__ = ("token", "entries")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    token: str
    entries: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, token: _Optional[str] = ..., entries: _Optional[_Iterable[int]] = ...) -> None: ...

class AckResponse(_message.Message):
    __slots__ = ("status", "entries")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    entries: _containers.RepeatedCompositeFieldContainer[_definition_pb2.Status]
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., entries: _Optional[_Iterable[_Union[_definition_pb2.Status, _Mapping]]] = ...) -> None: ...

class PullRequest(_message.Message):
    __slots__ = ("group", "topic", "queue_id", "offset", "batch_size", "filter_expression", "long_polling_timeout_ms", "max_bytes")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    QUEUE_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    FILTER_EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    LONG_POLLING_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    group: str
    topic: str
    queue_id: int
    offset: int
    batch_size: int
    filter_expression: _definition_pb2.FilterExpression
    long_polling_timeout_ms: int
    max_bytes: int
    def __init__(self, group: _Optional[str] = ..., topic: _Optional[str] = ..., queue_id: _Optional[int] = ..., offset: _Optional[int] = ..., batch_size: _Optional[int] = ..., filter_expression: _Optional[_Union[_definition_pb2.FilterExpression, _Mapping]] = ..., long_polling_timeout_ms: _Optional[int] = ..., max_bytes: _Optional[int] = ...) -> None: ...

class PullResponse(_message.Message):
    __slots__ = ("status", "messages", "next_offset")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    messages: _containers.RepeatedScalarFieldContainer[bytes]
    next_offset: int
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., messages: _Optional[_Iterable[bytes]] = ..., next_offset: _Optional[int] = ...) -> None: ...

class FetchRequest(_message.Message):
    __slots__ = ("topic", "queue_id", "offset", "end_offset", "max_records", "max_bytes")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    QUEUE_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    MAX_RECORDS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    topic: str
    queue_id: int
    offset: int
    end_offset: int
    max_records: int
    max_bytes: int
    def __init__(self, topic: _Optional[str] = ..., queue_id: _Optional[int] = ..., offset: _Optional[int] = ..., end_offset: _Optional[int] = ..., max_records: _Optional[int] = ..., max_bytes: _Optional[int] = ...) -> None: ...

class FetchResponse(_message.Message):
    __slots__ = ("status", "first_offset", "count", "records", "offsets", "min_offset", "max_offset")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    FIRST_OFFSET_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    MIN_OFFSET_FIELD_NUMBER: _ClassVar[int]
    MAX_OFFSET_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    first_offset: int
    count: int
    records: bytes
    offsets: bytes
    min_offset: int
    max_offset: int
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., first_offset: _Optional[int] = ..., count: _Optional[int] = ..., records: _Optional[bytes] = ..., offsets: _Optional[bytes] = ..., min_offset: _Optional[int] = ..., max_offset: _Optional[int] = ...) -> None: ...

class StageRequest(_message.Message):
    __slots__ = ("system_properties", "ttl_ms", "deduplicate", "contents")
    SYSTEM_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    DEDUPLICATE_FIELD_NUMBER: _ClassVar[int]
    CONTENTS_FIELD_NUMBER: _ClassVar[int]
    system_properties: _containers.RepeatedScalarFieldContainer[bytes]
    ttl_ms: int
    deduplicate: bool
    contents: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, system_properties: _Optional[_Iterable[bytes]] = ..., ttl_ms: _Optional[int] = ..., deduplicate: _Optional[bool] = ..., contents: _Optional[_Iterable[bytes]] = ...) -> None: ...

class StageResponse(_message.Message):
    __slots__ = ("status", "handle", "count")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    handle: bytes
    count: int
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., handle: _Optional[bytes] = ..., count: _Optional[int] = ...) -> None: ...

class StagedChunk(_message.Message):
    __slots__ = ("handle", "count")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    handle: bytes
    count: int
    def __init__(self, handle: _Optional[bytes] = ..., count: _Optional[int] = ...) -> None: ...

class PublishStagedRequest(_message.Message):
    __slots__ = ("sink_id", "batch_id", "chunks", "retain_ms")
    SINK_ID_FIELD_NUMBER: _ClassVar[int]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    RETAIN_MS_FIELD_NUMBER: _ClassVar[int]
    sink_id: str
    batch_id: int
    chunks: _containers.RepeatedCompositeFieldContainer[StagedChunk]
    retain_ms: int
    def __init__(self, sink_id: _Optional[str] = ..., batch_id: _Optional[int] = ..., chunks: _Optional[_Iterable[_Union[StagedChunk, _Mapping]]] = ..., retain_ms: _Optional[int] = ...) -> None: ...

class PublishStagedResponse(_message.Message):
    __slots__ = ("status", "duplicate", "published", "deduplicated")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_FIELD_NUMBER: _ClassVar[int]
    DEDUPLICATED_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    duplicate: bool
    published: int
    deduplicated: int
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., duplicate: _Optional[bool] = ..., published: _Optional[int] = ..., deduplicated: _Optional[int] = ...) -> None: ...

class DiscardStagedRequest(_message.Message):
    __slots__ = ("handles",)
    HANDLES_FIELD_NUMBER: _ClassVar[int]
    handles: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, handles: _Optional[_Iterable[bytes]] = ...) -> None: ...

class DiscardStagedResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ...) -> None: ...
