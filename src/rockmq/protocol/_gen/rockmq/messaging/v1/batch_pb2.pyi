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

class AckRequest(_message.Message):
    __slots__ = ("group", "topic", "receipt_handles")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_HANDLES_FIELD_NUMBER: _ClassVar[int]
    group: str
    topic: str
    receipt_handles: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, group: _Optional[str] = ..., topic: _Optional[str] = ..., receipt_handles: _Optional[_Iterable[str]] = ...) -> None: ...

class AckResponse(_message.Message):
    __slots__ = ("status", "entries")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    entries: _containers.RepeatedCompositeFieldContainer[_definition_pb2.Status]
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., entries: _Optional[_Iterable[_Union[_definition_pb2.Status, _Mapping]]] = ...) -> None: ...

class PullRequest(_message.Message):
    __slots__ = ("group", "topic", "queue_id", "offset", "batch_size", "filter_expression", "long_polling_timeout_ms")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    QUEUE_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    FILTER_EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    LONG_POLLING_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    group: str
    topic: str
    queue_id: int
    offset: int
    batch_size: int
    filter_expression: _definition_pb2.FilterExpression
    long_polling_timeout_ms: int
    def __init__(self, group: _Optional[str] = ..., topic: _Optional[str] = ..., queue_id: _Optional[int] = ..., offset: _Optional[int] = ..., batch_size: _Optional[int] = ..., filter_expression: _Optional[_Union[_definition_pb2.FilterExpression, _Mapping]] = ..., long_polling_timeout_ms: _Optional[int] = ...) -> None: ...

class PullResponse(_message.Message):
    __slots__ = ("status", "messages", "next_offset")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    messages: _containers.RepeatedScalarFieldContainer[bytes]
    next_offset: int
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., messages: _Optional[_Iterable[bytes]] = ..., next_offset: _Optional[int] = ...) -> None: ...
