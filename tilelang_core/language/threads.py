"""Thread-level primitives a kernel names itself: barriers, warp shuffles and votes, lane and
warp indices (TileLang's `T.sync_threads`, `T.shfl_sync`, `T.any_sync`, `T.get_lane_idx`, ...).

Each is a call of a `tl.*` builtin (`tilelang_core.codegen.builtins`) that every SIMT dialect
spells from its `intrinsic_formats` table (CUDA `__shfl_sync`, HIP `__shfl`, Metal
`simd_shuffle`, ...). A dialect without the instruction refuses the kernel at codegen, naming
the intrinsic; on the CPU target a block runs as one thread, so only the block barriers
(`T.sync_threads`) have a meaning there.

Warp-wide calls (shuffles, votes, `T.sync_warp`) need every lane of `mask` to reach them.
`T.sync_grid` is a barrier across the whole grid: the kernel is then launched cooperatively
(the grid must fit the device at once), which the runtime of a target with the
"cooperative_launch" feature does.
"""
from __future__ import annotations

from typing import Any

from tvm import ir, tirx

from tilelang_core.codegen import builtins

__all__ = [
    "activemask",
    "all_sync",
    "any_sync",
    "ballot",
    "ballot_sync",
    "get_lane_idx",
    "get_warp_group_idx",
    "get_warp_idx",
    "get_warp_idx_sync",
    "match_all_sync",
    "match_any_sync",
    "named_barrier_arrive",
    "shfl_down",
    "shfl_sync",
    "shfl_up",
    "shfl_xor",
    "shuffle_elect",
    "sync_global",
    "sync_grid",
    "sync_threads",
    "sync_warp",
    "syncthreads_and",
    "syncthreads_count",
    "syncthreads_or",
    "warp_reduce_bitand",
    "warp_reduce_bitor",
    "warp_reduce_max",
    "warp_reduce_min",
    "warp_reduce_sum",
]

FULL_MASK = 0xFFFFFFFF
_DEFAULT_WIDTH = 32  # TileLang's default shuffle width: a 32-lane warp


def _expr(value: Any, what: str, name: str) -> ir.Expr:
    if isinstance(value, bool):
        return tirx.const(int(value), "int32")
    if isinstance(value, int):
        return tirx.const(value, "int32")
    if isinstance(value, float):
        return tirx.const(value, "float32")
    if isinstance(value, ir.Expr):
        return value
    raise TypeError(f"T.{name}: {what} must be a number or an expression, got {type(value).__name__} {value!r}")


def _mask(mask: Any, name: str) -> ir.Expr:
    # a Python literal as uint32: int32 cannot hold 0xffffffff
    if isinstance(mask, int) and not isinstance(mask, bool):
        if not 0 <= mask <= FULL_MASK:
            raise ValueError(f"T.{name}: mask must be a 32-bit lane mask (0 to 0xffffffff), got {mask:#x}")
        return tirx.const(mask, "uint32")
    return _expr(mask, "mask", name)


def _predicate(predicate: Any, name: str) -> ir.Expr:
    value = _expr(predicate, "the predicate", name)
    if not (value.ty.dtype.startswith(("int", "uint", "bool"))):
        raise TypeError(f"T.{name} requires an integer or boolean predicate, got {value.ty.dtype} "
                        f"{value}; compare it first (x > 0)")
    return value


# -- barriers ---------------------------------------------------------------------------------

def sync_threads(barrier_id: Any = None, arrive_count: Any = None) -> ir.Call:
    """A barrier across the block (`__syncthreads()`); with `barrier_id` and `arrive_count`,
    across the `arrive_count` threads that call it with that named barrier (`bar.sync id, n`)."""
    if barrier_id is None and arrive_count is None:
        return builtins.sync_threads()
    if barrier_id is None or arrive_count is None:
        raise ValueError("T.sync_threads: give both barrier_id and arrive_count (a named barrier), or neither "
                         "(the whole block)")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (barrier_id, arrive_count)):
        raise TypeError(f"T.sync_threads: barrier_id and arrive_count must be int constants, got "
                        f"{barrier_id!r}, {arrive_count!r}")
    if not 0 <= barrier_id < 16 or arrive_count <= 0 or arrive_count % 32:
        raise ValueError(f"T.sync_threads: barrier_id must be 0..15 and arrive_count a positive multiple of 32, "
                         f"got {barrier_id}, {arrive_count}")
    return builtins.sync_group(barrier_id, arrive_count)


def named_barrier_arrive(barrier_id: Any, thread_count: Any) -> ir.Call:
    """Arrive at named barrier `barrier_id` of `thread_count` threads without waiting (`bar.arrive`);
    the waiting side calls `T.sync_threads(barrier_id, thread_count)`."""
    return builtins.intrinsic("void", "named_barrier_arrive", _expr(barrier_id, "barrier_id", "named_barrier_arrive"),
                              _expr(thread_count, "thread_count", "named_barrier_arrive"))


def sync_warp(mask: Any = FULL_MASK) -> ir.Call:
    """A barrier across the lanes of `mask` of this warp (`__syncwarp(mask)`)."""
    return builtins.intrinsic("void", "sync_warp", _mask(mask, "sync_warp"))


def sync_grid() -> ir.Call:
    """A barrier across every thread of the grid; the kernel is launched cooperatively."""
    return builtins.intrinsic("void", "sync_grid")


def sync_global() -> ir.Call:
    """TileLang's older spelling of the grid-wide barrier: `T.sync_grid()`."""
    return sync_grid()


def syncthreads_count(predicate: Any) -> ir.Call:
    """A block barrier that returns how many threads passed a non-zero `predicate`."""
    return builtins.intrinsic("int32", "syncthreads_count", _predicate(predicate, "syncthreads_count"))


def syncthreads_and(predicate: Any) -> ir.Call:
    """A block barrier that returns non-zero when every thread's `predicate` is non-zero."""
    return builtins.intrinsic("int32", "syncthreads_and", _predicate(predicate, "syncthreads_and"))


def syncthreads_or(predicate: Any) -> ir.Call:
    """A block barrier that returns non-zero when any thread's `predicate` is non-zero."""
    return builtins.intrinsic("int32", "syncthreads_or", _predicate(predicate, "syncthreads_or"))


# -- shuffles ---------------------------------------------------------------------------------

def _shuffle(name: str, op: str, value: Any, lane: Any, width: Any, mask: Any) -> ir.Call:
    value = _expr(value, "value", name)
    return builtins.intrinsic(str(value.ty.dtype), op, _mask(mask, name), value, _expr(lane, "the lane", name),
                              _expr(width, "width", name))


def shfl_sync(value: Any, srcLane: Any, width: Any = _DEFAULT_WIDTH, mask: Any = FULL_MASK) -> ir.Call:  # noqa: N803
    """`value` of lane `srcLane` of this lane's group of `width` lanes (`__shfl_sync`)."""
    return _shuffle("shfl_sync", "shfl_sync", value, srcLane, width, mask)


def shfl_xor(value: Any, delta: Any, width: Any = _DEFAULT_WIDTH, mask: Any = FULL_MASK) -> ir.Call:
    """`value` of lane `lane ^ delta` (`__shfl_xor_sync`)."""
    return _shuffle("shfl_xor", "shfl_xor_sync", value, delta, width, mask)


def shfl_up(value: Any, delta: Any, width: Any = _DEFAULT_WIDTH, mask: Any = FULL_MASK) -> ir.Call:
    """`value` of lane `lane - delta`; lanes below `delta` keep their own (`__shfl_up_sync`)."""
    return _shuffle("shfl_up", "shfl_up_sync", value, delta, width, mask)


def shfl_down(value: Any, delta: Any, width: Any = _DEFAULT_WIDTH, mask: Any = FULL_MASK) -> ir.Call:
    """`value` of lane `lane + delta`; lanes past the group keep their own (`__shfl_down_sync`)."""
    return _shuffle("shfl_down", "shfl_down_sync", value, delta, width, mask)


# -- votes ------------------------------------------------------------------------------------

def any_sync(predicate: Any, mask: Any = FULL_MASK) -> ir.Call:
    """int32, non-zero when any lane of `mask` has a non-zero `predicate` (`__any_sync`)."""
    return builtins.intrinsic("int32", "any_sync", _mask(mask, "any_sync"), _predicate(predicate, "any_sync"))


def all_sync(predicate: Any, mask: Any = FULL_MASK) -> ir.Call:
    """int32, non-zero when every lane of `mask` has a non-zero `predicate` (`__all_sync`)."""
    return builtins.intrinsic("int32", "all_sync", _mask(mask, "all_sync"), _predicate(predicate, "all_sync"))


def ballot_sync(predicate: Any, mask: Any = FULL_MASK) -> ir.Call:
    """uint64 with bit n set when lane n of `mask` has a non-zero `predicate` (`__ballot_sync`)."""
    return builtins.intrinsic("uint64", "ballot_sync", _mask(mask, "ballot_sync"),
                              _predicate(predicate, "ballot_sync"))


def ballot(predicate: Any) -> ir.Call:
    """`T.ballot_sync(predicate)` over the whole warp."""
    return builtins.intrinsic("uint64", "ballot", _predicate(predicate, "ballot"))


def activemask() -> ir.Call:
    """uint64 with a bit set for each lane that executes the call (`__activemask()`)."""
    return builtins.intrinsic("uint64", "activemask")


def match_any_sync(value: Any, mask: Any = FULL_MASK) -> ir.Call:
    """uint32 mask of the lanes of `mask` whose `value` equals this lane's (`__match_any_sync`)."""
    return builtins.intrinsic("uint32", "match_any_sync", _mask(mask, "match_any_sync"),
                              _expr(value, "value", "match_any_sync"))


def match_all_sync(value: Any, mask: Any = FULL_MASK) -> ir.Call:
    """`mask` when every lane of `mask` has the same `value`, else 0 (`__match_all_sync`)."""
    return builtins.intrinsic("uint32", "match_all_sync", _mask(mask, "match_all_sync"),
                              _expr(value, "value", "match_all_sync"))


# -- lane and warp indices --------------------------------------------------------------------

def _sized(name: str, *sizes: Any) -> list:
    return [_expr(s, "a size", name) for s in sizes if s is not None]


def get_lane_idx(warp_size: Any = None) -> ir.Call:
    """This thread's lane: the block-linear thread index % `warp_size` (default: the target's)."""
    return builtins.intrinsic("int32", "get_lane_idx", *_sized("get_lane_idx", warp_size))


def get_warp_idx(warp_size: Any = None) -> ir.Call:
    """This thread's warp: the block-linear thread index / `warp_size` (default: the target's)."""
    return builtins.intrinsic("int32", "get_warp_idx", *_sized("get_warp_idx", warp_size))


def get_warp_idx_sync(warp_size: Any = None) -> ir.Call:
    """`T.get_warp_idx`, for a converged warp (the same value here)."""
    return builtins.intrinsic("int32", "get_warp_idx_sync", *_sized("get_warp_idx_sync", warp_size))


def get_warp_group_idx(warp_size: Any = None, warps_per_group: Any = None) -> ir.Call:
    """This thread's warp group: the block-linear index / (`warp_size` * `warps_per_group`),
    by default the target's warp size and 4 warps (Hopper's warpgroup of 128 threads)."""
    if warps_per_group is not None and warp_size is None:
        raise ValueError("T.get_warp_group_idx: give warp_size when you give warps_per_group")
    if warp_size is None:
        return builtins.intrinsic("int32", "get_warp_group_idx")
    return builtins.intrinsic("int32", "get_warp_group_idx",
                              *_sized("get_warp_group_idx", warp_size, 4 if warps_per_group is None else warps_per_group))


def shuffle_elect(thread_extent: Any) -> ir.Call:
    """bool, true on exactly one thread of each group of `thread_extent` threads (0: one thread
    of the whole block)."""
    if isinstance(thread_extent, int) and thread_extent < 0:
        raise ValueError(f"T.shuffle_elect: thread_extent must be >= 0, got {thread_extent}")
    return builtins.intrinsic("bool", "shuffle_elect", _expr(thread_extent, "thread_extent", "shuffle_elect"))


# -- warp reductions --------------------------------------------------------------------------

def _warp_reduce(kind: str, value: Any, integers_only: bool = False) -> ir.Call:
    name = f"warp_reduce_{kind}"
    value = _expr(value, "value", name)
    dtype = str(value.ty.dtype)
    if integers_only and not dtype.startswith(("int", "uint")):
        raise TypeError(f"T.{name}: bitwise reductions take integers, got {dtype} {value}")
    return builtins.intrinsic(dtype, name, value)


def warp_reduce_sum(value: Any) -> ir.Call:
    """The sum of `value` over every lane of the warp, returned on every lane (a butterfly of
    shuffles; every lane must reach the call)."""
    return _warp_reduce("sum", value)


def warp_reduce_max(value: Any) -> ir.Call:
    """The maximum of `value` over the warp, on every lane."""
    return _warp_reduce("max", value)


def warp_reduce_min(value: Any) -> ir.Call:
    """The minimum of `value` over the warp, on every lane."""
    return _warp_reduce("min", value)


def warp_reduce_bitand(value: Any) -> ir.Call:
    """The bitwise and of the integer `value` over the warp, on every lane."""
    return _warp_reduce("bitand", value, integers_only=True)


def warp_reduce_bitor(value: Any) -> ir.Call:
    """The bitwise or of the integer `value` over the warp, on every lane."""
    return _warp_reduce("bitor", value, integers_only=True)
