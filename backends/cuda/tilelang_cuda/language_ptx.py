"""TileLang's PTX-level names for hand-written CUDA kernels, offered as `T.<name>` by the
plugin (`tilelang_language_names`) where this backend is installed:

- explicit memory instructions: `T.ldg32/64/128(src[, pred])`, `T.stg32/64/128(dst, value[,
  pred])` (global), `T.lds32/64/128(src)`, `T.sts32/64/128(dst, value)` (shared); values are
  raw 32-bit words (`uint32`, `uint32x2`, `uint32x4`), a predicated load gives 0 where the
  predicate is false;
- `cp.async` by hand: `T.ptx_cp_async(dst_ptr, src_ptr, num_elems[, predicate])` (4, 8 or 16
  bytes; zero-filled where the predicate is false), `T.ptx_commit_group()`,
  `T.ptx_wait_group(n)`;
- wgmma ordering: `T.warpgroup_arrive()` (wgmma.fence), `T.warpgroup_commit_batch()`,
  `T.warpgroup_wait(n)` / `T.wait_wgmma(n)`;
- thread-block clusters (sm_90): `T.cluster_arrive()`, `T.cluster_arrive_relaxed()`,
  `T.cluster_wait()`, `T.cluster_sync()`, `T.block_rank_in_cluster()`; a kernel launched
  without clusters is a cluster of one block (rank 0);
- mbarriers by hand, on barriers of `T.alloc_barrier` (or `T.create_barriers(n)`, left for
  `T.ptx_init_barrier_thread_count` to initialise): `T.mbarrier_expect_tx(bar, bytes)`,
  `T.mbarrier_arrive_expect_tx(bar, bytes)`, `T.ptx_arrive_barrier(bar)`,
  `T.ptx_arrive_barrier_expect_tx(bar, bytes)`, `T.ptx_init_barrier_thread_count(bar, n)`,
  `T.ptx_fence_barrier_init()`, `T.ptx_wait_barrier(bar, parity)`, `T.ptx_cp_async_barrier(bar)`,
  `T.cp_async_barrier_noinc(bar)`;
- programmatic dependent launch: `T.pdl_sync()` (griddepcontrol.wait), `T.pdl_trigger()`
  (griddepcontrol.launch_dependents); without the launch attribute both are no-ops.

Each is a call of a helper of `tl_cuda_threads.h`, `tl_cuda_mma.h` or `tl_cuda_wgmma.h`.
"""
from __future__ import annotations

from typing import Any

from tvm import ir, tirx

from tilelang_core import language as T

__all__ = ["PTX_LANGUAGE_NAMES", "PTX_HELPER_PREFIXES"]

# call_extern names whose helpers live in tl_cuda_threads.h
PTX_HELPER_PREFIXES = ("tl::ldg", "tl::stg", "tl::lds", "tl::sts", "tl::cluster_", "tl::block_rank_in_cluster",
                       "tl::pdl_", "tl::mbarrier_expect_tx_only", "tl::cp_async_mbarrier_arrive_noinc", "tl::mma_fill",
                       "tl::mma_store_16x16", "tl::mbarrier_arrive_cluster", "tl::cp_async_bulk", "tl::st_cluster",
                       "tl::as_words", "tl::mma_sp_")

_WORDS = {32: "uint32", 64: "uint32x2", 128: "uint32x4"}


def _pointer(operand: Any, access: str, name: str, scope: str) -> ir.Expr:
    if isinstance(operand, ir.Call):  # already a pointer (T.access_ptr / tvm_access_ptr)
        return operand
    pointer = T.access_ptr(operand, access, extent=1)
    buffer = pointer.args[1].args[0].source
    if not str(buffer.scope()).startswith(scope):
        raise ValueError(f"T.{name}: {buffer.name} is in {buffer.scope()} memory; T.{name} addresses {scope} memory")
    return pointer


def _predicate(pred: Any) -> list:
    if pred is None:
        return []
    return [pred if isinstance(pred, ir.Expr) else tirx.const(bool(pred), "bool")]


def _load(bits: int, space: str):
    name = f"ld{space}{bits}"
    scope = "global" if space == "g" else "shared"

    def load(src: Any, pred: Any = None) -> ir.Call:
        if space == "s" and pred is not None:
            raise TypeError(f"T.{name} takes no predicate")
        return tirx.call_extern(_WORDS[bits], f"tl::{name}", _pointer(src, "r", name, scope), *_predicate(pred))

    load.__name__ = name
    load.__doc__ = (f"`{bits}` bits of {scope} memory at `src` (an element A[i] or a region) as raw words "
                    f"({_WORDS[bits]})" + ("; with `pred`, 0 where it is false." if space == "g" else "."))
    return load


def _store(bits: int, space: str):
    name = f"st{space}{bits}"
    scope = "global" if space == "g" else "shared"

    def store(dst: Any, value: Any, pred: Any = None) -> ir.Call:
        if space == "s" and pred is not None:
            raise TypeError(f"T.{name} takes no predicate")
        value = value if isinstance(value, ir.Expr) else tirx.const(value, "uint32")
        if str(value.ty.dtype) != _WORDS[bits]:
            raise TypeError(f"T.{name}: the value must be {_WORDS[bits]} (raw words, e.g. from T.ld{space}{bits}), "
                            f"got {value.ty.dtype}")
        return tirx.call_extern("handle", f"tl::{name}", _pointer(dst, "w", name, scope), value, *_predicate(pred))

    store.__name__ = name
    store.__doc__ = f"Store the raw words `value` ({_WORDS[bits]}) to {scope} memory at `dst`."
    return store


def ptx_cp_async(dst_access_ptr: Any, src_access_ptr: Any, num_elems: Any, predicate: Any = None) -> ir.Call:
    """`cp.async` of `num_elems` elements (4, 8 or 16 bytes) from global to shared memory;
    with `predicate`, nothing is read and the bytes are zeroed where it is false."""
    dtype = str(dst_access_ptr.args[0].ty.dtype) if isinstance(dst_access_ptr, ir.Call) else ""
    count = int(num_elems.value) if isinstance(num_elems, tirx.IntImm) else num_elems
    if not isinstance(count, int) or not dtype:
        raise ValueError("T.ptx_cp_async: give T.access_ptr pointers and a constant num_elems")
    nbytes = count * max(1, ir.PrimType(dtype).dtype.bits // 8)
    if nbytes not in (4, 8, 16):
        raise ValueError(f"T.ptx_cp_async: {count} x {dtype} is {nbytes} bytes; cp.async copies 4, 8 or 16")
    if predicate is None:
        return tirx.call_extern("handle", f"tl::cp_async_ca<{nbytes}>", dst_access_ptr, src_access_ptr)
    return tirx.call_extern("handle", f"tl::cp_async_ca_zfill<{nbytes}>", dst_access_ptr, src_access_ptr,
                            *_predicate(predicate))


def ptx_commit_group() -> ir.Call:
    """`cp.async.commit_group`: close the group of this thread's cp.async issued so far."""
    return tirx.call_extern("handle", "tl::cp_async_commit")


def _constant(value: Any, name: str) -> int:
    value = int(value.value) if isinstance(value, tirx.IntImm) else value
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 255:
        raise ValueError(f"T.{name}: expects a constant count from 0 to 255, got {value!r}")
    return value


def ptx_wait_group(num: Any) -> ir.Call:
    """`cp.async.wait_group num`: wait until at most `num` committed groups are in flight."""
    return tirx.call_extern("handle", f"tl::cp_async_wait<{_constant(num, 'ptx_wait_group')}>")


def warpgroup_arrive() -> ir.Call:
    """`wgmma.fence.sync.aligned`: order register accesses before the next wgmma."""
    return tirx.call_extern("handle", "tl::wgmma_fence")


def warpgroup_commit_batch() -> ir.Call:
    """`wgmma.commit_group.sync.aligned`: close the batch of wgmma issued so far."""
    return tirx.call_extern("handle", "tl::wgmma_commit")


def warpgroup_wait(num_mma: Any) -> ir.Call:
    """`wgmma.wait_group.sync.aligned num_mma`: wait until at most `num_mma` batches are pending."""
    return tirx.call_extern("handle", f"tl::wgmma_wait<{_constant(num_mma, 'warpgroup_wait')}>")


def wait_wgmma(id: Any) -> ir.Call:  # noqa: A002 - TileLang's parameter name
    """TileLang's other spelling of `T.warpgroup_wait(id)`."""
    return tirx.call_extern("handle", f"tl::wgmma_wait<{_constant(id, 'wait_wgmma')}>")


def _void(helper: str, doc: str):
    def call() -> ir.Call:
        return tirx.call_extern("handle", f"tl::{helper}")

    call.__doc__ = doc
    return call


def _bar(barrier: Any, name: str) -> ir.Expr:
    """A pointer to one mbarrier: `bars[i]`, or a barrier buffer's first."""
    from tvm.tirx import is_buffer_var

    if is_buffer_var(barrier):
        barrier = barrier[0]
    if not (isinstance(barrier, ir.TensorLoad) and str(barrier.source.scope()) == "shared.barrier"):
        raise TypeError(f"T.{name}: expects a barrier of T.alloc_barrier / T.create_barriers (bars[i]), got {barrier}")
    return T.access_ptr(barrier, "rw", extent=1)


def _u32(value: Any) -> ir.Expr:
    return tirx.const(value, "uint32") if isinstance(value, int) else value


def create_barriers(num: int) -> Any:
    """`num` mbarriers in shared memory, not initialised: `T.ptx_init_barrier_thread_count`
    (one thread), `T.ptx_fence_barrier_init()` and a block barrier come before their use."""
    if not isinstance(num, int) or num <= 0:
        raise ValueError(f"T.create_barriers: num must be a positive int, got {num!r}")
    return T.alloc_buffer((num,), "uint64", scope="shared.barrier")


def ptx_init_barrier_thread_count(barrier: Any, thread_count: Any) -> ir.Call:
    """`mbarrier.init`: the barrier's phases complete after `thread_count` arrivals."""
    return tirx.call_extern("handle", "tl::mbarrier_init", _bar(barrier, "ptx_init_barrier_thread_count"),
                            _u32(thread_count))


def ptx_fence_barrier_init() -> ir.Call:
    """`fence.mbarrier_init.release.cluster`: make initialised barriers visible."""
    return tirx.call_extern("handle", "tl::fence_barrier_init")


def ptx_arrive_barrier(barrier: Any) -> ir.Call:
    """`mbarrier.arrive`: this thread arrives once."""
    return tirx.call_extern("handle", "tl::mbarrier_arrive", _bar(barrier, "ptx_arrive_barrier"))


def ptx_arrive_barrier_expect_tx(barrier: Any, byte_count: Any) -> ir.Call:
    """`mbarrier.arrive.expect_tx`: arrive once and make the phase wait for `byte_count`
    bytes of asynchronous copies (TMA) too."""
    return tirx.call_extern("handle", "tl::mbarrier_expect_tx", _bar(barrier, "ptx_arrive_barrier_expect_tx"),
                            _u32(byte_count))


def mbarrier_arrive_expect_tx(mbarrier: Any, tx: Any) -> ir.Call:
    """TileLang's `T.mbarrier_arrive_expect_tx`: `T.ptx_arrive_barrier_expect_tx`."""
    return tirx.call_extern("handle", "tl::mbarrier_expect_tx", _bar(mbarrier, "mbarrier_arrive_expect_tx"), _u32(tx))


def mbarrier_expect_tx(mbarrier: Any, tx: Any) -> ir.Call:
    """`mbarrier.expect_tx` (sm_90): the current phase also waits for `tx` bytes, no arrival."""
    return tirx.call_extern("handle", "tl::mbarrier_expect_tx_only", _bar(mbarrier, "mbarrier_expect_tx"), _u32(tx))


def ptx_wait_barrier(barrier: Any, parity: Any) -> ir.Call:
    """Wait until the barrier's phase of this parity has completed."""
    parity = tirx.const(parity, "int32") if isinstance(parity, int) else parity
    return tirx.call_extern("handle", "tl::mbarrier_wait", _bar(barrier, "ptx_wait_barrier"), parity)


def ptx_cp_async_barrier(barrier: Any) -> ir.Call:
    """`cp.async.mbarrier.arrive`: arrive when this thread's cp.async so far complete."""
    return tirx.call_extern("handle", "tl::cp_async_mbarrier_arrive", _bar(barrier, "ptx_cp_async_barrier"))


def cp_async_barrier_noinc(barrier: Any) -> ir.Call:
    """`cp.async.mbarrier.arrive.noinc`: as `T.ptx_cp_async_barrier`, the arrival counted in
    the barrier's expected count."""
    return tirx.call_extern("handle", "tl::cp_async_mbarrier_arrive_noinc", _bar(barrier, "cp_async_barrier_noinc"))


def alloc_cluster_barrier(arrive_count: Any) -> Any:
    """TileLang's `T.alloc_cluster_barrier`: barriers other blocks of the cluster may arrive
    on (`T.ptx_arrive_cluster_barrier`); initialised as `T.alloc_barrier` (with a
    cluster-scope fence)."""
    return T.alloc_barrier(arrive_count)


def ptx_arrive_cluster_barrier(mbarrier: Any, cta_id: Any) -> ir.Call:
    """Arrive on the barrier at this one's place in block `cta_id` of the cluster
    (`mapa` + `mbarrier.arrive.release.cluster.shared::cluster`)."""
    return tirx.call_extern("handle", "tl::mbarrier_arrive_cluster", _bar(mbarrier, "ptx_arrive_cluster_barrier"),
                            _u32(cta_id))


def _element_pointer(ptr: Any, offset: Any, access: str, name: str) -> ir.Expr:
    from tvm.tirx import is_buffer_var

    if isinstance(ptr, ir.Call) and str(getattr(ptr.op, "name", "")) == "tirx.buffer_data":
        ptr = ptr.args[0]
    if not is_buffer_var(ptr):
        raise TypeError(f"T.{name}: expects a buffer (or its .data), got {ptr}")
    flat = T.Tensor((1 << 30,), str(ptr.dtype), data=ptr.data) if len(ptr.shape) != 1 else ptr
    return T.access_ptr(flat[offset], access, extent=1)


def ptx_cp_async_bulk(dtype: Any, shared_ptr: Any, shared_offset: Any, global_ptr: Any, global_offset: Any,
                      bytes: Any, barrier: Any) -> ir.Call:  # noqa: A002 - TVM's parameter name
    """`cp.async.bulk` of `bytes` (a multiple of 16) from global memory (`global_ptr` +
    `global_offset` elements) to shared memory, completing as transaction bytes on `barrier`
    (sm_90; pair with `T.mbarrier_expect_tx`)."""
    if isinstance(bytes, int) and (bytes <= 0 or bytes % 16):
        raise ValueError(f"T.ptx_cp_async_bulk: bytes must be a positive multiple of 16, got {bytes}")
    # the destination is written by the async proxy, ordered by the mbarrier, not by this
    # thread: a block barrier after the call (as for a thread's own write) would order nothing
    # and, in the usual `if tx == 0` issue branch, would deadlock
    return tirx.call_extern("handle", "tl::cp_async_bulk",
                            _element_pointer(shared_ptr, shared_offset, "r", "ptx_cp_async_bulk"),
                            _element_pointer(global_ptr, global_offset, "r", "ptx_cp_async_bulk"),
                            _u32(bytes), _bar(barrier, "ptx_cp_async_bulk"))


def block_rank_in_cluster() -> ir.Call:
    """This block's rank in its thread-block cluster (0 in a launch without clusters)."""
    return tirx.call_extern("int32", "tl::block_rank_in_cluster")


PTX_LANGUAGE_NAMES = {
    **{f"ld{s}{b}": _load(b, s) for s in "gs" for b in (32, 64, 128)},
    **{f"st{s}{b}": _store(b, s) for s in "gs" for b in (32, 64, 128)},
    "ptx_cp_async": ptx_cp_async,
    "ptx_commit_group": ptx_commit_group,
    "ptx_wait_group": ptx_wait_group,
    "warpgroup_arrive": warpgroup_arrive,
    "warpgroup_commit_batch": warpgroup_commit_batch,
    "warpgroup_wait": warpgroup_wait,
    "wait_wgmma": wait_wgmma,
    "cluster_arrive": _void("cluster_arrive", "`barrier.cluster.arrive.aligned`: arrive at the cluster barrier."),
    "cluster_arrive_relaxed": _void("cluster_arrive_relaxed", "`barrier.cluster.arrive.relaxed.aligned`: arrive "
                                    "without ordering this thread's memory accesses."),
    "cluster_wait": _void("cluster_wait", "`barrier.cluster.wait.aligned`: wait for the cluster's arrivals."),
    "cluster_sync": _void("cluster_sync", "`T.cluster_arrive()` then `T.cluster_wait()`."),
    "block_rank_in_cluster": block_rank_in_cluster,
    "create_barriers": create_barriers,
    "alloc_cluster_barrier": alloc_cluster_barrier,
    "ptx_arrive_cluster_barrier": ptx_arrive_cluster_barrier,
    "ptx_cp_async_bulk": ptx_cp_async_bulk,
    "ptx_init_barrier_thread_count": ptx_init_barrier_thread_count,
    "ptx_fence_barrier_init": ptx_fence_barrier_init,
    "ptx_arrive_barrier": ptx_arrive_barrier,
    "ptx_arrive_barrier_expect_tx": ptx_arrive_barrier_expect_tx,
    "mbarrier_arrive_expect_tx": mbarrier_arrive_expect_tx,
    "mbarrier_expect_tx": mbarrier_expect_tx,
    "ptx_wait_barrier": ptx_wait_barrier,
    "ptx_cp_async_barrier": ptx_cp_async_barrier,
    "cp_async_barrier_noinc": cp_async_barrier_noinc,
    "pdl_sync": _void("pdl_wait", "`griddepcontrol.wait`: wait for the grids this one depends on (PDL)."),
    "pdl_trigger": _void("pdl_launch_dependents", "`griddepcontrol.launch_dependents`: let dependent grids start."),
}
