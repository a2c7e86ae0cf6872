from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TopicQueues(_message.Message):
    __slots__ = ("topic", "queue_count", "message_types")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    QUEUE_COUNT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_TYPES_FIELD_NUMBER: _ClassVar[int]
    topic: str
    queue_count: int
    message_types: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, topic: _Optional[str] = ..., queue_count: _Optional[int] = ..., message_types: _Optional[_Iterable[str]] = ...) -> None: ...

class ReplicaInfo(_message.Message):
    __slots__ = ("endpoint", "lag_messages", "lag_seconds")
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    LAG_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    LAG_SECONDS_FIELD_NUMBER: _ClassVar[int]
    endpoint: str
    lag_messages: int
    lag_seconds: float
    def __init__(self, endpoint: _Optional[str] = ..., lag_messages: _Optional[int] = ..., lag_seconds: _Optional[float] = ...) -> None: ...

class BrokerInfo(_message.Message):
    __slots__ = ("name", "endpoint", "topics", "last_seen_ms", "tls", "plaintext_endpoint", "epoch", "epoch_proof", "successor", "replicas")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_MS_FIELD_NUMBER: _ClassVar[int]
    TLS_FIELD_NUMBER: _ClassVar[int]
    PLAINTEXT_ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    EPOCH_PROOF_FIELD_NUMBER: _ClassVar[int]
    SUCCESSOR_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    name: str
    endpoint: str
    topics: _containers.RepeatedCompositeFieldContainer[TopicQueues]
    last_seen_ms: int
    tls: bool
    plaintext_endpoint: str
    epoch: int
    epoch_proof: bytes
    successor: bytes
    replicas: _containers.RepeatedCompositeFieldContainer[ReplicaInfo]
    def __init__(self, name: _Optional[str] = ..., endpoint: _Optional[str] = ..., topics: _Optional[_Iterable[_Union[TopicQueues, _Mapping]]] = ..., last_seen_ms: _Optional[int] = ..., tls: _Optional[bool] = ..., plaintext_endpoint: _Optional[str] = ..., epoch: _Optional[int] = ..., epoch_proof: _Optional[bytes] = ..., successor: _Optional[bytes] = ..., replicas: _Optional[_Iterable[_Union[ReplicaInfo, _Mapping]]] = ...) -> None: ...

class RegisterRequest(_message.Message):
    __slots__ = ("broker",)
    BROKER_FIELD_NUMBER: _ClassVar[int]
    broker: BrokerInfo
    def __init__(self, broker: _Optional[_Union[BrokerInfo, _Mapping]] = ...) -> None: ...

class RegisterResponse(_message.Message):
    __slots__ = ("timeout_ms", "epoch", "epoch_proof")
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    EPOCH_PROOF_FIELD_NUMBER: _ClassVar[int]
    timeout_ms: int
    epoch: int
    epoch_proof: bytes
    def __init__(self, timeout_ms: _Optional[int] = ..., epoch: _Optional[int] = ..., epoch_proof: _Optional[bytes] = ...) -> None: ...

class UnregisterRequest(_message.Message):
    __slots__ = ("broker",)
    BROKER_FIELD_NUMBER: _ClassVar[int]
    broker: BrokerInfo
    def __init__(self, broker: _Optional[_Union[BrokerInfo, _Mapping]] = ...) -> None: ...

class UnregisterResponse(_message.Message):
    __slots__ = ("dropped",)
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    dropped: bool
    def __init__(self, dropped: _Optional[bool] = ...) -> None: ...

class ListBrokersRequest(_message.Message):
    __slots__ = ("topic",)
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    topic: str
    def __init__(self, topic: _Optional[str] = ...) -> None: ...

class ListBrokersResponse(_message.Message):
    __slots__ = ("brokers",)
    BROKERS_FIELD_NUMBER: _ClassVar[int]
    brokers: _containers.RepeatedCompositeFieldContainer[BrokerInfo]
    def __init__(self, brokers: _Optional[_Iterable[_Union[BrokerInfo, _Mapping]]] = ...) -> None: ...
