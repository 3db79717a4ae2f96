"""The eager style's declarations: `T.const` and `T.empty`.

In an eager `@tilelang.jit` function the kernel's signature is written in its body:

    M, N = T.const("M, N")          # shape constants: each distinct value is its own kernel
    A: T.Tensor((M, N), T.float16)  # a parameter becomes a tensor by annotation
    B = T.empty((M, N), T.float16)  # an output, allocated per call and returned
    with T.Kernel(...): ...
    return B

`T.const` answers from the declaration context the JIT sets while it specializes the function
(`tilelang_core.jit.eager`): first symbolic vars (to learn which tensor dims they name), then
the values those dims have. `T.empty` is only read by the JIT, at the top level of the body;
anywhere else it is an error saying so.
"""
from __future__ import annotations

import re
import threading
from typing import Any

import tvm

from .dtypes import to_dtype

__all__ = ["PrimFunc", "annotate_compile_flags", "annotate_pass_configs", "const", "empty"]

# the function attributes `tilelang_core.compile` merges into its pass configs and compile flags
ATTR_PASS_CONFIGS = "tilelang.pass_configs"
ATTR_COMPILE_FLAGS = "tilelang.compile_flags"

PrimFunc = tvm.tirx.PrimFunc  # TileLang's name of a parsed kernel's class (annotations, isinstance)

_STATE = threading.local()


class EagerDeclarationError(RuntimeError):
    """`T.const` / `T.empty` used outside an eager `@tilelang.jit` function body."""


def split_names(spec: str) -> list[str]:
    """`"M, N K"` -> `["M", "N", "K"]` (commas and/or spaces separate the names)."""
    names = [n for n in re.split(r"[\s,]+", spec.strip()) if n]
    bad = [n for n in names if not n.isidentifier()]
    if not names or bad:
        raise ValueError(f"T.const({spec!r}): expected names separated by commas or spaces, e.g. T.const(\"M, N\")")
    return names


class ConstScope:
    """What `T.const` returns while the JIT runs a function's prologue.

    `values` maps a name to its value (an int, or a `tirx.Var` while the JIT is still learning
    which dims the name stands for); names not in `values` get a fresh symbolic var, recorded in
    `declared` in declaration order.
    """

    def __init__(self, values: dict[str, Any] | None = None, fresh: Any = None) -> None:
        """`fresh(name, dtype, index)`, when given, makes the value of a name not in `values`
        (the index-th so made) instead of a symbolic var."""
        self.values = dict(values or {})
        self.declared: dict[str, Any] = {}
        self.fresh = fresh
        self._made = 0

    def lookup(self, name: str, dtype: str) -> Any:
        if name not in self.values:
            if self.fresh is not None:
                self.values[name] = self.fresh(name, dtype, self._made)
                self._made += 1
            else:
                self.values[name] = tvm.tirx.Var(name, str(to_dtype(dtype)))
        self.declared[name] = self.values[name]
        return self.values[name]

    def __enter__(self) -> "ConstScope":
        stack = getattr(_STATE, "stack", None)
        if stack is None:
            stack = _STATE.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _STATE.stack.pop()


def const(names: str, dtype: str = "int32") -> Any:
    """`M, N = T.const("M, N")`: shape constants of an eager `@tilelang.jit` function.

    Their values come from `.compile(M=...)` keywords or from the shapes of the tensors whose
    annotations use them directly; each distinct set of values compiles its own kernel. One
    name returns one value, several return a tuple. For a dim that stays symbolic in one kernel,
    use `T.dynamic`.
    """
    stack = getattr(_STATE, "stack", None)
    if not stack:
        raise EagerDeclarationError(
            "T.const() declares the shape constants of an eager @tilelang.jit function and is "
            "only valid at the top of such a function's body; in a T.prim_func use T.dynamic() or "
            "a Python value")
    split = split_names(names)
    values = tuple(stack[-1].lookup(n, dtype) for n in split)
    return values[0] if len(values) == 1 else values


def empty(shape: Any, dtype: Any = "float32") -> Any:
    """`C = T.empty((M, N), dtype)`: an output of an eager `@tilelang.jit` function.

    The JIT reads this statement from the body (it must be `name = T.empty(shape, dtype)` at
    the top level, before the first `with`): the output becomes a kernel parameter allocated on
    each call and returned when the function returns it.
    """
    raise EagerDeclarationError(
        "T.empty(shape, dtype) declares an output of an eager @tilelang.jit function; write it as "
        "`C = T.empty(...)` at the top level of the function body (before `with T.Kernel`), and "
        "`return C`")


def annotate_pass_configs(configs: dict) -> None:
    """Pass configs of this kernel, written in its body (`T.annotate_pass_configs({"tl.disable_tma_lower":
    True})`): `compile` merges them under the ones its caller passes (the caller's win)."""
    if not isinstance(configs, dict) or not all(isinstance(k, str) for k in configs):
        raise TypeError(f"T.annotate_pass_configs: expects a dict of config names to values, got {configs!r}")
    for key, value in configs.items():
        if not isinstance(value, (bool, int, float, str)):
            raise TypeError(f"T.annotate_pass_configs: the value of {key!r} must be a bool, int, float or str, "
                            f"got {type(value).__name__}")
    from tilelang_core.ir.func_attrs import set_func_attr

    set_func_attr(ATTR_PASS_CONFIGS, {k: (int(v) if isinstance(v, bool) else v) for k, v in configs.items()})


def annotate_compile_flags(flags) -> None:
    """Device-compiler flags of this kernel, written in its body: `compile` adds them after
    the `compile_flags` its caller passes."""
    flags = [flags] if isinstance(flags, str) else list(flags)
    if not all(isinstance(f, str) for f in flags):
        raise TypeError(f"T.annotate_compile_flags: expects a str or a list of str, got {flags!r}")
    from tilelang_core.ir.func_attrs import set_func_attr

    set_func_attr(ATTR_COMPILE_FLAGS, flags)
