"""Reducers: a tile whose element updates from many threads combine, finalized once.

Two spellings, as in TileLang:
- `acc = T.alloc_reducer(shape, dtype, op="sum", replication="all")`, `T.clear(acc)` (or any
  fill), updates `acc[i] += x` inside `T.Parallel`, then `T.finalize_reducer(acc)`: after it,
  `acc` holds the combined result (in place);
- `acc = T.alloc_reducer(shape, dtype, op="sum")`, `T.reducer_init(acc[, init])`,
  `T.reducer_update(acc[i], x)` inside `T.Parallel`, `T.finalize_reducer(acc, dst)`: the result
  goes to the fragment `dst` (combined once with `init` when given).
Meaning: every update between the start and the finalize contributes exactly once to its
element, whichever thread runs it. How: the reducer is a fragment that layout inference may
replicate over threads (each thread then accumulates its own partial, with no race); the
finalize combines the replicas (`tl.finalize_reducer`). On block-serial targets one thread
holds the whole tile and the finalize only copies.

IR: `tl.reducer_info(region, op)` right after the allocation marks the fragment as a reducer;
`tl.finalize_reducer(src_region, dst_region, op[, init])`.
"""
from __future__ import annotations

from typing import Any

from tvm import ir, tirx
from tvm.tirx.script.builder import ir as _tirx_builder

from tilelang_core.ir.constants import ACCESS_READ_WRITE, ACCESS_WRITE
from tilelang_core.ir.ops import make_call

from .allocate import alloc_buffer, alloc_fragment
from .regions import as_region, as_scalar, check_same_extents
from .tileops import _emit

__all__ = ["alloc_reducer", "finalize_reducer", "reducer_init", "reducer_update"]

# the reducer's combine: op -> reduction kind of the core (`tl.reduce`'s kinds)
REDUCER_OPS = ("sum", "max", "min", "bitand", "bitor", "bitxor")
_OPS: dict[int, str] = {}  # reducer buffer -> its op, while the kernel is built
_INITS: dict[int, Any] = {}  # reducer buffer -> the local buffer holding its init value (v2)


def _key(buffer) -> int:
    return buffer.__chandle__()


def alloc_reducer(shape: Any, dtype: Any, op: str = "sum", replication: str | None = None) -> Any:
    """A reducer of `shape` and `dtype` combining with `op` ("sum", "max", "min", "bitand",
    "bitor", "bitxor"). `replication` ("all" or "none", TileLang's older form) is accepted:
    how the reducer spreads over threads is layout inference's choice either way."""
    if op not in REDUCER_OPS:
        raise ValueError(f"T.alloc_reducer: op must be one of {', '.join(REDUCER_OPS)}, got {op!r}")
    if replication not in (None, "all", "none"):
        raise ValueError(f"T.alloc_reducer: replication must be 'all', 'none' or None, got {replication!r}")
    buffer = alloc_fragment(shape, dtype)
    if op.startswith("bit") and not str(buffer.dtype).startswith(("int", "uint", "bool")):
        raise ValueError(f"T.alloc_reducer: op {op!r} needs an integer dtype, got {buffer.dtype}")
    region = as_region(buffer, ACCESS_WRITE, "alloc_reducer", "reducer")
    _OPS[_key(region.buffer)] = op
    _emit(make_call("reducer_info", region.to_call(), op))
    return buffer


def reducer_init(reducer: Any, init: Any = None) -> Any:
    """Start the reducer's epoch: every element at the combine's identity. `init`, when
    given, is combined once into every result at the finalize (its value is taken here)."""
    from .tileops import fill
    from tilelang_core.transform.portable import reduce_init

    region = as_region(reducer, ACCESS_WRITE, "reducer_init", "reducer")
    op = _op_of(region.buffer)
    _emit(fill(reducer, reduce_init(op, str(region.dtype))))
    if init is not None:
        held = alloc_buffer((1,), region.dtype, "local")
        _tirx_builder.buffer_store(held, as_scalar(init, region.dtype), [0])
        _INITS[_key(region.buffer)] = held
    else:
        _INITS.pop(_key(region.buffer), None)
    return None


def reducer_update(target: Any, value: Any) -> Any:
    """Contribute `value` to the element `target` (`acc[i, j]`, inside `T.Parallel`)."""
    from tilelang_core.transform.portable import reduce_combine

    if not isinstance(target, ir.TensorLoad):
        raise TypeError(f"T.reducer_update: the first argument must be an element of the reducer, e.g. acc[i], "
                        f"got {type(target).__name__}")
    buffer = target.source
    op = _op_of(buffer)
    value = as_scalar(value, str(buffer.dtype))
    _tirx_builder.buffer_store(buffer, reduce_combine(op, target, value), list(target.indices))
    return None


def finalize_reducer(reducer: Any, dst: Any = None, batch: int = 1, annotations: dict | None = None) -> Any:
    """Combine the reducer's partials. Without `dst` the reducer holds the result; with
    `dst` (a fragment of the same shape) the result goes there. `batch` (TileLang: how many
    results share one batched cross-thread combine) and `annotations` are checked as for
    `T.reduce_*` and do not change the result."""
    from .tileops import _check_batch, _check_reduce_annotations

    src = as_region(reducer, ACCESS_READ_WRITE, "finalize_reducer", "reducer")
    _check_batch(batch, "finalize_reducer", src)
    _check_reduce_annotations(annotations, "finalize_reducer")
    op = _op_of(src.buffer)
    target = src if dst is None else as_region(dst, ACCESS_WRITE, "finalize_reducer", "destination")
    if dst is not None:
        check_same_extents(src, target, "finalize_reducer")
    args = [src.to_call(), target.to_call(), op]
    held = _INITS.get(_key(src.buffer)) if dst is not None else None
    if held is not None:
        args.append(tirx.BufferLoad(held, [0]))
    return _emit(make_call("finalize_reducer", *args))



def _op_of(buffer) -> str:
    op = _OPS.get(_key(buffer))
    if op is None:
        raise ValueError(f"{buffer.name} is not a reducer: allocate it with T.alloc_reducer(shape, dtype, op=...)")
    return op
