from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class FollowerState(_message.Message):
    __slots__ = ("applied_seq",)
    APPLIED_SEQ_FIELD_NUMBER: _ClassVar[int]
    applied_seq: int
    def __init__(self, applied_seq: _Optional[int] = ...) -> None: ...

class ReplicatedBatch(_message.Message):
    __slots__ = ("seq", "ops")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    OPS_FIELD_NUMBER: _ClassVar[int]
    seq: int
    ops: bytes
    def __init__(self, seq: _Optional[int] = ..., ops: _Optional[bytes] = ...) -> None: ...
