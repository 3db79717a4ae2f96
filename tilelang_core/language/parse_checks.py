"""Checks and advice while a kernel is parsed (by `T.prim_func`).

- `checked_stores()`: while it is open, a Python float constant stored into an integer
  buffer (`A_int[i] = 1.5`, `x = 2.5` into an integer `T.alloc_var`) is an error at its line.
  TVMScript would convert it to the buffer's dtype on its own (1.5 -> 1), and the result is a
  plain integer constant that no later pass can tell from one the user wrote. Integral
  constants (`A_int[i] = 0.0`) pass. Expressions are left to the `check` pass, which sees the
  parser's implicit cast (see `transform/check_values.py`).
- `hint_for(message)`: advice appended to a parse error that Python raised because a
  function of numbers (`math.sqrt`, `np.exp`, `max`, `int`) met a symbolic kernel value, or
  because a constant past the int32 range met an int32 index.
"""
from __future__ import annotations

import contextlib
import linecache
import re
import sys
import threading

from tvm.tirx.script import builder as _builder

__all__ = ["checked_stores", "hint_for", "STORE_CHECKS"]

_ACTIVE = threading.local()
_ORIGINAL_STORE = _builder.buffer_store

# functions (buffer) -> None called on every store a kernel's source writes (`A[i] = x`,
# `A[i] += x`) while it is parsed; one raises to refuse the store (e.g. `reducers`: a reducer
# updated only through T.reducer_update)
STORE_CHECKS: list = []


def _store(buffer, value, indices, *args, **kwargs):
    """TVMScript's `buffer_store`, refusing a non-integral float constant into an integer
    buffer while a kernel of ours is parsed, and what `STORE_CHECKS` refuse."""
    if getattr(_ACTIVE, "depth", 0):
        for check in STORE_CHECKS:
            check(buffer)
    if getattr(_ACTIVE, "depth", 0) and isinstance(value, float) and not value.is_integer():
        dtype = str(buffer.dtype)
        if dtype.startswith(("int", "uint")):
            raise ValueError(
                f"the float constant {value!r} stored into {buffer.name} ({dtype}) would be truncated to "
                f"{int(value)}; write the integer you mean (e.g. {round(value)}), or store into a float buffer")
    return _ORIGINAL_STORE(buffer, value, indices, *args, **kwargs)


@contextlib.contextmanager
def checked_stores():
    """Refuse lossy float constants in stores while the block runs (this thread only)."""
    # TVMScript's parser calls `builder.buffer_store` through the module: one wrapper,
    # installed once, that acts only while a parse of ours is open on this thread
    if _builder.buffer_store is not _store:
        _builder.buffer_store = _store
    _ACTIVE.depth = getattr(_ACTIVE, "depth", 0) + 1
    try:
        yield
    finally:
        _ACTIVE.depth -= 1


def hint_for(message: str) -> str:
    """Advice for a parse error `message`, or ""."""
    return _python_math_hint(message) + _int32_literal_hint(message)


# Errors Python raises when a function of numbers meets a symbolic kernel value.
_NOT_A_NUMBER = ("real number", "ufunc", "__round__", "bad operand type", "operator to Expr")
_MODULE_CALL = re.compile(r"\b(math|cmath|np|numpy|torch)\.(\w+)\s*\(")
_BUILTIN_CALL = re.compile(r"(?<![\w.])(max|min|abs|round|float|int)\s*\(")
_T_NAMES = {"maximum": "max", "minimum": "min", "fabs": "abs", "absolute": "abs", "power": "pow", "fmax": "max",
            "fmin": "min", "float": 'Cast("float32", ...)', "int": 'Cast("int32", ...)'}


def _python_math_hint(message: str) -> str:
    """Advice for a Python or NumPy math call given a kernel value (`math.sqrt(A[i])`): such
    functions compute on numbers while the kernel is parsed; `T.sqrt` builds the kernel's
    operation. "" when the error is something else."""
    where = re.search(r"--> (.+):(\d+):\d+", message)
    if where is None or not any(words in message for words in _NOT_A_NUMBER):
        return ""
    line = linecache.getline(where.group(1), int(where.group(2)))
    names = vars(sys.modules[__package__])  # the T namespace

    for found in list(_MODULE_CALL.finditer(line)) + list(_BUILTIN_CALL.finditer(line)):
        called = found.group(0).rstrip("( ").strip()
        name = _T_NAMES.get(found.group(found.lastindex), found.group(found.lastindex))
        if name.split("(")[0] in names:
            return (f"\nhint: {called}(...) computes on Python numbers while the kernel is parsed, and kernel values "
                    f"(tensor elements, loop and thread indices) are symbolic; use T.{name if '(' in name else name + '(...)'}"
                    " to compute it in the kernel")
    return ""


def _int32_literal_hint(message: str) -> str:
    """Advice for a constant past the int32 range meeting an int32 kernel value (loop and
    thread indices are int32): the index of a static dimension past 2**31 - 1 is computed in
    64 bits once one operand is."""
    if "exceeds range of int32" not in message:
        return ""
    return ("\nhint: loop and thread indices are int32, so a constant past 2**31 - 1 cannot meet them; "
            "compute that expression in 64 bits, e.g. T.Cast(\"int64\", bx) * 1024 + i < N or T.int64(N - 1024) + i")
