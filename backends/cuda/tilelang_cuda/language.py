"""TileLang's CUDA instructions in the kernel language: `T.ptx_mma`, `T.ptx_ldmatrix` and the
register reallocation of sm_90a (`T.set_max_nreg`, `T.inc_max_nreg`, `T.dec_max_nreg`).

The plugin offers both as `T.<name>` (the `tilelang_language_names` hook), with TileLang's
signatures and meanings; each builds a call of TVM's own builtin, which `codegen_ptx` prints:

- `T.ptx_mma(dtype, shape, A_layout, B_layout, A_dtype, B_dtype, C_dtype, a, a_index, b,
  b_index, c, c_index, saturate[, operator])` is `tirx.ptx_legacy.mma` (TVM's `ptx_mma`):
  one `mma.sync.aligned` of the warp. `a`, `b`, `c` are buffer pointers (`A_local.data`) and
  the indexes count elements of those buffers; `c` is both the accumulator and the result.
- `T.ptx_ldmatrix(trans, num, src_access_ptr, dst_access_ptr)` is `tirx.ptx_legacy.ldmatrix`
  (TVM's `ptx_ldmatrix(trans, num, ".b16", dst, 0, src, 0)`): `num` 8x8 b16 matrices of
  shared memory into the warp's registers, lane l giving the address of row l % 8 of matrix
  l // 8 (PTX ISA, "ldmatrix").

`MMA_INSTRUCTIONS` lists the mma.sync forms the backend prints: (shape, A, B, C) in TileLang's
spellings -> the `tl_cuda_mma.h` helper and the C type of its accumulator.
"""
from __future__ import annotations

from typing import Any

from tvm import ir, tirx

__all__ = ["MMA_INSTRUCTIONS", "dec_max_nreg", "inc_max_nreg", "mma_instruction", "ptx_ldmatrix", "ptx_mma",
           "set_max_nreg", "fence_proxy_async", "tma_store_arrive", "tma_store_wait", "LANGUAGE_NAMES",
           "KEYWORDS"]

# TileLang's, TVM's and PTX's spellings of an operand type -> one name
_OPERAND_TYPES = {
    "fp16": "fp16", "float16": "fp16", "f16": "fp16",
    "bf16": "bf16", "bfloat16": "bf16",
    "fp32": "fp32", "float32": "fp32", "f32": "fp32",
    "int8": "int8", "s8": "int8",
    "int32": "int32", "s32": "int32",
}

# (shape, A, B, C/D) -> (helper of tl_cuda_mma.h, C type of its accumulator pointer)
MMA_INSTRUCTIONS = {
    ("m16n8k16", "fp16", "fp16", "fp32"): ("tl::mma_m16n8k16_f16_f32", "float"),
    ("m16n8k16", "bf16", "bf16", "fp32"): ("tl::mma_m16n8k16_bf16_f32", "float"),
    ("m16n8k16", "fp16", "fp16", "fp16"): ("tl::mma_m16n8k16_f16_f16", "uint32_t"),
    ("m16n8k32", "int8", "int8", "int32"): ("tl::mma_m16n8k32_s8_s32", "int32_t"),
}


def _text(value: Any) -> str:
    return str(value.value) if isinstance(value, ir.StringImm) else str(value)


def _supported() -> str:
    return ", ".join(f"{s}.{a}.{b}.{c}" for s, a, b, c in MMA_INSTRUCTIONS)


def mma_instruction(shape: Any, a_layout: Any, b_layout: Any, a_dtype: Any, b_dtype: Any, c_dtype: Any,
                    saturate: Any = False) -> tuple[str, str]:
    """(helper, accumulator C type) of one mma.sync form; ValueError naming the form and the
    supported ones when it is not printed."""
    layouts = (_text(a_layout), _text(b_layout))
    if layouts != ("row", "col"):
        raise ValueError(f"ptx_mma: layouts A={layouts[0]!r}, B={layouts[1]!r}; mma.sync for these types "
                         f"takes A 'row' and B 'col' (transpose the operands when loading them)")
    types = tuple(_OPERAND_TYPES.get(_text(t), _text(t)) for t in (a_dtype, b_dtype, c_dtype))
    key = (_text(shape), *types)
    if key not in MMA_INSTRUCTIONS:
        raise ValueError(f"ptx_mma: {'.'.join(key)} (shape.A.B.C) is not supported on CUDA; "
                         f"supported: {_supported()}")
    if isinstance(saturate, tirx.IntImm):
        saturate = bool(saturate.value)
    if not isinstance(saturate, bool) or saturate:
        raise ValueError(f"ptx_mma: saturate={saturate!r}; only saturate=False is supported")
    return MMA_INSTRUCTIONS[key]


def ptx_mma(dtype: Any, shape: str, A_layout: str, B_layout: str, A_dtype: str, B_dtype: str,  # noqa: N803
            C_dtype: str, multiplicand_a: Any, a_index: Any, multiplicand_b: Any, b_index: Any,
            accumulator: Any, c_index: Any, saturate: Any = False, operator: Any = None) -> ir.Call:
    """TileLang's `T.ptx_mma`: `c[c_index:] = a[a_index:] * b[b_index:] + c[c_index:]` for one
    warp's `mma.sync.aligned.<shape>.row.col` (fragments as in the PTX ISA's "Matrix
    fragments for mma.<shape>"); `dtype` is the accumulator's dtype (TileLang passes it first)."""
    mma_instruction(shape, A_layout, B_layout, A_dtype, B_dtype, C_dtype, saturate)
    if operator is not None:
        raise ValueError(f"ptx_mma: operator={operator!r}; only plain multiply-add is supported (no operator)")
    args = [shape, A_layout, B_layout, A_dtype, B_dtype, C_dtype, multiplicand_a, a_index, multiplicand_b,
            b_index, accumulator, c_index, tirx.const(bool(saturate), "bool")]
    return tirx.call_intrin("", "tirx.ptx_legacy.mma", *args)


def ptx_ldmatrix(trans: Any, num: Any, src_access_ptr: Any, dst_access_ptr: Any) -> ir.Call:
    """TileLang's `T.ptx_ldmatrix`: `ldmatrix.sync.aligned.m8n8.x<num>[.trans].shared.b16` from
    `src_access_ptr` (this lane's row address in shared memory) to `dst_access_ptr` (`num`
    32-bit registers of this lane, e.g. `T.access_ptr(A_local[i * 8], "w")`)."""
    count = int(num.value) if isinstance(num, tirx.IntImm) else num
    if count not in (1, 2, 4):
        raise ValueError(f"ptx_ldmatrix: num={num!r}; ldmatrix loads 1, 2 or 4 matrices")
    transposed = bool(trans.value) if isinstance(trans, tirx.IntImm) else trans
    if not isinstance(transposed, bool):
        raise ValueError(f"ptx_ldmatrix: trans must be a constant bool, got {trans!r}")
    return tirx.call_intrin("int8", "tirx.ptx_legacy.ldmatrix", tirx.const(transposed, "bool"),
                            tirx.const(count, "int32"), ".b16", dst_access_ptr, 0, src_access_ptr, 0)


def set_max_nreg(reg_count: Any, is_inc: Any) -> ir.Call:
    """TileLang's `T.set_max_nreg`: `setmaxnreg.{inc,dec}.sync.aligned.u32 reg_count` (sm_90a):
    every thread of the calling warpgroup moves to `reg_count` registers (24..256, a multiple
    of 8); `is_inc` 1 raises, 0 lowers. The kernel is then bounded to one block per SM."""
    count = int(reg_count.value) if isinstance(reg_count, tirx.IntImm) else reg_count
    if not isinstance(count, int) or isinstance(count, bool) or not 24 <= count <= 256 or count % 8:
        raise ValueError(f"set_max_nreg: reg_count must be a constant multiple of 8 from 24 to 256, got {reg_count!r}")
    inc = int(is_inc.value) if isinstance(is_inc, tirx.IntImm) else is_inc
    if inc not in (0, 1, True, False):
        raise ValueError(f"set_max_nreg: is_inc must be 1 (raise) or 0 (lower), got {is_inc!r}")
    return tirx.call_extern("handle", f"tl::setmaxnreg_{'inc' if inc else 'dec'}<{count}>")


def inc_max_nreg(reg_count: Any) -> ir.Call:
    """`T.set_max_nreg(reg_count, 1)`."""
    return set_max_nreg(reg_count, 1)


def dec_max_nreg(reg_count: Any) -> ir.Call:
    """`T.set_max_nreg(reg_count, 0)`."""
    return set_max_nreg(reg_count, 0)


def _function_attr(name: str, key: str, value: Any) -> None:
    from tilelang_core.ir import set_func_attr

    try:
        set_func_attr(key, value)  # anywhere in the body, as TileLang's programs call it
    except RuntimeError as exc:  # outside a kernel body
        raise RuntimeError(f"T.{name} belongs in a kernel body (@T.prim_func)") from exc


def no_set_max_nreg() -> None:
    """TileLang's `T.no_set_max_nreg`: the warp-specialized pipeline of this kernel moves no
    registers between its warpgroups (no setmaxnreg; every thread keeps the launch's share)."""
    _function_attr("no_set_max_nreg", "tl.no_set_max_nreg", 1)


def disable_warp_group_reg_alloc() -> None:
    """TileLang's other spelling of `T.no_set_max_nreg()`."""
    _function_attr("disable_warp_group_reg_alloc", "tl.no_set_max_nreg", 1)


def _registers(name: str, count: Any) -> int:
    if not isinstance(count, int) or isinstance(count, bool) or not 24 <= count <= 256 or count % 8:
        raise ValueError(f"T.{name}: reg_count must be a multiple of 8 from 24 to 256, got {count!r}")
    return count


def annotate_producer_reg_dealloc(reg_count: int = 24) -> None:
    """TileLang's `T.annotate_producer_reg_dealloc`: the loading warpgroup of this kernel's
    warp-specialized pipeline lowers itself to `reg_count` registers per thread."""
    _function_attr("annotate_producer_reg_dealloc", "tl.producer_reg_dealloc",
                   _registers("annotate_producer_reg_dealloc", reg_count))


def annotate_consumer_reg_alloc(reg_count: int = 240) -> None:
    """TileLang's `T.annotate_consumer_reg_alloc`: the consumer warpgroups of this kernel's
    warp-specialized pipeline raise themselves to `reg_count` registers per thread."""
    _function_attr("annotate_consumer_reg_alloc", "tl.consumer_reg_alloc",
                   _registers("annotate_consumer_reg_alloc", reg_count))


def annotate_min_blocks_per_sm(n: int) -> None:
    """TileLang's `T.annotate_min_blocks_per_sm(n)`: `__launch_bounds__(threads, n)`, as
    `T.Kernel(..., min_blocks_per_sm=n)`."""
    _function_attr("annotate_min_blocks_per_sm", "tl.min_blocks_per_sm", _blocks_per_sm(n))


def fence_proxy_async() -> ir.Call:
    """TileLang's `T.fence_proxy_async`: `fence.proxy.async.shared::cta` (sm_90), ordering this
    thread's generic-proxy writes of shared memory before later async-proxy reads (TMA, wgmma)."""
    return tirx.call_extern("handle", "tl::fence_proxy_async")


def tma_store_arrive() -> ir.Call:
    """TileLang's `T.tma_store_arrive`: `cp.async.bulk.commit_group`, closing this thread's
    bulk (TMA) stores issued so far into one group."""
    return tirx.call_extern("handle", "tl::tma_store_commit")


def tma_store_wait(count: int = 0, read: bool = True) -> ir.Call:
    """TileLang's `T.tma_store_wait`: `cp.async.bulk.wait_group.read 0`, waiting until every
    committed bulk store group has finished reading its shared memory (count 0, read=True:
    the form TileLang's kernels use; others are refused)."""
    if count != 0 or read is not True:
        raise ValueError(f"tma_store_wait: count={count!r}, read={read!r}; only count=0, read=True "
                         f"(wait until the stores' shared memory may be reused) is supported")
    return tirx.call_extern("handle", "tl::tma_store_wait_read")


def _compat_names() -> dict:
    """TileLang's MMA macro generator and swizzle helpers, from this backend's compat package."""
    from .compat.intrinsics import (TensorCoreIntrinEmitter, TensorCoreIntrinEmitterWithLadderTransform,
                                    get_swizzle_layout, make_mma_swizzle_layout)

    return {"TensorCoreIntrinEmitter": TensorCoreIntrinEmitter,
            "TensorCoreIntrinEmitterWithLadderTransform": TensorCoreIntrinEmitterWithLadderTransform,
            "get_swizzle_layout": get_swizzle_layout, "make_mma_swizzle_layout": make_mma_swizzle_layout}


LANGUAGE_NAMES = {"no_set_max_nreg": no_set_max_nreg, "disable_warp_group_reg_alloc": disable_warp_group_reg_alloc,
                  "annotate_producer_reg_dealloc": annotate_producer_reg_dealloc,
                  "annotate_consumer_reg_alloc": annotate_consumer_reg_alloc,
                  "annotate_min_blocks_per_sm": annotate_min_blocks_per_sm,
                  "fence_proxy_async": fence_proxy_async, "tma_store_arrive": tma_store_arrive,
                  "tma_store_wait": tma_store_wait, "ptx_mma": ptx_mma, "ptx_ldmatrix": ptx_ldmatrix, "set_max_nreg": set_max_nreg,
                  "inc_max_nreg": inc_max_nreg, "dec_max_nreg": dec_max_nreg}


def _blocks_per_sm(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 32:
        raise ValueError("must be an int from 1 to 32 (blocks that should fit an SM at once)")
    return value


# `T.Kernel(..., min_blocks_per_sm=n)`: `__launch_bounds__(threads, n)`, so ptxas keeps the
# registers a thread uses low enough for n blocks to share an SM (CUDA's minBlocksPerMultiprocessor;
# ignored in a kernel that moves registers with setmaxnreg, which needs one block per SM)
def _cluster_dims(value: Any) -> list:
    dims = list(value) if isinstance(value, (list, tuple)) else [value]
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims):
        raise ValueError("must be an int or 1 to 3 ints >= 1 (blocks per cluster along x, y, z)")
    dims += [1] * (3 - len(dims))
    if dims[0] * dims[1] * dims[2] > 8:
        raise ValueError(f"{dims} is {dims[0] * dims[1] * dims[2]} blocks; a portable cluster holds at most 8")
    return dims


# `T.Kernel(..., cluster_dims=(x, y, z))` (what T.ClusterKernel passes): thread-block clusters of
# that shape (sm_90), declared at compile time with `__cluster_dims__`, so a plain launch forms them
KEYWORDS = {"Kernel": {"min_blocks_per_sm": _blocks_per_sm, "cluster_dims": _cluster_dims}}


def ClusterKernel(*blocks: Any, cluster_dims: Any, threads: Any = None, prelude: Any = None):  # noqa: N802
    """TileLang's `T.ClusterKernel(gx, gy, cluster_dims=2, threads=128)`: `T.Kernel` whose blocks
    form thread-block clusters of `cluster_dims` (sm_90; each grid extent a multiple of the
    cluster's). Inside, `T.block_rank_in_cluster()` and the cluster barriers apply."""
    from tilelang_core.language import Kernel

    return Kernel(*blocks, threads=threads, prelude=prelude, cluster_dims=cluster_dims)


LANGUAGE_NAMES["ClusterKernel"] = ClusterKernel

# PrimFunc attribute: the kernel called T.wgmma_gemm, so its GEMMs must lower to wgmma
ATTR_REQUIRE_WGMMA = "tl.require_wgmma"


def wgmma_gemm(A: Any, B: Any, C: Any, transpose_A: bool = False, transpose_B: bool = False,  # noqa: N803
               policy: Any = None, clear_accum: bool = False, annotations: Any = None) -> Any:
    """TileLang's `T.wgmma_gemm`: `T.gemm` that must run on Hopper's wgmma (sm_90a); the
    kernel is refused at codegen when its GEMM cannot (an operand pattern wgmma does not
    take, a target without it) instead of falling back to mma.sync. This backend completes
    the wgmma before the GEMM's result is read (a later `T.wait_wgmma(0)` then waits for
    nothing), where TileLang leaves the wait to the program."""
    from tvm import tirx as _tirx
    from tvm.tirx.script.builder import ir as _builder

    from tilelang_core.language import gemm

    if annotations:
        raise ValueError(f"T.wgmma_gemm: annotations={annotations!r} are not supported; leave them out")
    kwargs = {} if policy is None else {"policy": policy}
    call = gemm(A, B, C, transpose_A=transpose_A, transpose_B=transpose_B, clear_accum=clear_accum, **kwargs)
    # the GEMM inside an ATTR_REQUIRE_WGMMA marker, which the codegen checks
    with _builder.attr(_tirx.IntImm("int32", 0), ATTR_REQUIRE_WGMMA, _tirx.IntImm("int32", 1)):
        _builder.evaluate(call)
    return None


LANGUAGE_NAMES["wgmma_gemm"] = wgmma_gemm
LANGUAGE_NAMES["wgmma_mma"] = wgmma_gemm  # TileLang's other name


# AttrStmt key of T.CUDASourceCodeKernel: a JSON {"source", "entry"} the codegen prints instead
ATTR_CUDA_SOURCE = "tl.cuda_source"


def CUDASourceCodeKernel(*blocks: Any, threads: Any = None, source_code_or_path: Any, entry_name: str = "main_kernel",  # noqa: N802
                         cluster_dims: Any = None, prelude: Any = None) -> None:
    """TileLang's `T.CUDASourceCodeKernel`: launch a `__global__` function of CUDA source (inline
    text, or a path to a .cu file) on the grid `blocks` with `threads` per block. The entry
    (`entry_name`) takes the kernel's parameters in their order: a pointer per tensor, a value
    per scalar. The source is compiled as given (NVRTC: include "tl_cuda_common.h" for
    TileLang's types); `prelude` is put before it."""
    import json
    import os

    from tvm import tirx as _tirx
    from tvm.tirx.script.builder import ir as _builder

    from tilelang_core.language import Kernel

    text = str(source_code_or_path)
    if isinstance(source_code_or_path, os.PathLike) or (len(text) < 4096 and "\n" not in text and os.path.isfile(text)):
        with open(text, encoding="utf-8") as handle:
            text = handle.read()
    if "__global__" not in text:
        raise ValueError("T.CUDASourceCodeKernel: source_code_or_path holds no __global__ function (neither CUDA "
                         "source nor the path of a file with one)")
    if prelude:
        text = f"{prelude}\n{text}"
    extra = {} if cluster_dims is None else {"cluster_dims": cluster_dims}
    with Kernel(*blocks, threads=threads, **extra):
        with _builder.attr(_tirx.IntImm("int32", 0), ATTR_CUDA_SOURCE,
                           ir.StringImm(json.dumps({"source": text, "entry": str(entry_name)}))):
            _builder.evaluate(_tirx.IntImm("int32", 0))


LANGUAGE_NAMES["CUDASourceCodeKernel"] = CUDASourceCodeKernel
