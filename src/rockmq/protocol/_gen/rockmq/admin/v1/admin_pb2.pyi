from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TopicInfo(_message.Message):
    __slots__ = ("name", "queue_count", "message_types", "queues", "unreachable")
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUEUE_COUNT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_TYPES_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    UNREACHABLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    queue_count: int
    message_types: _containers.RepeatedScalarFieldContainer[str]
    queues: _containers.RepeatedCompositeFieldContainer[QueueInfo]
    unreachable: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., queue_count: _Optional[int] = ..., message_types: _Optional[_Iterable[str]] = ..., queues: _Optional[_Iterable[_Union[QueueInfo, _Mapping]]] = ..., unreachable: _Optional[_Iterable[str]] = ...) -> None: ...

class QueueInfo(_message.Message):
    __slots__ = ("queue_id", "min_offset", "max_offset", "broker")
    QUEUE_ID_FIELD_NUMBER: _ClassVar[int]
    MIN_OFFSET_FIELD_NUMBER: _ClassVar[int]
    MAX_OFFSET_FIELD_NUMBER: _ClassVar[int]
    BROKER_FIELD_NUMBER: _ClassVar[int]
    queue_id: int
    min_offset: int
    max_offset: int
    broker: str
    def __init__(self, queue_id: _Optional[int] = ..., min_offset: _Optional[int] = ..., max_offset: _Optional[int] = ..., broker: _Optional[str] = ...) -> None: ...

class CreateTopicRequest(_message.Message):
    __slots__ = ("name", "queue_count", "message_types", "brokers", "local")
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUEUE_COUNT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_TYPES_FIELD_NUMBER: _ClassVar[int]
    BROKERS_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    queue_count: int
    message_types: _containers.RepeatedScalarFieldContainer[str]
    brokers: _containers.RepeatedScalarFieldContainer[str]
    local: bool
    def __init__(self, name: _Optional[str] = ..., queue_count: _Optional[int] = ..., message_types: _Optional[_Iterable[str]] = ..., brokers: _Optional[_Iterable[str]] = ..., local: _Optional[bool] = ...) -> None: ...

class TopicRequest(_message.Message):
    __slots__ = ("name", "local")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    local: bool
    def __init__(self, name: _Optional[str] = ..., local: _Optional[bool] = ...) -> None: ...

class ListTopicsRequest(_message.Message):
    __slots__ = ("limit", "page_token")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    limit: int
    page_token: str
    def __init__(self, limit: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListTopicsResponse(_message.Message):
    __slots__ = ("topics", "next_page_token", "total")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[TopicInfo]
    next_page_token: str
    total: int
    def __init__(self, topics: _Optional[_Iterable[_Union[TopicInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total: _Optional[int] = ...) -> None: ...

class DeleteTopicResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GroupInfo(_message.Message):
    __slots__ = ("name", "fifo", "max_attempts", "queues", "inflight", "unreachable", "consume_mode")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FIFO_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    INFLIGHT_FIELD_NUMBER: _ClassVar[int]
    UNREACHABLE_FIELD_NUMBER: _ClassVar[int]
    CONSUME_MODE_FIELD_NUMBER: _ClassVar[int]
    name: str
    fifo: bool
    max_attempts: int
    queues: _containers.RepeatedCompositeFieldContainer[GroupQueueInfo]
    inflight: int
    unreachable: _containers.RepeatedScalarFieldContainer[str]
    consume_mode: str
    def __init__(self, name: _Optional[str] = ..., fifo: _Optional[bool] = ..., max_attempts: _Optional[int] = ..., queues: _Optional[_Iterable[_Union[GroupQueueInfo, _Mapping]]] = ..., inflight: _Optional[int] = ..., unreachable: _Optional[_Iterable[str]] = ..., consume_mode: _Optional[str] = ...) -> None: ...

class GroupQueueInfo(_message.Message):
    __slots__ = ("topic", "queue_id", "committed_offset", "pop_offset", "max_offset", "lag", "inflight", "broker", "lag_ms")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    QUEUE_ID_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    POP_OFFSET_FIELD_NUMBER: _ClassVar[int]
    MAX_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAG_FIELD_NUMBER: _ClassVar[int]
    INFLIGHT_FIELD_NUMBER: _ClassVar[int]
    BROKER_FIELD_NUMBER: _ClassVar[int]
    LAG_MS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    queue_id: int
    committed_offset: int
    pop_offset: int
    max_offset: int
    lag: int
    inflight: int
    broker: str
    lag_ms: int
    def __init__(self, topic: _Optional[str] = ..., queue_id: _Optional[int] = ..., committed_offset: _Optional[int] = ..., pop_offset: _Optional[int] = ..., max_offset: _Optional[int] = ..., lag: _Optional[int] = ..., inflight: _Optional[int] = ..., broker: _Optional[str] = ..., lag_ms: _Optional[int] = ...) -> None: ...

class CreateGroupRequest(_message.Message):
    __slots__ = ("name", "fifo", "max_attempts", "consume_mode", "local")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FIFO_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CONSUME_MODE_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    fifo: bool
    max_attempts: int
    consume_mode: str
    local: bool
    def __init__(self, name: _Optional[str] = ..., fifo: _Optional[bool] = ..., max_attempts: _Optional[int] = ..., consume_mode: _Optional[str] = ..., local: _Optional[bool] = ...) -> None: ...

class GroupRequest(_message.Message):
    __slots__ = ("name", "local")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    local: bool
    def __init__(self, name: _Optional[str] = ..., local: _Optional[bool] = ...) -> None: ...

class ListGroupsRequest(_message.Message):
    __slots__ = ("limit", "page_token")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    limit: int
    page_token: str
    def __init__(self, limit: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GroupMember(_message.Message):
    __slots__ = ("client_id", "lane", "idle_s")
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_FIELD_NUMBER: _ClassVar[int]
    IDLE_S_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    lane: str
    idle_s: float
    def __init__(self, client_id: _Optional[str] = ..., lane: _Optional[str] = ..., idle_s: _Optional[float] = ...) -> None: ...

class ListMembersResponse(_message.Message):
    __slots__ = ("members",)
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[GroupMember]
    def __init__(self, members: _Optional[_Iterable[_Union[GroupMember, _Mapping]]] = ...) -> None: ...

class ListGroupsResponse(_message.Message):
    __slots__ = ("groups", "next_page_token", "total")
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[GroupInfo]
    next_page_token: str
    total: int
    def __init__(self, groups: _Optional[_Iterable[_Union[GroupInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total: _Optional[int] = ...) -> None: ...

class TimerStatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TimerStats(_message.Message):
    __slots__ = ("pending", "next_due_ms", "moved", "lateness", "max_lateness_ms", "half_messages")
    PENDING_FIELD_NUMBER: _ClassVar[int]
    NEXT_DUE_MS_FIELD_NUMBER: _ClassVar[int]
    MOVED_FIELD_NUMBER: _ClassVar[int]
    LATENESS_FIELD_NUMBER: _ClassVar[int]
    MAX_LATENESS_MS_FIELD_NUMBER: _ClassVar[int]
    HALF_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    pending: int
    next_due_ms: int
    moved: int
    lateness: _containers.RepeatedCompositeFieldContainer[LatenessBucket]
    max_lateness_ms: int
    half_messages: int
    def __init__(self, pending: _Optional[int] = ..., next_due_ms: _Optional[int] = ..., moved: _Optional[int] = ..., lateness: _Optional[_Iterable[_Union[LatenessBucket, _Mapping]]] = ..., max_lateness_ms: _Optional[int] = ..., half_messages: _Optional[int] = ...) -> None: ...

class LatenessBucket(_message.Message):
    __slots__ = ("le_ms", "count")
    LE_MS_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    le_ms: int
    count: int
    def __init__(self, le_ms: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...

class PromoteRequest(_message.Message):
    __slots__ = ("force",)
    FORCE_FIELD_NUMBER: _ClassVar[int]
    force: bool
    def __init__(self, force: _Optional[bool] = ...) -> None: ...

class PromoteResponse(_message.Message):
    __slots__ = ("applied_seq", "epoch", "primary_answered")
    APPLIED_SEQ_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_ANSWERED_FIELD_NUMBER: _ClassVar[int]
    applied_seq: int
    epoch: int
    primary_answered: bool
    def __init__(self, applied_seq: _Optional[int] = ..., epoch: _Optional[int] = ..., primary_answered: _Optional[bool] = ...) -> None: ...
