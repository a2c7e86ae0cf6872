from rockmq.protocol._gen.apache.rocketmq.v2 import definition_pb2 as _definition_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StoredMessage(_message.Message):
    __slots__ = ("broker", "message")
    BROKER_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    broker: str
    message: _definition_pb2.Message
    def __init__(self, broker: _Optional[str] = ..., message: _Optional[_Union[_definition_pb2.Message, _Mapping]] = ...) -> None: ...

class GetMessageRequest(_message.Message):
    __slots__ = ("topic", "message_id", "local")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    topic: str
    message_id: str
    local: bool
    def __init__(self, topic: _Optional[str] = ..., message_id: _Optional[str] = ..., local: _Optional[bool] = ...) -> None: ...

class FindMessagesRequest(_message.Message):
    __slots__ = ("topic", "key", "from_ms", "to_ms", "max", "local")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    FROM_MS_FIELD_NUMBER: _ClassVar[int]
    TO_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    topic: str
    key: str
    from_ms: int
    to_ms: int
    max: int
    local: bool
    def __init__(self, topic: _Optional[str] = ..., key: _Optional[str] = ..., from_ms: _Optional[int] = ..., to_ms: _Optional[int] = ..., max: _Optional[int] = ..., local: _Optional[bool] = ...) -> None: ...

class ListMessagesRequest(_message.Message):
    __slots__ = ("topic", "from_ms", "to_ms", "max", "local")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    FROM_MS_FIELD_NUMBER: _ClassVar[int]
    TO_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    topic: str
    from_ms: int
    to_ms: int
    max: int
    local: bool
    def __init__(self, topic: _Optional[str] = ..., from_ms: _Optional[int] = ..., to_ms: _Optional[int] = ..., max: _Optional[int] = ..., local: _Optional[bool] = ...) -> None: ...

class MessagesResponse(_message.Message):
    __slots__ = ("messages", "more", "unreachable")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    UNREACHABLE_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[StoredMessage]
    more: bool
    unreachable: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, messages: _Optional[_Iterable[_Union[StoredMessage, _Mapping]]] = ..., more: _Optional[bool] = ..., unreachable: _Optional[_Iterable[str]] = ...) -> None: ...

class TraceEvent(_message.Message):
    __slots__ = ("at_ms", "kind", "group", "client_id", "attempt", "broker", "queue_id", "offset")
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    BROKER_FIELD_NUMBER: _ClassVar[int]
    QUEUE_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    at_ms: int
    kind: str
    group: str
    client_id: str
    attempt: int
    broker: str
    queue_id: int
    offset: int
    def __init__(self, at_ms: _Optional[int] = ..., kind: _Optional[str] = ..., group: _Optional[str] = ..., client_id: _Optional[str] = ..., attempt: _Optional[int] = ..., broker: _Optional[str] = ..., queue_id: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...

class TraceMessageRequest(_message.Message):
    __slots__ = ("topic", "message_id", "local")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    topic: str
    message_id: str
    local: bool
    def __init__(self, topic: _Optional[str] = ..., message_id: _Optional[str] = ..., local: _Optional[bool] = ...) -> None: ...

class TraceMessageResponse(_message.Message):
    __slots__ = ("events", "unreachable")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    UNREACHABLE_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[TraceEvent]
    unreachable: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, events: _Optional[_Iterable[_Union[TraceEvent, _Mapping]]] = ..., unreachable: _Optional[_Iterable[str]] = ...) -> None: ...
