from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FollowerState(_message.Message):
    __slots__ = ("applied_seq", "epoch", "epoch_proof", "truncate")
    APPLIED_SEQ_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    EPOCH_PROOF_FIELD_NUMBER: _ClassVar[int]
    TRUNCATE_FIELD_NUMBER: _ClassVar[int]
    applied_seq: int
    epoch: int
    epoch_proof: bytes
    truncate: bytes
    def __init__(self, applied_seq: _Optional[int] = ..., epoch: _Optional[int] = ..., epoch_proof: _Optional[bytes] = ..., truncate: _Optional[bytes] = ...) -> None: ...

class ReplicatedBatch(_message.Message):
    __slots__ = ("seq", "ops", "catch_up", "head", "principals")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    OPS_FIELD_NUMBER: _ClassVar[int]
    CATCH_UP_FIELD_NUMBER: _ClassVar[int]
    HEAD_FIELD_NUMBER: _ClassVar[int]
    PRINCIPALS_FIELD_NUMBER: _ClassVar[int]
    seq: int
    ops: bytes
    catch_up: bool
    head: int
    principals: Principals
    def __init__(self, seq: _Optional[int] = ..., ops: _Optional[bytes] = ..., catch_up: _Optional[bool] = ..., head: _Optional[int] = ..., principals: _Optional[_Union[Principals, _Mapping]] = ...) -> None: ...

class Principals(_message.Message):
    __slots__ = ("users", "acls")
    USERS_FIELD_NUMBER: _ClassVar[int]
    ACLS_FIELD_NUMBER: _ClassVar[int]
    users: bytes
    acls: bytes
    def __init__(self, users: _Optional[bytes] = ..., acls: _Optional[bytes] = ...) -> None: ...

class SnapshotRequest(_message.Message):
    __slots__ = ("applied_seq",)
    APPLIED_SEQ_FIELD_NUMBER: _ClassVar[int]
    applied_seq: int
    def __init__(self, applied_seq: _Optional[int] = ...) -> None: ...

class SnapshotFile(_message.Message):
    __slots__ = ("name", "size")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    name: str
    size: int
    def __init__(self, name: _Optional[str] = ..., size: _Optional[int] = ...) -> None: ...

class SnapshotHeader(_message.Message):
    __slots__ = ("files", "total_bytes")
    FILES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[SnapshotFile]
    total_bytes: int
    def __init__(self, files: _Optional[_Iterable[_Union[SnapshotFile, _Mapping]]] = ..., total_bytes: _Optional[int] = ...) -> None: ...

class FileChunk(_message.Message):
    __slots__ = ("name", "data")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    name: str
    data: bytes
    def __init__(self, name: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class SnapshotChunk(_message.Message):
    __slots__ = ("header", "chunk")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    header: SnapshotHeader
    chunk: FileChunk
    def __init__(self, header: _Optional[_Union[SnapshotHeader, _Mapping]] = ..., chunk: _Optional[_Union[FileChunk, _Mapping]] = ...) -> None: ...
