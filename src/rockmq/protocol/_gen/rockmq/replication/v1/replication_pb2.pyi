from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FollowerState(_message.Message):
    __slots__ = ("applied_seq", "epoch", "epoch_proof")
    APPLIED_SEQ_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    EPOCH_PROOF_FIELD_NUMBER: _ClassVar[int]
    applied_seq: int
    epoch: int
    epoch_proof: bytes
    def __init__(self, applied_seq: _Optional[int] = ..., epoch: _Optional[int] = ..., epoch_proof: _Optional[bytes] = ...) -> None: ...

class ReplicatedBatch(_message.Message):
    __slots__ = ("seq", "ops", "principals")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    OPS_FIELD_NUMBER: _ClassVar[int]
    PRINCIPALS_FIELD_NUMBER: _ClassVar[int]
    seq: int
    ops: bytes
    principals: Principals
    def __init__(self, seq: _Optional[int] = ..., ops: _Optional[bytes] = ..., principals: _Optional[_Union[Principals, _Mapping]] = ...) -> None: ...

class Principals(_message.Message):
    __slots__ = ("users", "acls")
    USERS_FIELD_NUMBER: _ClassVar[int]
    ACLS_FIELD_NUMBER: _ClassVar[int]
    users: bytes
    acls: bytes
    def __init__(self, users: _Optional[bytes] = ..., acls: _Optional[bytes] = ...) -> None: ...
