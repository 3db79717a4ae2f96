"""Allocations: on chip (`T.alloc_shared`, `T.alloc_fragment`, `T.alloc_local`, `T.alloc_var`)
and the per-call global workspace `T.alloc_global`."""
from __future__ import annotations

from typing import Any

from tvm import ir
from tvm.tirx.script.builder import ir as _builder

from tilelang_core.ir.constants import SCOPE_FRAGMENT, SCOPE_LOCAL, SCOPE_SHARED, SCOPE_VAR

from .dtypes import to_dtype
from .tensor import normalize_shape

__all__ = ["alloc_buffer", "alloc_fragment", "alloc_global", "alloc_local", "alloc_shared", "alloc_var"]


def _is_unit_shape(shape: tuple) -> bool:
    return len(shape) == 1 and isinstance(shape[0], (int, ir.Expr)) and _equals_one(shape[0])


def _equals_one(extent: Any) -> bool:
    value = getattr(extent, "value", extent)
    return isinstance(value, int) and value == 1


def alloc_buffer(shape: Any, dtype: Any = "float32", scope: str = "global") -> ir.Var:
    """An `AllocBuffer` of `shape` in `scope`, returning the buffer.

    A (1,)-shaped buffer outside "local" gets `layout=None`: with the default layout, TVM's
    printer writes it as a scalar declaration, which parses back in scope "local".
    """
    shape = normalize_shape(shape)
    layout = None if scope != SCOPE_LOCAL and _is_unit_shape(shape) else "default"
    return _builder.alloc_buffer(shape, str(to_dtype(dtype)), scope=scope, layout=layout)


def alloc_global(shape: Any, dtype: Any, scope: str = "global") -> ir.Var:
    """A global-memory buffer private to one call of the kernel: a workspace.

    Written before the first `with T.Kernel(...)`, it is allocated on each call (like an
    output of `out_idx`: in the array library and on the device of the tensor arguments, not
    zeroed) and is visible to every launch of the function, so one kernel can write partial
    results that the next one reads (split/combine decoding). Its shape may use the
    function's symbolic dims.
    """
    from .kernel import _kernel_stack

    if scope != "global":
        raise ValueError(f"T.alloc_global allocates in scope 'global', got scope={scope!r}; "
                         "use T.alloc_shared / T.alloc_fragment / T.alloc_local for on-chip buffers")
    if _kernel_stack():
        raise ValueError("T.alloc_global inside `with T.Kernel(...)`: a workspace belongs to the whole call; "
                         "declare it before the first `with T.Kernel(...)` of the function")
    return alloc_buffer(shape, dtype, scope)


def alloc_shared(shape: Any, dtype: Any, scope: str = SCOPE_SHARED) -> ir.Var:
    """A tile in shared memory, visible to every thread of the block."""
    return alloc_buffer(shape, dtype, scope)


def alloc_fragment(shape: Any, dtype: Any, scope: str = SCOPE_FRAGMENT) -> ir.Var:
    """A block-wide tile held in registers, split across the threads by layout inference."""
    return alloc_buffer(shape, dtype, scope)


def alloc_local(shape: Any, dtype: Any, scope: str = SCOPE_LOCAL) -> ir.Var:
    """Registers private to each thread."""
    return alloc_buffer(shape, dtype, scope)


def alloc_var(dtype: Any, init: Any = None, scope: str = SCOPE_VAR) -> Any:
    """One scalar per thread, used as a variable: `x = T.alloc_var("int32", init=0)`.

    The IR holds a (1,)-shaped buffer in "local.var" (and `x[0] = init` when `init` is
    given). In the kernel `x` reads as the scalar `x[0]`; `x = x + 1` and `x += 1` store to it.
    """
    if isinstance(init, str):  # TileLang's positional form alloc_var(dtype, scope)
        init, scope = None, init
    dtype = to_dtype(dtype)
    buffer = alloc_buffer((1,), dtype, scope)
    if init is not None:
        _builder.buffer_store(buffer, dtype(init), [0])
    return _builder.scalar_wrapper(buffer[0])
