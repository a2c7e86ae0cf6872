# What rockmq's data path uses of Cython's pure-Python mode (`import cython`), typed: Cython 3 ships
# no stubs for this module. C integer types read as the Python int they convert to.
import builtins
from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")

compiled: bool

int: TypeAlias = builtins.int
uint: TypeAlias = builtins.int
long: TypeAlias = builtins.int
longlong: TypeAlias = builtins.int
ulonglong: TypeAlias = builtins.int
Py_ssize_t: TypeAlias = builtins.int
size_t: TypeAlias = builtins.int
uchar: TypeAlias = builtins.int
bint: TypeAlias = builtins.bool
double: TypeAlias = builtins.float

def cfunc(f: _F) -> _F: ...
def ccall(f: _F) -> _F: ...
def inline(f: _F) -> _F: ...
def final(f: _F) -> _F: ...
def locals(**types: Any) -> Callable[[_F], _F]: ...
def exceptval(value: Any = ..., *, check: builtins.bool = ...) -> Callable[[_F], _F]: ...
def returns(t: Any) -> Callable[[_F], _F]: ...
def cast(t: type[_T], value: Any, typecheck: builtins.bool = ...) -> _T: ...
void: TypeAlias = None

def cclass(c: _T) -> _T: ...
def declare(t: type[_T], value: Any = ..., **kwds: Any) -> _T: ...
