"""Thread groups and the barriers between them: `T.ws`, `T.alloc_barrier`, `T.barrier_wait`,
`T.barrier_arrive` (and TileLang's `T.mbarrier_*` spellings), `T.tma_copy`.

A warp-specialized kernel gives each group of threads its own code and lets the groups hand
tiles to each other through barriers the user places:

    bar = T.alloc_barrier(arrive_count=128)
    with T.ws(1):                          # the producer group
        T.tma_copy(A[by * bM, k * bK], A_shared, barrier=bar)
        T.barrier_arrive(bar)
    with T.ws(0):                          # the consumer group
        T.barrier_wait(bar, k % 2)
        T.gemm(A_shared, B_shared, C_local)

The size of a group is the target's (capability `thread_group_size`, 128 threads on NVIDIA
GPUs); a target without groups or without barriers refuses these at compile time.
"""
from __future__ import annotations

from typing import Any

from tvm import ir, tirx
from tvm.tirx import is_buffer_var
from tvm.tirx.script.builder import ir as _builder

from tilelang_core.ir.constants import ACCESS_READ, ACCESS_WRITE, ATTR_THREAD_GROUPS, SCOPE_BARRIER
from tilelang_core.ir.ops import make_call

from .allocate import alloc_buffer
from .regions import as_operand, as_region, check_same_extents, resolve_pair
from .tileops import _emit

__all__ = [
    "WarpSpecialize",
    "WarpSpecializeFrame",
    "alloc_barrier",
    "barrier_arrive",
    "barrier_wait",
    "mbarrier_arrive",
    "mbarrier_wait_parity",
    "tma_copy",
    "ws",
]


def ws(*group_ids: int):
    """`with T.ws(g, ...):` runs its body on the threads of groups `g, ...` only (consecutive
    group ids; a group is the target's `thread_group_size` threads, so on NVIDIA GPUs
    `T.ws(0)` is threads 0..127 and `T.ws(1)` threads 128..255). Tile ops and `T.Parallel`
    inside are spread over those threads."""
    from .kernel import _kernel_stack

    if not _kernel_stack():
        raise ValueError("T.ws is only valid inside `with T.Kernel(...)`")
    if not group_ids:
        raise ValueError("T.ws needs at least one group id, e.g. T.ws(0)")
    ids = []
    for g in group_ids:
        if isinstance(g, tirx.IntImm):
            g = int(g.value)
        if not isinstance(g, int) or isinstance(g, bool) or g < 0:
            raise TypeError(f"T.ws takes non-negative constant group ids, got {g!r}")
        ids.append(g)
    ids = sorted(set(ids))
    if ids != list(range(ids[0], ids[0] + len(ids))):
        raise ValueError(f"T.ws{tuple(group_ids)}: the groups must be consecutive (one range of threads); "
                         f"use one T.ws per group instead")
    return _builder.attr(len(ids), ATTR_THREAD_GROUPS, tirx.IntImm("int32", ids[0]))


WarpSpecialize = ws  # TileLang's long name of T.ws
WarpSpecializeFrame = type(_builder.attr(1, ATTR_THREAD_GROUPS, tirx.IntImm("int32", 0)))  # what T.ws returns


def alloc_barrier(arrive_count: int | list[int]) -> Any:
    """Barriers in shared memory (one per entry of `arrive_count`): a barrier's phase
    completes when `arrive_count` arrivals (and the copies tied to it) have happened.
    `T.alloc_barrier(128)` gives a buffer of one barrier, `T.alloc_barrier([128] * n)` of n;
    pass the buffer (its first barrier) or `bars[i]` to the barrier ops. They are initialised
    where this call stands, by one thread, before any thread goes on."""
    counts = list(arrive_count) if isinstance(arrive_count, (list, tuple)) else [arrive_count]
    if not counts:
        raise ValueError("T.alloc_barrier: arrive_count is an empty list; give at least one count")
    for c in counts:
        if not isinstance(c, int) or isinstance(c, bool) or c <= 0:
            raise ValueError(f"T.alloc_barrier: arrive counts must be positive ints, got {c!r}")
    buffer = alloc_buffer((len(counts),), "uint64", scope=SCOPE_BARRIER)
    _emit(make_call("init_barriers", as_region(buffer, ACCESS_WRITE, "alloc_barrier", "barriers").to_call(),
                    *counts))
    return buffer


def _barrier(mbarrier: Any, op: str) -> ir.TensorLoad:
    """One barrier: `bars[i]` as given, or a buffer's first barrier."""
    if isinstance(mbarrier, _builder.scalar_wrapper):
        mbarrier = mbarrier.scalar
    if is_buffer_var(mbarrier):
        if len(mbarrier.shape) != 1:
            raise ValueError(f"T.{op}: {mbarrier.name} is not a barrier buffer (shape {list(mbarrier.shape)})")
        mbarrier = tirx.BufferLoad(mbarrier, [tirx.IntImm("int32", 0)])
    if not isinstance(mbarrier, ir.TensorLoad) or mbarrier.source.scope() != SCOPE_BARRIER:
        raise TypeError(f"T.{op}: the barrier must come from T.alloc_barrier (a buffer or bars[i]), got {mbarrier}")
    return mbarrier


def _int(value: Any) -> Any:
    return tirx.IntImm("int32", value) if isinstance(value, int) else value


def barrier_wait(mbarrier: Any, parity: Any):
    """Wait until the phase of the barrier with this parity (0 or 1) has completed. A fresh
    barrier is in phase 0, so waiting for parity 1 returns at once (the phase before it)."""
    return _emit(make_call("barrier_wait", _barrier(mbarrier, "barrier_wait"), _int(parity)))


def barrier_arrive(mbarrier: Any):
    """Every thread that runs this arrives once on the barrier."""
    return _emit(make_call("barrier_arrive", _barrier(mbarrier, "barrier_arrive")))


def mbarrier_wait_parity(mbarrier: Any, parity: Any):
    """TileLang's spelling of `T.barrier_wait`."""
    return _emit(make_call("barrier_wait", _barrier(mbarrier, "mbarrier_wait_parity"), _int(parity)))


def mbarrier_arrive(mbarrier: Any, cta_id: Any = None):
    """TileLang's spelling of `T.barrier_arrive` (`cta_id`, for cluster barriers, is not
    supported)."""
    if cta_id is not None:
        raise NotImplementedError("T.mbarrier_arrive(cta_id=...): cluster barriers are not supported; "
                                  "leave cta_id out to arrive on this block's barrier")
    return _emit(make_call("barrier_arrive", _barrier(mbarrier, "mbarrier_arrive")))


def tma_copy(src: Any, dst: Any, *, barrier: Any = None, cluster_mask: Any = None,
             leader_scope_threads: Any = None, eviction_policy: str | None = None,
             annotations: dict | None = None):
    """A global -> shared tile load that completes asynchronously: the barrier's current
    phase does not complete before the tile has landed, so a thread that waits on it (after
    the loading threads arrived with `T.barrier_arrive`) reads the whole tile. The threads
    that run the call share the load. The synchronization is the user's: no barrier is added
    around it. A point on one side (`A[i, j]`) takes the other side's shape, as in `T.copy`.
    Stores (shared -> global), `cluster_mask` and `leader_scope_threads` are not supported."""
    if barrier is None:
        raise ValueError("T.tma_copy: a load needs barrier= (a barrier from T.alloc_barrier) to signal on")
    if cluster_mask is not None or leader_scope_threads is not None:
        raise NotImplementedError("T.tma_copy: cluster_mask= and leader_scope_threads= are not supported; "
                                  "leave them out")
    if eviction_policy not in (None, "evict_normal", "evict_first", "evict_last"):
        raise ValueError(f"T.tma_copy: eviction_policy must be evict_normal, evict_first or evict_last, "
                         f"got {eviction_policy!r}")
    if annotations is not None and not isinstance(annotations, dict):
        raise TypeError(f"T.tma_copy: annotations must be a dict, got {type(annotations).__name__}")
    src_operand = as_operand(src, ACCESS_READ, "tma_copy", "source")
    dst_operand = as_operand(dst, ACCESS_WRITE, "tma_copy", "destination")
    src_region, dst_region = resolve_pair(src_operand, dst_operand, "tma_copy", ("source", "destination"))
    check_same_extents(src_region, dst_region, "tma_copy")
    if src_region.buffer.scope() != "global" or not dst_region.buffer.scope().startswith("shared"):
        raise NotImplementedError(
            f"T.tma_copy copies global -> shared memory only; got {src_region.buffer.name} "
            f"({src_region.buffer.scope()}) -> {dst_region.buffer.name} ({dst_region.buffer.scope()}); "
            f"use T.copy for other directions")
    return _emit(make_call("tma_copy", src_region.to_call(), dst_region.to_call(), _barrier(barrier, "tma_copy")))
