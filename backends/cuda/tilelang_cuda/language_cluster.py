"""TileLang's `T.copy_cluster` (sm_90 thread-block clusters), offered as `T.<name>` by the plugin.

`T.copy_cluster(src, dst, dst_block=r)`: this block's shared tile `src` is stored into the
same-shaped shared tile `dst` of block `r` of its cluster (distributed shared memory, PTX
ISA "mapa"), element by element over the block's threads (TileLang's SIMT path). The
kernel publishes the stores itself: `T.cluster_sync()` before block `r` reads `dst`, or, with
`remote_barrier=bar[i]`, the copy ends with a block barrier and one arrival of this block
(thread 0, release at cluster scope) on the mbarrier `bar[i]` of block `r`, which block `r`
waits on (`T.mbarrier_wait_parity`); block `r` initialises it to expect those arrivals.

Without `dst_block` (and `cluster_mask`) it is `T.copy`. `cluster_mask` (TMA multicast of a
global tile into several blocks) is not supported yet and is refused, saying so.
"""
from __future__ import annotations

from typing import Any

from tvm import ir, tirx
from tvm.tirx import is_buffer_var
from tvm.tirx.script.builder import ir as _builder

from tilelang_core import language as T

from .language_ptx import _bar

__all__ = ["CLUSTER_LANGUAGE_NAMES", "copy_cluster"]


def _tile(operand: Any, role: str) -> tuple[Any, list, list]:
    """(shared buffer, mins, static extents) of a buffer or a region of one."""
    if is_buffer_var(operand):
        buffer, mins, extents = operand, [0] * len(operand.shape), list(operand.shape)
    elif isinstance(operand, ir.TensorRegion) and is_buffer_var(operand.source):
        buffer = operand.source
        mins, extents = [r.min for r in operand.region], [r.extent for r in operand.region]
    else:
        raise TypeError(f"T.copy_cluster: the {role} must be a shared buffer or a region of one, got {operand!r}")
    if not str(buffer.scope()).startswith("shared"):
        raise ValueError(f"T.copy_cluster: the {role} {buffer.name} is in {buffer.scope()}; a copy to another block "
                         f"of the cluster goes from shared memory to shared memory")
    if not all(isinstance(e, (int, tirx.IntImm)) for e in extents):
        raise ValueError(f"T.copy_cluster: the {role}'s extents {extents} must be constants")
    return buffer, mins, [int(e) for e in extents]


def copy_cluster(src: Any, dst: Any, *, dst_block: Any = None, cluster_mask: Any = None, remote_barrier: Any = None,
                 eviction_policy: Any = None, coalesced_width: Any = None, annotations: Any = None,
                 loop_layout: Any = None) -> Any:
    """Copy this block's shared tile into block `dst_block`'s (see the module)."""
    if cluster_mask is not None:
        raise NotImplementedError("T.copy_cluster: cluster_mask= (a TMA multicast into several blocks of the "
                                  "cluster) is not supported yet; load the tile in each block with T.copy, or copy "
                                  "it block to block with dst_block=")
    if dst_block is None:
        if remote_barrier is not None:
            raise ValueError("T.copy_cluster: remote_barrier= signals the block given by dst_block=; give dst_block")
        return T.copy(src, dst, eviction_policy=eviction_policy, coalesced_width=coalesced_width,
                      annotations=annotations, loop_layout=loop_layout)
    if loop_layout is not None:
        raise NotImplementedError("T.copy_cluster: loop_layout= is not supported; leave it out")
    src_buf, src_mins, src_extents = _tile(src, "source")
    dst_buf, dst_mins, dst_extents = _tile(dst, "destination")
    if src_extents != dst_extents or str(src_buf.dtype) != str(dst_buf.dtype):
        raise ValueError(f"T.copy_cluster: the source {src_extents} of {src_buf.dtype} and the destination "
                         f"{dst_extents} of {dst_buf.dtype} must have the same shape and dtype")
    rank = tirx.Cast("uint32", dst_block) if isinstance(dst_block, ir.Expr) else tirx.const(int(dst_block), "uint32")
    count = 1
    for extent in src_extents:
        count *= extent
    with T.Parallel(count) as flat:
        index, rest = [], flat
        for extent in reversed(src_extents):
            index.insert(0, rest % extent)
            rest = rest // extent
        value = src_buf[tuple(m + i for m, i in zip(src_mins, index))]
        target = T.access_ptr(dst_buf[tuple(m + i for m, i in zip(dst_mins, index))], "w")
        _builder.evaluate(tirx.call_extern("handle", "tl::st_cluster", target, value, rank))
    if remote_barrier is not None:
        barrier = _bar(remote_barrier, "copy_cluster")
        _builder.evaluate(T.sync_threads())
        with _builder.If(T.get_thread_binding() == 0):
            with _builder.Then():
                _builder.evaluate(tirx.call_extern("handle", "tl::mbarrier_arrive_cluster", barrier, rank))
    return None


CLUSTER_LANGUAGE_NAMES = {"copy_cluster": copy_cluster}
