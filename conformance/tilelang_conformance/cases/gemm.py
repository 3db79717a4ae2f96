"""GEMM: every transpose, the input/accumulator dtypes (the matrix-instruction claims), tile
shapes, sizes that are not multiples of the tile, 1-4 pipeline stages, block swizzling,
warp policies; fused epilogues and a split-K GEMM combined with atomics."""
from __future__ import annotations

import math

import numpy as np

from tilelang_core import language as T

from ..case import Arg, Case, NotApplicable, Spec, add, case
from ..data import tolerance

__all__ = ["gemm_kernel", "gemm_tolerance", "GEMM_DTYPES"]


def gemm_kernel(M, N, K, bM, bN, bK, in_dtype="float16", acc_dtype="float32", out_dtype="float32",
                trans_a=False, trans_b=False, stages=2, threads=128, swizzle=None,
                policy=0):
    """C = op(A) @ op(B), op a transpose where asked; A is (K, M) when `trans_a`, B is (N, K)
    when `trans_b`. `swizzle` is (panel_size, order) for T.use_swizzle."""
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    a_tile = (bK, bM) if trans_a else (bM, bK)
    b_tile = (bN, bK) if trans_b else (bK, bN)

    @T.prim_func
    def main(A: T.Tensor(a_shape, in_dtype), B: T.Tensor(b_shape, in_dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared(a_tile, in_dtype)
            B_s = T.alloc_shared(b_tile, in_dtype)
            C_f = T.alloc_fragment((bM, bN), acc_dtype)
            if swizzle is not None:
                T.use_swizzle(panel_size=swizzle[0], order=swizzle[1])
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                if trans_a:
                    T.copy(A[ko * bK, by * bM], A_s)
                else:
                    T.copy(A[by * bM, ko * bK], A_s)
                if trans_b:
                    T.copy(B[bx * bN, ko * bK], B_s)
                else:
                    T.copy(B[ko * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f, transpose_A=trans_a, transpose_B=trans_b, policy=policy)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


def gemm_tolerance(K: int, in_dtype: str, acc_dtype: str, out_dtype: str) -> tuple[float, float]:
    """Rounding of a K-long dot product plus the output's own rounding. float32 inputs allow
    TF32 tensor cores (10-bit mantissa), as TileLang does."""
    if out_dtype.startswith(("int", "uint")):
        return (0.0, 0.0)
    scale = math.sqrt(K)
    if acc_dtype == "float16":
        rtol, atol = 1e-2, 1e-2 * scale
    elif in_dtype == "float32":
        rtol, atol = 2e-3, 2e-3 * scale
    else:
        rtol, atol = 1e-4, 1e-4 * scale
    out_rtol, out_atol = tolerance(out_dtype)
    return (max(rtol, out_rtol), max(atol, out_atol))


def _operands(M, N, K, in_dtype, trans_a, trans_b):
    return (Arg("A", (K, M) if trans_a else (M, K), in_dtype),
            Arg("B", (N, K) if trans_b else (K, N), in_dtype))


def gemm_spec(M, N, K, bM, bN, bK, in_dtype="float16", acc_dtype="float32", out_dtype="float32",
              trans_a=False, trans_b=False, **kwargs) -> Spec:
    a, b = _operands(M, N, K, in_dtype, trans_a, trans_b)

    def reference(A, B):
        return {"C": (A.T if trans_a else A) @ (B.T if trans_b else B)}

    kernel = gemm_kernel(M, N, K, bM, bN, bK, in_dtype, acc_dtype, out_dtype, trans_a, trans_b, **kwargs)
    return Spec(kernel, [a, b, Arg("C", (M, N), out_dtype, "out")], reference,
                {"C": gemm_tolerance(K, in_dtype, acc_dtype, out_dtype)})


def fits_shared_memory(target, params: dict) -> None:
    """NotApplicable when one A tile and one B tile of `params` (single-buffered, the least a
    lowering needs) exceed the target's shared memory per block (`shared_memory_optin`)."""
    import tvm

    optin = getattr(getattr(target, "capabilities", None), "shared_memory_optin", None)
    if not optin:
        return
    size = tvm.runtime.DataType(params.get("in_dtype", "float16")).bits // 8
    need = (params["bM"] + params["bN"]) * params["bK"] * size
    if need > optin:
        raise NotApplicable(f"its {params['bM']}x{params['bK']} and {params['bK']}x{params['bN']} tiles need "
                            f"{need} bytes of shared memory; {target} allows {optin} per block "
                            f"(capability shared_memory_optin)")


def gemm_case(name: str, description: str, needs: tuple[str, ...], claims: tuple[str, ...] = (),
              **params) -> Case:
    def spec(target):
        fits_shared_memory(target, params)
        return gemm_spec(**params)

    return add(Case(f"gemm.{name}", "gemm", needs, spec, description, claims=claims))


_BASE = dict(M=192, N=128, K=128, bM=64, bN=64, bK=32)

for _ta, _tb, _tag in ((False, False, "nn"), (False, True, "nt"), (True, False, "tn"), (True, True, "tt")):
    gemm_case(f"transpose.{_tag}", f"float16 GEMM, transpose_A={_ta}, transpose_B={_tb}",
              ("float16", "float32"), trans_a=_ta, trans_b=_tb, **_BASE)

# (name, in, accumulator, out): the claims are the matrix-instruction dtype pairs they probe
GEMM_DTYPES = (
    ("float16", "float16", "float32", "float32"),
    ("bfloat16", "bfloat16", "float32", "float32"),
    ("float32", "float32", "float32", "float32"),
    ("int8", "int8", "int32", "int32"),
    ("float16_acc16", "float16", "float16", "float16"),
    ("float16_out16", "float16", "float32", "float16"),
    ("float8_e4m3fn", "float8_e4m3fn", "float32", "float32"),
    ("float8_e5m2", "float8_e5m2", "float32", "float32"),
    ("float8_e4m3fnuz", "float8_e4m3fnuz", "float32", "float32"),
)

for _name, _in, _acc, _out in GEMM_DTYPES:
    _claims = (f"matrix:{_in}->{_acc}",) + (("matrix:tfloat32->float32",) if _in == "float32" else ())
    if _in == "float32":  # wgmma's tf32 form takes B as (K, N) swapped (C^T = B^T A^T, B^T from registers)
        _claims += ("wgmma",)
    if _in == "int8":  # s8 wgmma reads B only K-major: mma.sync, tiles not descriptor-read, so cp.async
        _claims += ("cp.async",)
    gemm_case(f"dtype.{_name}", f"{_in} x {_in} -> {_acc} accumulator -> {_out}",
              tuple(dict.fromkeys((_in, _acc, _out))), _claims,
              M=128, N=128, K=64 if _acc == "float16" else 128, bM=64, bN=64, bK=32,
              in_dtype=_in, acc_dtype=_acc, out_dtype=_out)

# Warpgroup matrix instructions (wgmma): tf32, fp8 and s8 read both operands K-major by
# descriptor, so an fp8 or s8 dtype case with B as (K, N) runs warp-level MMA even where wgmma
# is declared (tf32 runs swapped, B^T from registers). These cases
# give every dtype pair A (M, K) and B (N, K) (transpose_B) on one whole warpgroup; they are
# the `wgmma` family's probes (the family is credited only by cases that name it, `probes.py`).
for _name, _in, _acc, _out in GEMM_DTYPES:
    if _acc == "float16" or _out != _acc or _in in ("bfloat16", "float8_e4m3fnuz"):
        continue  # no f16-accumulator form here; bf16 is f16's path; fnuz is AMD's; the output cast adds nothing
    gemm_case(f"kmajor.{_name}", f"{_in} x {_in} -> {_acc}, A (M, K) and B (N, K) K-major, 128 threads: "
              "the operand layout warpgroup instructions of every dtype read",
              tuple(dict.fromkeys((_in, _acc, _out))), (f"matrix:{_in}->{_acc}", "wgmma"),
              M=64, N=128, K=128, bM=64, bN=64, bK=64 if _in.startswith(("int8", "float8")) else 32,
              trans_b=True, in_dtype=_in, acc_dtype=_acc, out_dtype=_out)

for _bm, _bn, _bk in ((32, 32, 32), (64, 128, 32), (128, 128, 32), (128, 64, 64)):
    gemm_case(f"tile.{_bm}x{_bn}x{_bk}", f"float16 GEMM with {_bm}x{_bn}x{_bk} tiles",
              ("float16", "float32"), M=256, N=256, K=128, bM=_bm, bN=_bn, bK=_bk)

gemm_case("ragged", "M, N, K = 100, 72, 90: no dimension is a multiple of the 64x64x32 tile",
          ("float16", "float32"), M=100, N=72, K=90, bM=64, bN=64, bK=32)
gemm_case("ragged.tt", "both operands transposed, and M, N, K = 100, 72, 90 not multiples of the tile",
          ("float16", "float32"), M=100, N=72, K=90, bM=64, bN=64, bK=32, trans_a=True, trans_b=True)

for _stages in (1, 2, 3, 4):
    gemm_case(f"stages.{_stages}", f"T.Pipelined with num_stages={_stages} over 8 K tiles",
              ("float16", "float32"), M=128, N=128, K=256, bM=64, bN=64, bK=32, stages=_stages)

gemm_case("pipelined.tma", "T.Pipelined over tiles a matrix descriptor can read (128x128x64, 2 warpgroups, 3 "
          "stages, ragged M, N, K): on a target with TMA the tiles arrive through it, on transaction-counting "
          "mbarriers (async_barrier: the loads complete the bytes each stage expects), loaded by a warpgroup "
          "that gives its registers to the consumers (setmaxnreg); with TME, on ASYNC barriers",
          ("float16", "float32"), ("tma", "setmaxnreg", "tme", "async_barrier"), M=300, N=264, K=200, bM=128,
          bN=128, bK=64, stages=3, threads=256)

gemm_case("persistent", "more output tiles than an H100 has SMs (12 x 12 tiles of 64x64, ragged M and N) through "
          "T.Pipelined: where a warp-specialized pipeline's tiles run on persistent blocks (one per processor), "
          "each block walks several tiles, its loading warpgroup running ahead into the next tile's stages",
          ("float16", "float32"), M=750, N=760, K=72, bM=64, bN=64, bK=32, stages=2, threads=128)

gemm_case("two_warps", "float16 GEMM issued by two warps (64 threads, 64x64x32 tiles): too few threads for a "
          "warpgroup instruction, so warp-level matrix instructions take it on every target that has them, their "
          "operands loaded from shared memory by ldmatrix where the target declares it",
          ("float16", "float32"), ("ldmatrix",), M=128, N=192, K=96, bM=64, bN=64, bK=32, threads=64)

for _order in ("row", "col"):
    gemm_case(f"swizzle.{_order}", f"T.use_swizzle(panel_size=4, order={_order!r}) over an 8x6 grid",
              ("float16", "float32"), M=512, N=384, K=64, bM=64, bN=64, bK=32, swizzle=(4, _order))

for _policy, _pname in ((1, "full_row"), (2, "full_col")):
    gemm_case(f"policy.{_pname}", f"T.gemm with policy=GemmWarpPolicy.{['Square', 'FullRow', 'FullCol'][_policy]}",
              ("float16", "float32"), M=128, N=128, K=64, bM=64, bN=64, bK=32, policy=_policy)


def clear_accum_kernel(M, N, K, bM, bN):
    """One K step per block: T.gemm(..., clear_accum=True) instead of T.clear."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, K), "float16")
            B_s = T.alloc_shared((K, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.copy(A[by * bM, 0], A_s)
            T.copy(B[0, bx * bN], B_s)
            T.gemm(A_s, B_s, C_f, clear_accum=True)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


@case("gemm.clear_accum", feature="gemm", needs=("float16", "float32"), claims=("ldlms",))
def gemm_clear_accum():
    """T.gemm(clear_accum=True): the accumulator starts from zero without T.clear."""
    M, N, K = 128, 64, 32
    a, b = _operands(M, N, K, "float16", False, False)
    return Spec(clear_accum_kernel(M, N, K, 64, 64), [a, b, Arg("C", (M, N), "float32", "out")],
                lambda A, B: {"C": A @ B}, {"C": gemm_tolerance(K, "float16", "float32", "float32")})


def swizzled_layout_kernel(M, N, K, bM, bN, bK):
    """The seed GEMM with both shared tiles given swizzled layouts (T.annotate_layout)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.annotate_layout({A_s: T.make_swizzled_layout(A_s), B_s: T.make_swizzled_layout(B_s)})
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, ko * bK], A_s)
                T.copy(B[ko * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


@case("gemm.swizzle.layout", feature="gemm", needs=("float16", "float32"))
def gemm_swizzled_layout():
    """Shared tiles annotated with T.make_swizzled_layout (bank-conflict-free layouts)."""
    M, N, K = 128, 128, 128
    a, b = _operands(M, N, K, "float16", False, False)
    return Spec(swizzled_layout_kernel(M, N, K, 64, 64, 32), [a, b, Arg("C", (M, N), "float32", "out")],
                lambda A, B: {"C": A @ B}, {"C": gemm_tolerance(K, "float16", "float32", "float32")})


def splitk_kernel(M, N, K, bM, bN, bK, splits):
    """C += A @ B with K split over `splits` blocks per tile, combined by T.atomic_add."""
    k_per = K // splits

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), splits, threads=128) as (bx, by, bz):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(k_per, bK), num_stages=2):
                T.copy(A[by * bM, bz * k_per + ko * bK], A_s)
                T.copy(B[bz * k_per + ko * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f)
            for i, j in T.Parallel(bM, bN):
                if by * bM + i < M and bx * bN + j < N:
                    T.atomic_add(C[by * bM + i, bx * bN + j], C_f[i, j])

    return main


@case("gemm.split_k_atomic", feature="gemm", needs=("float16", "atomic_add.float32"))
def gemm_split_k():
    """Split-K GEMM: 4 blocks per output tile add their partial products atomically."""
    M, N, K = 96, 80, 256
    a, b = _operands(M, N, K, "float16", False, False)
    return Spec(splitk_kernel(M, N, K, 64, 64, 32, 4), [a, b, Arg("C", (M, N), "float32", "inout")],
                lambda A, B, C: {"C": C + A @ B}, {"C": gemm_tolerance(K, "float16", "float32", "float32")})


def epilogue_kernel(M, N, K, bM, bN, bK, kind):
    """C = epilogue(A @ B) in float16: "relu", "bias_relu" (+ Bias[j], then ReLU) or
    "residual" (+ D[i, j]). The epilogue runs on the accumulator fragment."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), Bias: T.Tensor((N,), "float16"),
             D: T.Tensor((M, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, ko * bK], A_s)
                T.copy(B[ko * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f)
            for i, j in T.Parallel(bM, bN):
                if kind == "relu":
                    C_f[i, j] = T.max(C_f[i, j], 0)
                elif kind == "bias_relu":
                    C_f[i, j] = T.max(C_f[i, j] + T.cast(Bias[bx * bN + j], "float32"), 0)
                else:
                    C_f[i, j] = C_f[i, j] + T.cast(D[by * bM + i, bx * bN + j], "float32")
            T.copy(C_f, C[by * bM, bx * bN])

    return main


def _epilogue_reference(kind):
    def reference(A, B, Bias, D):
        acc = A @ B
        if kind == "relu":
            return {"C": np.maximum(acc, 0)}
        if kind == "bias_relu":
            return {"C": np.maximum(acc + Bias[None, :], 0)}
        return {"C": acc + D}

    return reference


def epilogue_case(kind: str) -> Case:
    M, N, K = 128, 128, 96

    def make(target):
        a, b = _operands(M, N, K, "float16", False, False)
        args = [a, b, Arg("Bias", (N,), "float16"), Arg("D", (M, N), "float16"), Arg("C", (M, N), "float16", "out")]
        return Spec(epilogue_kernel(M, N, K, 64, 64, 32, kind), args, _epilogue_reference(kind),
                    {"C": gemm_tolerance(K, "float16", "float32", "float16")})

    return add(Case(f"gemm.epilogue.{kind}", "fused", ("float16", "float32"), make,
                    f"GEMM with a fused {kind} epilogue on the accumulator, float16 out"))


for _kind in ("relu", "bias_relu", "residual"):
    epilogue_case(_kind)


def warp_specialized_kernel(M, N, K, bM, bN, bK):
    """A loading thread group and a computing one (`T.ws`), handing tiles over through two
    barriers per step (`T.alloc_barrier`, `T.tma_copy`, `T.barrier_wait/arrive`)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=256) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            loaded = T.alloc_barrier(arrive_count=128)
            consumed = T.alloc_barrier(arrive_count=128)
            with T.ws(0):
                T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                with T.ws(1):
                    T.barrier_wait(consumed, (ko + 1) % 2)
                    T.tma_copy(A[by * bM, ko * bK], A_s, barrier=loaded)
                    T.tma_copy(B[ko * bK, bx * bN], B_s, barrier=loaded)
                    T.barrier_arrive(loaded)
                with T.ws(0):
                    T.barrier_wait(loaded, ko % 2)
                    T.gemm(A_s, B_s, C_f)
                    T.barrier_arrive(consumed)
            with T.ws(0):
                T.copy(C_f, C[by * bM, bx * bN])

    return main


@case("gemm.warp_specialized", feature="gemm", needs=("float16", "float32", "mbarrier"),
      claims=("mbarrier", "bar.sync"))
def gemm_warp_specialized():
    """Producer and consumer thread groups (T.ws) synchronized by mbarriers; the groups' own
    barriers are named ones (bar.sync), never the whole block's."""
    M, N, K = 192, 128, 160
    a, b = _operands(M, N, K, "float16", False, False)
    return Spec(warp_specialized_kernel(M, N, K, 64, 64, 32), [a, b, Arg("C", (M, N), "float32", "out")],
                lambda A, B: {"C": A @ B}, {"C": gemm_tolerance(K, "float16", "float32", "float32")})
