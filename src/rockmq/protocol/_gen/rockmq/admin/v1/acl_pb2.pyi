from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AclEntry(_message.Message):
    __slots__ = ("user", "resource", "actions", "source_ips", "decision", "local")
    USER_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_IPS_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    user: str
    resource: str
    actions: _containers.RepeatedScalarFieldContainer[str]
    source_ips: _containers.RepeatedScalarFieldContainer[str]
    decision: str
    local: bool
    def __init__(self, user: _Optional[str] = ..., resource: _Optional[str] = ..., actions: _Optional[_Iterable[str]] = ..., source_ips: _Optional[_Iterable[str]] = ..., decision: _Optional[str] = ..., local: _Optional[bool] = ...) -> None: ...

class GrantAclResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RevokeAclRequest(_message.Message):
    __slots__ = ("user", "resource", "local")
    USER_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    user: str
    resource: str
    local: bool
    def __init__(self, user: _Optional[str] = ..., resource: _Optional[str] = ..., local: _Optional[bool] = ...) -> None: ...

class RevokeAclResponse(_message.Message):
    __slots__ = ("revoked",)
    REVOKED_FIELD_NUMBER: _ClassVar[int]
    revoked: AclEntry
    def __init__(self, revoked: _Optional[_Union[AclEntry, _Mapping]] = ...) -> None: ...

class ListAclsRequest(_message.Message):
    __slots__ = ("user",)
    USER_FIELD_NUMBER: _ClassVar[int]
    user: str
    def __init__(self, user: _Optional[str] = ...) -> None: ...

class ListAclsResponse(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[AclEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[AclEntry, _Mapping]]] = ...) -> None: ...
