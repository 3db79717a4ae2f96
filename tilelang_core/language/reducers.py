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

from tvm.script.ir_builder import IRBuilder

from .allocate import alloc_buffer, alloc_fragment
from .loops import inside_parallel
from .parse_checks import STORE_CHECKS
from .regions import as_region, as_scalar, check_same_extents
from .tileops import _emit

__all__ = ["alloc_reducer", "finalize_reducer", "reducer_init", "reducer_update"]

# the reducer's combine: op -> reduction kind of the core (`tl.reduce`'s kinds)
REDUCER_OPS = ("sum", "max", "min", "bitand", "bitor", "bitxor")
_OPS: dict[int, str] = {}  # reducer buffer -> its op, while the kernel is built
_INITS: dict[int, Any] = {}  # reducer buffer -> the local buffer holding its init value (v2)
# reducer buffer -> (its name, the builder frames open at its T.reducer_init): the epochs
# of the v2 spelling that are open, each to be closed by a T.finalize_reducer in that scope
_EPOCHS: dict[int, tuple[str, tuple[int, ...]]] = {}


def _scope() -> tuple[int, ...]:
    """The loops open here, innermost last (an epoch spans no loop boundary; a condition
    between T.reducer_init and its finalize is allowed)."""
    from tvm.tirx.script.builder.frame import ForFrame

    return tuple(frame.__chandle__() for frame in IRBuilder.current().frames if isinstance(frame, ForFrame))


def _refuse_plain_store(buffer: Any) -> None:
    """A store the kernel's source writes into a reducer whose v2 epoch is open."""
    epoch = _EPOCHS.get(_key(buffer))
    if epoch is not None:
        raise ValueError(f"illegal store to reducer {epoch[0]} between T.reducer_init and T.finalize_reducer: "
                         f"update it with T.reducer_update({epoch[0]}[i], value) inside T.Parallel")


STORE_CHECKS.append(_refuse_plain_store)


def close_epochs(check: bool = True) -> None:
    """At the start and the end of a kernel: forget the epochs; at the end (`check`), every
    T.reducer_init must have been finalized (else a ValueError naming the reducer)."""
    open_names = [name for name, _ in _EPOCHS.values()]
    _EPOCHS.clear()
    if check and open_names:
        raise ValueError(f"T.reducer_init of {', '.join(open_names)} never finalized: close the epoch with "
                         f"T.finalize_reducer(reducer, dst) in the scope of its T.reducer_init")


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
    name = region.buffer.name
    if _key(region.buffer) in _EPOCHS:
        raise ValueError(f"double T.reducer_init of {name}: its epoch is open; T.finalize_reducer({name}, dst) "
                         f"closes it before the next T.reducer_init")
    if isinstance(init, ir.Expr) and str(init.ty.dtype) != str(region.dtype):
        raise ValueError(f"T.reducer_init: the init value's dtype {init.ty.dtype} does not match reducer {name} "
                         f"({region.dtype}); give a Python number or T.cast(value, \"{region.dtype}\")")
    _emit(fill(reducer, reduce_init(op, str(region.dtype))))
    _EPOCHS[_key(region.buffer)] = (name, _scope())
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
    if _key(buffer) not in _EPOCHS:
        raise ValueError(f"T.reducer_update of {buffer.name} before T.reducer_init({buffer.name}): open the "
                         f"reducer's epoch first (T.clear is the older spelling's, with acc[i] += x)")
    if not inside_parallel():
        raise ValueError(f"T.reducer_update of {buffer.name} outside any T.Parallel: every thread would add the "
                         f"value once; update a reducer from the iterations of a T.Parallel nest")
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
    epoch = _EPOCHS.pop(_key(src.buffer), None)
    if epoch is not None and epoch[1] != _scope():
        raise ValueError(f"T.finalize_reducer of {src.buffer.name} is not in the scope of its T.reducer_init: "
                         f"finalize in the loop body (or outside every loop) where the epoch was opened")
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
