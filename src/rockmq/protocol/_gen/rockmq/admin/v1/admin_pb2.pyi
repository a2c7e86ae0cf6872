from rockmq.protocol._gen.rockmq.namesrv.v1 import namesrv_pb2 as _namesrv_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TopicInfo(_message.Message):
    __slots__ = ("name", "queue_count", "message_types", "queues", "unreachable", "perm", "lite_topic_ttl_s", "max_priority", "lite_topic_count")
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUEUE_COUNT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_TYPES_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    UNREACHABLE_FIELD_NUMBER: _ClassVar[int]
    PERM_FIELD_NUMBER: _ClassVar[int]
    LITE_TOPIC_TTL_S_FIELD_NUMBER: _ClassVar[int]
    MAX_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    LITE_TOPIC_COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    queue_count: int
    message_types: _containers.RepeatedScalarFieldContainer[str]
    queues: _containers.RepeatedCompositeFieldContainer[QueueInfo]
    unreachable: _containers.RepeatedScalarFieldContainer[str]
    perm: str
    lite_topic_ttl_s: int
    max_priority: int
    lite_topic_count: int
    def __init__(self, name: _Optional[str] = ..., queue_count: _Optional[int] = ..., message_types: _Optional[_Iterable[str]] = ..., queues: _Optional[_Iterable[_Union[QueueInfo, _Mapping]]] = ..., unreachable: _Optional[_Iterable[str]] = ..., perm: _Optional[str] = ..., lite_topic_ttl_s: _Optional[int] = ..., max_priority: _Optional[int] = ..., lite_topic_count: _Optional[int] = ...) -> None: ...

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
    __slots__ = ("name", "queue_count", "message_types", "brokers", "local", "lite_topic_ttl_s", "max_priority")
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUEUE_COUNT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_TYPES_FIELD_NUMBER: _ClassVar[int]
    BROKERS_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    LITE_TOPIC_TTL_S_FIELD_NUMBER: _ClassVar[int]
    MAX_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    name: str
    queue_count: int
    message_types: _containers.RepeatedScalarFieldContainer[str]
    brokers: _containers.RepeatedScalarFieldContainer[str]
    local: bool
    lite_topic_ttl_s: int
    max_priority: int
    def __init__(self, name: _Optional[str] = ..., queue_count: _Optional[int] = ..., message_types: _Optional[_Iterable[str]] = ..., brokers: _Optional[_Iterable[str]] = ..., local: _Optional[bool] = ..., lite_topic_ttl_s: _Optional[int] = ..., max_priority: _Optional[int] = ...) -> None: ...

class ListLiteTopicsRequest(_message.Message):
    __slots__ = ("topic", "after", "limit", "prefix", "local")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    topic: str
    after: str
    limit: int
    prefix: str
    local: bool
    def __init__(self, topic: _Optional[str] = ..., after: _Optional[str] = ..., limit: _Optional[int] = ..., prefix: _Optional[str] = ..., local: _Optional[bool] = ...) -> None: ...

class LiteTopicInfo(_message.Message):
    __slots__ = ("name", "queue_id", "min_offset", "max_offset", "last_store_ms", "broker")
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUEUE_ID_FIELD_NUMBER: _ClassVar[int]
    MIN_OFFSET_FIELD_NUMBER: _ClassVar[int]
    MAX_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_STORE_MS_FIELD_NUMBER: _ClassVar[int]
    BROKER_FIELD_NUMBER: _ClassVar[int]
    name: str
    queue_id: int
    min_offset: int
    max_offset: int
    last_store_ms: int
    broker: str
    def __init__(self, name: _Optional[str] = ..., queue_id: _Optional[int] = ..., min_offset: _Optional[int] = ..., max_offset: _Optional[int] = ..., last_store_ms: _Optional[int] = ..., broker: _Optional[str] = ...) -> None: ...

class ListLiteTopicsResponse(_message.Message):
    __slots__ = ("lite_topics", "more", "unreachable")
    LITE_TOPICS_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    UNREACHABLE_FIELD_NUMBER: _ClassVar[int]
    lite_topics: _containers.RepeatedCompositeFieldContainer[LiteTopicInfo]
    more: bool
    unreachable: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, lite_topics: _Optional[_Iterable[_Union[LiteTopicInfo, _Mapping]]] = ..., more: _Optional[bool] = ..., unreachable: _Optional[_Iterable[str]] = ...) -> None: ...

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
    __slots__ = ("name", "fifo", "max_attempts", "queues", "inflight", "unreachable", "consume_mode", "lite_wildcard")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FIFO_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    INFLIGHT_FIELD_NUMBER: _ClassVar[int]
    UNREACHABLE_FIELD_NUMBER: _ClassVar[int]
    CONSUME_MODE_FIELD_NUMBER: _ClassVar[int]
    LITE_WILDCARD_FIELD_NUMBER: _ClassVar[int]
    name: str
    fifo: bool
    max_attempts: int
    queues: _containers.RepeatedCompositeFieldContainer[GroupQueueInfo]
    inflight: int
    unreachable: _containers.RepeatedScalarFieldContainer[str]
    consume_mode: str
    lite_wildcard: bool
    def __init__(self, name: _Optional[str] = ..., fifo: _Optional[bool] = ..., max_attempts: _Optional[int] = ..., queues: _Optional[_Iterable[_Union[GroupQueueInfo, _Mapping]]] = ..., inflight: _Optional[int] = ..., unreachable: _Optional[_Iterable[str]] = ..., consume_mode: _Optional[str] = ..., lite_wildcard: _Optional[bool] = ...) -> None: ...

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
    __slots__ = ("name", "fifo", "max_attempts", "consume_mode", "local", "lite_wildcard")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FIFO_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CONSUME_MODE_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    LITE_WILDCARD_FIELD_NUMBER: _ClassVar[int]
    name: str
    fifo: bool
    max_attempts: int
    consume_mode: str
    local: bool
    lite_wildcard: bool
    def __init__(self, name: _Optional[str] = ..., fifo: _Optional[bool] = ..., max_attempts: _Optional[int] = ..., consume_mode: _Optional[str] = ..., local: _Optional[bool] = ..., lite_wildcard: _Optional[bool] = ...) -> None: ...

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

class ClusterRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ClusterBroker(_message.Message):
    __slots__ = ("name", "endpoint", "tls", "epoch", "last_seen_ms", "topics", "replicas")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    TLS_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_MS_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    name: str
    endpoint: str
    tls: bool
    epoch: int
    last_seen_ms: int
    topics: int
    replicas: _containers.RepeatedCompositeFieldContainer[_namesrv_pb2.ReplicaInfo]
    def __init__(self, name: _Optional[str] = ..., endpoint: _Optional[str] = ..., tls: _Optional[bool] = ..., epoch: _Optional[int] = ..., last_seen_ms: _Optional[int] = ..., topics: _Optional[int] = ..., replicas: _Optional[_Iterable[_Union[_namesrv_pb2.ReplicaInfo, _Mapping]]] = ...) -> None: ...

class NameServerState(_message.Message):
    __slots__ = ("address", "answered")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ANSWERED_FIELD_NUMBER: _ClassVar[int]
    address: str
    answered: bool
    def __init__(self, address: _Optional[str] = ..., answered: _Optional[bool] = ...) -> None: ...

class ClusterInfo(_message.Message):
    __slots__ = ("broker", "brokers", "name_servers")
    BROKER_FIELD_NUMBER: _ClassVar[int]
    BROKERS_FIELD_NUMBER: _ClassVar[int]
    NAME_SERVERS_FIELD_NUMBER: _ClassVar[int]
    broker: str
    brokers: _containers.RepeatedCompositeFieldContainer[ClusterBroker]
    name_servers: _containers.RepeatedCompositeFieldContainer[NameServerState]
    def __init__(self, broker: _Optional[str] = ..., brokers: _Optional[_Iterable[_Union[ClusterBroker, _Mapping]]] = ..., name_servers: _Optional[_Iterable[_Union[NameServerState, _Mapping]]] = ...) -> None: ...

class DeadLetter(_message.Message):
    __slots__ = ("message_id", "topic", "attempts", "store_ms", "keys", "tag", "broker")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    STORE_MS_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    BROKER_FIELD_NUMBER: _ClassVar[int]
    message_id: str
    topic: str
    attempts: int
    store_ms: int
    keys: _containers.RepeatedScalarFieldContainer[str]
    tag: str
    broker: str
    def __init__(self, message_id: _Optional[str] = ..., topic: _Optional[str] = ..., attempts: _Optional[int] = ..., store_ms: _Optional[int] = ..., keys: _Optional[_Iterable[str]] = ..., tag: _Optional[str] = ..., broker: _Optional[str] = ...) -> None: ...

class DlqListRequest(_message.Message):
    __slots__ = ("group", "from_ms", "to_ms", "limit", "local")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    FROM_MS_FIELD_NUMBER: _ClassVar[int]
    TO_MS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    group: str
    from_ms: int
    to_ms: int
    limit: int
    local: bool
    def __init__(self, group: _Optional[str] = ..., from_ms: _Optional[int] = ..., to_ms: _Optional[int] = ..., limit: _Optional[int] = ..., local: _Optional[bool] = ...) -> None: ...

class DlqListResponse(_message.Message):
    __slots__ = ("messages", "more", "unreachable")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    UNREACHABLE_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[DeadLetter]
    more: bool
    unreachable: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, messages: _Optional[_Iterable[_Union[DeadLetter, _Mapping]]] = ..., more: _Optional[bool] = ..., unreachable: _Optional[_Iterable[str]] = ...) -> None: ...

class DlqResendRequest(_message.Message):
    __slots__ = ("group", "message_ids", "all", "rate", "local")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_IDS_FIELD_NUMBER: _ClassVar[int]
    ALL_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    group: str
    message_ids: _containers.RepeatedScalarFieldContainer[str]
    all: bool
    rate: int
    local: bool
    def __init__(self, group: _Optional[str] = ..., message_ids: _Optional[_Iterable[str]] = ..., all: _Optional[bool] = ..., rate: _Optional[int] = ..., local: _Optional[bool] = ...) -> None: ...

class DlqResendResponse(_message.Message):
    __slots__ = ("resent", "skipped", "skipped_count", "unknown", "unreachable")
    RESENT_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_COUNT_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_FIELD_NUMBER: _ClassVar[int]
    UNREACHABLE_FIELD_NUMBER: _ClassVar[int]
    resent: int
    skipped: _containers.RepeatedScalarFieldContainer[str]
    skipped_count: int
    unknown: _containers.RepeatedScalarFieldContainer[str]
    unreachable: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, resent: _Optional[int] = ..., skipped: _Optional[_Iterable[str]] = ..., skipped_count: _Optional[int] = ..., unknown: _Optional[_Iterable[str]] = ..., unreachable: _Optional[_Iterable[str]] = ...) -> None: ...

class DlqPurgeRequest(_message.Message):
    __slots__ = ("group", "before_ms", "local")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    BEFORE_MS_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    group: str
    before_ms: int
    local: bool
    def __init__(self, group: _Optional[str] = ..., before_ms: _Optional[int] = ..., local: _Optional[bool] = ...) -> None: ...

class DlqPurgeResponse(_message.Message):
    __slots__ = ("purged", "unreachable")
    PURGED_FIELD_NUMBER: _ClassVar[int]
    UNREACHABLE_FIELD_NUMBER: _ClassVar[int]
    purged: int
    unreachable: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, purged: _Optional[int] = ..., unreachable: _Optional[_Iterable[str]] = ...) -> None: ...

class ResetOffsetRequest(_message.Message):
    __slots__ = ("group", "topic", "to", "timestamp_ms", "local")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    group: str
    topic: str
    to: str
    timestamp_ms: int
    local: bool
    def __init__(self, group: _Optional[str] = ..., topic: _Optional[str] = ..., to: _Optional[str] = ..., timestamp_ms: _Optional[int] = ..., local: _Optional[bool] = ...) -> None: ...

class UpdateGroupRequest(_message.Message):
    __slots__ = ("name", "max_attempts", "fifo", "consume_mode", "local")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    FIFO_FIELD_NUMBER: _ClassVar[int]
    CONSUME_MODE_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_attempts: int
    fifo: bool
    consume_mode: str
    local: bool
    def __init__(self, name: _Optional[str] = ..., max_attempts: _Optional[int] = ..., fifo: _Optional[bool] = ..., consume_mode: _Optional[str] = ..., local: _Optional[bool] = ...) -> None: ...

class DeleteGroupRequest(_message.Message):
    __slots__ = ("name", "force", "local")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    force: bool
    local: bool
    def __init__(self, name: _Optional[str] = ..., force: _Optional[bool] = ..., local: _Optional[bool] = ...) -> None: ...

class DeleteGroupResponse(_message.Message):
    __slots__ = ("unreachable",)
    UNREACHABLE_FIELD_NUMBER: _ClassVar[int]
    unreachable: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, unreachable: _Optional[_Iterable[str]] = ...) -> None: ...

class UpdateTopicRequest(_message.Message):
    __slots__ = ("name", "queue_count", "perm", "local")
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUEUE_COUNT_FIELD_NUMBER: _ClassVar[int]
    PERM_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    queue_count: int
    perm: str
    local: bool
    def __init__(self, name: _Optional[str] = ..., queue_count: _Optional[int] = ..., perm: _Optional[str] = ..., local: _Optional[bool] = ...) -> None: ...

class ListClientsRequest(_message.Message):
    __slots__ = ("group", "topic", "local")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    group: str
    topic: str
    local: bool
    def __init__(self, group: _Optional[str] = ..., topic: _Optional[str] = ..., local: _Optional[bool] = ...) -> None: ...

class ClientInfo(_message.Message):
    __slots__ = ("client_id", "kind", "group", "topics", "language", "version", "address", "broker", "idle_s")
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    BROKER_FIELD_NUMBER: _ClassVar[int]
    IDLE_S_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    kind: str
    group: str
    topics: _containers.RepeatedScalarFieldContainer[str]
    language: str
    version: str
    address: str
    broker: str
    idle_s: float
    def __init__(self, client_id: _Optional[str] = ..., kind: _Optional[str] = ..., group: _Optional[str] = ..., topics: _Optional[_Iterable[str]] = ..., language: _Optional[str] = ..., version: _Optional[str] = ..., address: _Optional[str] = ..., broker: _Optional[str] = ..., idle_s: _Optional[float] = ...) -> None: ...

class ListClientsResponse(_message.Message):
    __slots__ = ("clients", "unreachable", "more")
    CLIENTS_FIELD_NUMBER: _ClassVar[int]
    UNREACHABLE_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    clients: _containers.RepeatedCompositeFieldContainer[ClientInfo]
    unreachable: _containers.RepeatedScalarFieldContainer[str]
    more: bool
    def __init__(self, clients: _Optional[_Iterable[_Union[ClientInfo, _Mapping]]] = ..., unreachable: _Optional[_Iterable[str]] = ..., more: _Optional[bool] = ...) -> None: ...

class GetConfigRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ConfigEntry(_message.Message):
    __slots__ = ("name", "value", "secret")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    secret: bool
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., secret: _Optional[bool] = ...) -> None: ...

class BrokerConfig(_message.Message):
    __slots__ = ("broker", "settings")
    BROKER_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    broker: str
    settings: _containers.RepeatedCompositeFieldContainer[ConfigEntry]
    def __init__(self, broker: _Optional[str] = ..., settings: _Optional[_Iterable[_Union[ConfigEntry, _Mapping]]] = ...) -> None: ...
