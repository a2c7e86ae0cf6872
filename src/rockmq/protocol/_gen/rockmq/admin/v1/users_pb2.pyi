from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class UserInfo(_message.Message):
    __slots__ = ("name", "super_user", "enabled")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUPER_USER_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    name: str
    super_user: bool
    enabled: bool
    def __init__(self, name: _Optional[str] = ..., super_user: _Optional[bool] = ..., enabled: _Optional[bool] = ...) -> None: ...

class CreateUserRequest(_message.Message):
    __slots__ = ("name", "secret", "super_user", "local")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    SUPER_USER_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    secret: str
    super_user: bool
    local: bool
    def __init__(self, name: _Optional[str] = ..., secret: _Optional[str] = ..., super_user: _Optional[bool] = ..., local: _Optional[bool] = ...) -> None: ...

class UpdateUserRequest(_message.Message):
    __slots__ = ("name", "secret", "enabled", "local")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    secret: str
    enabled: bool
    local: bool
    def __init__(self, name: _Optional[str] = ..., secret: _Optional[str] = ..., enabled: _Optional[bool] = ..., local: _Optional[bool] = ...) -> None: ...

class UserRequest(_message.Message):
    __slots__ = ("name", "local")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    local: bool
    def __init__(self, name: _Optional[str] = ..., local: _Optional[bool] = ...) -> None: ...

class DeleteUserResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListUsersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListUsersResponse(_message.Message):
    __slots__ = ("users",)
    USERS_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedCompositeFieldContainer[UserInfo]
    def __init__(self, users: _Optional[_Iterable[_Union[UserInfo, _Mapping]]] = ...) -> None: ...
