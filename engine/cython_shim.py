"""The names of Cython's ``cython`` module that the engine's compiled core uses, for the interpreter where Cython is not
installed (it is a build requirement, not a runtime one).

Each core module starts with ``try: import cython`` / ``except ImportError: from . import cython_shim as cython``.
Compiled, the annotations and decorators give the C types; interpreted, these stand-ins leave the code the plain
Python it reads as. Cython's own ``cython`` module (its ``Shadow``) does the same when Cython is installed.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, Callable

compiled = False


class _CType:
    """A C type's stand-in: ``T[::1]`` (a memoryview type) is ``T`` again, and ``T(x)`` converts like Python's
    ``int`` or ``float``."""

    def __init__(self, python_type: type) -> None:
        self.python_type = python_type

    def __getitem__(self, _: Any) -> "_CType":
        return self

    def __call__(self, value: Any = 0) -> Any:
        return self.python_type(value)


int = _CType(int)  # noqa: A001  (the names are Cython's)
uint = _CType(int)
short = _CType(int)
ushort = _CType(int)
char = _CType(int)
schar = _CType(int)
uchar = _CType(int)
longlong = _CType(int)
ulonglong = _CType(int)
Py_ssize_t = _CType(int)
bint = _CType(bool)
double = _CType(float)
float = _CType(float)  # noqa: A001


nogil = nullcontext()   # (releasing the interpreter's lock means nothing interpreted)


def typedef(t: Any) -> Any:
    return t


def declare(t: Any = None, value: Any = None, **_: Any) -> Any:
    return value


def cast(t: Any, value: Any) -> Any:
    """A cast to a number type converts as C does (a float to an int truncates towards zero); any other is the
    value itself."""
    return t(value) if isinstance(t, _CType) else value


def _identity(f: Callable) -> Callable:
    return f


cclass = cfunc = ccall = inline = final = _identity


def locals(**_: Any) -> Callable[[Callable], Callable]:  # noqa: A001
    return _identity


def returns(_: Any) -> Callable[[Callable], Callable]:
    return _identity


def exceptval(*_: Any, **__: Any) -> Callable[[Callable], Callable]:
    return _identity
