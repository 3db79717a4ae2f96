"""Compile every program of the CUDA test set here, export it with inputs and references.

    python tests/cuda/export_programs.py OUT_DIR [--arch sm_90a] [--only NAME ...] [--verify-cpu]

For each program, OUT_DIR/<name>/ holds the kernel export (`kernel.json`, the cubin,
`kernel.src`: see `tilelang_core.runtime.export`), its random inputs as `.npy` (fixed
seeds, never zeros), a float64 NumPy reference per checked output, and `case.json`, which
says how to call the kernel and what to compare. `tests/cuda/run_exported.py OUT_DIR` runs
them on a GPU machine without TVM. `--verify-cpu` also runs every program on the CPU backend
here and compares with the same references (a check of the references themselves).

The programs: the seed kernels of `examples/kernels.py`, every program of
`tests/language/programs.py`, and the run set of `tests/run/kernels.py` (GEMMs with fp16 /
bf16 / fp32 / int8 inputs in all four transpose combinations and sizes that are not
multiples of the tile, every reduction, cumsum, atomics, symbolic dims, math, T.print and
T.device_assert), plus atomic max/min, and the functions of several launches of
`tests/jit/multi_launch_programs.py` (split/combine decoding through `T.alloc_global`
workspaces), and TileLang's dequantizing GEMV (`dequant_programs.py`: an imported lop3
decoder, `T.dp4a`, a warp allreduce). `PROGRAMS` is also what `test_cuda_programs.py` compiles.

bfloat16 arrays are stored as their uint16 bit patterns (NumPy has no bfloat16); case.json
names the dtype.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

__test__ = False

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# ---------------------------------------------------------------------------------------------
# What a case is
# ---------------------------------------------------------------------------------------------


@dataclass
class Out:
    """An output passed in by the caller: poisoned (NaN, or the dtype's minimum) before the run."""

    shape: tuple
    dtype: str


@dataclass
class Run:
    """One call of a kernel: its arguments and what to compare afterwards.

    `args` are what `kernel(*args)` takes (arrays, `Out` placeholders, Python numbers).
    `expect` maps a call-argument index (an output passed in, or an input updated in place)
    or "ret<i>" (the i-th returned output) to a float64 reference; `tol` overrides the
    dtype's (rtol, atol-as-a-fraction-of-max|ref|) for a key.
    """

    args: list
    expect: dict
    tol: dict = field(default_factory=dict)
    unchecked: str | None = None  # why the outputs are not compared (runs only)
    stdout: tuple = ()  # substrings the run's standard output must contain
    expect_error: str | None = None  # the run must fail and its output contain this


@dataclass
class Program:
    name: str
    build: Callable[[], Any]  # -> T.prim_func
    run: Callable[[np.random.Generator], Run]
    out_idx: tuple = ()


# (rtol, atol as a fraction of max |ref|) by output dtype
TOLERANCES = {
    "float64": (1e-9, 1e-9), "float32": (1e-5, 1e-5), "float16": (1e-2, 1e-2),
    "bfloat16": (1e-2, 1e-2),
}

# ---------------------------------------------------------------------------------------------
# Inputs: fixed seeds, never zeros
# ---------------------------------------------------------------------------------------------


def bf16_round(values: np.ndarray) -> np.ndarray:
    """float32 -> the nearest bfloat16 values (round to nearest even), still as float32."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint32) << 16
    return rounded.view(np.float32)


class Tensor:
    """An input array: `value` is what the kernel sees (in float64 for references)."""

    def __init__(self, array: np.ndarray, dtype: str):
        self.array, self.dtype = array, dtype

    @property
    def value(self) -> np.ndarray:
        return self.array.astype(np.float64)

    def stored(self) -> np.ndarray:
        """The array as written to .npy (bfloat16 as uint16 bits)."""
        if self.dtype == "bfloat16":
            return (self.array.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        return self.array


def rand(rng: np.random.Generator, shape, dtype: str, scale: float = 1.0) -> Tensor:
    """Uniform in +-[0.05, 1] * scale (floats) or +-[1, 8] (integers): no zeros."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    sign = rng.choice([-1, 1], shape)
    if dtype.startswith(("int", "uint")):
        magnitude = rng.integers(1, 9, shape)
        values = magnitude if dtype.startswith("uint") else magnitude * sign
        return Tensor(values.astype(dtype), dtype)
    values = (rng.uniform(0.05, 1.0, shape) * sign * scale).astype(np.float32)
    if dtype == "bfloat16":
        return Tensor(bf16_round(values), dtype)
    return Tensor(values.astype(dtype), dtype)


# ---------------------------------------------------------------------------------------------
# The programs
# ---------------------------------------------------------------------------------------------


def _import(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _gemm_programs(run_kernels) -> list[Program]:
    M, N, K = 70, 52, 45
    variants = [("float32", "float32", "float32"), ("float16", "float32", "float16"),
                ("bfloat16", "float32", "float32"), ("int8", "int32", "int32")]
    out = []
    for in_dtype, acc, out_dtype in variants:
        for ta in (False, True):
            for tb in (False, True):
                def run(rng, in_dtype=in_dtype, out_dtype=out_dtype, ta=ta, tb=tb):
                    a = rand(rng, (K, M) if ta else (M, K), in_dtype)
                    b = rand(rng, (N, K) if tb else (K, N), in_dtype)
                    ref = (a.value.T if ta else a.value) @ (b.value.T if tb else b.value)
                    # float32 inputs run on tensor cores as tf32 (10-bit mantissa), as in
                    # TileLang: products of K=45 tf32-rounded values, about 2^-11 relative each
                    tol = {2: (5e-3, 2e-3)} if in_dtype == "float32" else {}
                    return Run([a, b, Out((M, N), out_dtype)], {2: ref}, tol=tol)

                tag = f"{'T' if ta else 'N'}{'T' if tb else 'N'}"
                out.append(Program(
                    f"gemm_{in_dtype}_{tag}",
                    lambda in_dtype=in_dtype, acc=acc, out_dtype=out_dtype, ta=ta, tb=tb:
                        run_kernels.gemm(M, N, K, 32, 32, 16, in_dtype, acc, out_dtype, ta, tb),
                    run))
    return out


_REDUCE = {"max": np.max, "min": np.min, "sum": np.sum,
           "abssum": lambda v, axis: np.sum(np.abs(v), axis=axis),
           "absmax": lambda v, axis: np.max(np.abs(v), axis=axis)}
_COMBINE = {"max": np.maximum, "min": np.minimum, "sum": np.add, "abssum": np.add, "absmax": np.maximum}


def _reduce_programs(run_kernels) -> list[Program]:
    M, N, bM = 27, 19, 8
    blocks = -(-M // bM)
    out = []
    for kind in _REDUCE:
        for dim in (0, 1):
            for clear in (True, False):
                def run(rng, kind=kind, dim=dim, clear=clear):
                    x = rand(rng, (M, N), "float32")
                    y0 = rand(rng, (M,) if dim == 1 else (blocks, N), "float32")
                    if dim == 1:
                        ref = _REDUCE[kind](x.value, axis=1)
                    else:  # each block reduces its own rows; rows past M load as 0
                        padded = np.zeros((blocks * bM, N))
                        padded[:M] = x.value
                        ref = _REDUCE[kind](padded.reshape(blocks, bM, N), axis=1)
                    if not clear:
                        ref = _COMBINE[kind](y0.value, ref)
                    return Run([x, y0], {1: ref})

                out.append(Program(f"reduce_{kind}_dim{dim}_{'clear' if clear else 'accumulate'}",
                                   lambda kind=kind, dim=dim, clear=clear:
                                       run_kernels.reduce(M, N, kind, dim, clear, bM), run))
    return out


def _cumsum_programs(run_kernels) -> list[Program]:
    out = []
    for dim in (0, 1):
        for reverse in (False, True):
            def run(rng, dim=dim, reverse=reverse):
                x = rand(rng, (9, 13), "float32")
                v = x.value
                ref = np.flip(np.cumsum(np.flip(v, dim), axis=dim), dim) if reverse else np.cumsum(v, axis=dim)
                return Run([x], {"ret0": ref})

            out.append(Program(f"cumsum_dim{dim}{'_reverse' if reverse else ''}",
                               lambda dim=dim, reverse=reverse: run_kernels.cumsum(9, 13, dim, reverse),
                               run, out_idx=(1,)))
    return out


def atomic_max_min(M, N, block_M):
    """Column max (float32) and min (int32) over all rows by T.atomic_max / T.atomic_min,
    combined with the outputs' initial values; column sums in float16 by T.atomic_add."""
    from tilelang_core import language as T

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), I: T.Tensor((M, N), "int32"), Mx: T.Tensor((N,), "float32"),
             Mn: T.Tensor((N,), "int32"), S: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(M, block_M), threads=64) as bx:
            a = T.alloc_fragment((block_M, N), "float32")
            ints = T.alloc_fragment((block_M, N), "int32")
            T.copy(A[bx * block_M, 0], a)
            T.copy(I[bx * block_M, 0], ints)
            for i, j in T.Parallel(block_M, N):
                if bx * block_M + i < M:
                    T.atomic_max(Mx[j], a[i, j])
                    T.atomic_min(Mn[j], ints[i, j])
                    T.atomic_add(S[j], a[i, j])

    return main


def _atomic_programs(run_kernels) -> list[Program]:
    def split_k(rng):
        M, N, K = 40, 36, 96
        a, b, c0 = rand(rng, (M, K), "float32"), rand(rng, (K, N), "float32"), rand(rng, (M, N), "float32")
        return Run([a, b, c0], {2: c0.value + a.value @ b.value})

    def max_min(rng):
        M, N = 43, 24
        a, ints = rand(rng, (M, N), "float32"), rand(rng, (M, N), "int32")
        mx, mn, s = rand(rng, N, "float32"), rand(rng, N, "int32"), rand(rng, N, "float16")
        return Run([a, ints, mx, mn, s], {
            2: np.maximum(mx.value, a.value.max(axis=0)),
            3: np.minimum(mn.value, ints.value.min(axis=0)),
            4: s.value + a.value.sum(axis=0),
        }, tol={4: (2e-2, 2e-2)})  # 43 float16 additions, each rounded

    return [
        Program("atomic_split_k", lambda: run_kernels.atomic_split_k(40, 36, 96, 16, 16, 16, 3), split_k),
        Program("atomic_max_min_add", lambda: atomic_max_min(43, 24, 8), max_min),
    ]


def _misc_run_programs(run_kernels) -> list[Program]:
    def symbolic(rng):
        x = rand(rng, (130, 4), "float32")
        return Run([x], {"ret0": x.value * 3 + 1})

    def copy_region(rng):
        x = rand(rng, (12, 7), "float32")
        return Run([x], {"ret0": x.value.T})

    def math(rng):
        x = rand(rng, 300, "float32", scale=3.0)
        v = x.value
        ref = (np.exp(v) + np.log(np.abs(v) + 1) + np.sqrt(np.abs(v)) + 1 / np.sqrt(v * v + 1)
               + np.where(v > 0, 1.0, -1.0) + np.minimum(v, 0.5) + np.exp2(v))
        return Run([x], {"ret0": ref})

    def alloc_var(rng):
        x = rand(rng, 50, "float32")
        return Run([x], {"ret0": np.array([x.value[x.value > 0].sum()])})

    def printing(rng):
        x = Tensor(np.arange(1, 5, dtype=np.float32), "float32")
        return Run([x], {"ret0": x.value}, stdout=("tile", "4.000000"))

    def assert_fires(rng):
        x = Tensor(np.full(4, 5000, np.float32), "float32")
        return Run([x], {}, expect_error="value out of range")

    out = [
        Program("symbolic_scale", lambda: run_kernels.symbolic_scale(), symbolic, out_idx=(1,)),
        Program("copy_region_transpose", lambda: run_kernels.copy_region(12, 7), copy_region, out_idx=(1,)),
        Program("math_ops", lambda: run_kernels.math_ops(300), math, out_idx=(1,)),
        Program("alloc_var_loop", lambda: run_kernels.alloc_var_count(50), alloc_var, out_idx=(1,)),
        Program("print_and_assert", lambda: run_kernels.printing(4), printing, out_idx=(1,)),
        Program("device_assert_fires", lambda: run_kernels.printing(4), assert_fires, out_idx=(1,)),
    ]
    for dtype in ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8"):
        def elementwise(rng, dtype=dtype):
            a, b = rand(rng, 1000, dtype), rand(rng, 1000, dtype)
            ref = a.value * b.value + a.value
            if dtype.startswith(("int", "uint")):  # wraps like the kernel's integer type
                ref = (a.array.astype(np.int64) * b.array.astype(np.int64) + a.array.astype(np.int64)).astype(dtype).astype(np.float64)
            return Run([a, b], {"ret0": ref})

        out.append(Program(f"elementwise_{dtype}", lambda dtype=dtype: run_kernels.elementwise(1000, dtype),
                           elementwise, out_idx=(2,)))
    return out


def _example_programs() -> list[Program]:
    ex = _import("tilelang_examples_kernels", REPO / "examples" / "kernels.py")

    def gemm(rng, relu, M, N, K):
        a, b = rand(rng, (M, K), "float16"), rand(rng, (K, N), "float16")
        ref = a.value @ b.value
        return Run([a, b], {"ret0": np.maximum(ref, 0) if relu else ref})

    def softmax(rng, M=100, N=64):
        x = rand(rng, (M, N), "float32", scale=4.0)
        e = np.exp(x.value - x.value.max(axis=1, keepdims=True))
        return Run([x], {"ret0": e / e.sum(axis=1, keepdims=True)})

    def add(rng, n=5000):
        a, b = rand(rng, n, "float32"), rand(rng, n, "float32")
        return Run([a, b], {"ret0": a.value + b.value})

    return [
        Program("example_matmul", lambda: ex.matmul(256, 192, 160, 64, 64, 32),
                lambda rng: gemm(rng, False, 256, 192, 160), out_idx=(2,)),
        Program("example_matmul_relu_ragged", lambda: ex.matmul(100, 70, 90, 32, 32, 16, relu=True),
                lambda rng: gemm(rng, True, 100, 70, 90), out_idx=(2,)),
        Program("example_softmax", lambda: ex.softmax(100, 64, 4), softmax, out_idx=(1,)),
        Program("example_elementwise_add", lambda: ex.elementwise_add(5000), add, out_idx=(2,)),
    ]


def _multi_launch_programs() -> list[Program]:
    ml = _import("multi_launch_programs", REPO / "tests" / "jit" / "multi_launch_programs.py")

    def decode(rng, dtype, batch, heads, groups, seqlen, dim, **_):
        q, k, v = (rand(rng, shape, dtype) for shape in
                   ((batch, heads, dim), (batch, seqlen, groups, dim), (batch, seqlen, groups, dim)))
        # float32 gemms run on tensor cores as tf32 (10-bit mantissa)
        tol = {3: (5e-3, 2e-3)} if dtype == "float32" else {}
        return Run([q, k, v, Out((batch, heads, dim), dtype)], {3: ml.decode_reference(q.value, k.value, v.value)},
                   tol=tol)

    def symbolic_workspace(rng, n=29):
        a = rand(rng, (n, 4), "float32")
        return Run([a], {"ret0": (a.value[:, 0] + a.value[:, 3]) * 10.0 + np.arange(n) // 8})

    def handoff(rng, N=70, M=9):
        a = rand(rng, (N, M), "float32")
        return Run([a, Out((N, M), "float32"), Out((M,), "float32")], {1: a.value * 2.0, 2: (a.value * 2.0).sum(0)})

    f16 = dict(batch=2, heads=32, groups=2, seqlen=256, dim=64, num_split=4, block_N=32)
    return [
        Program("multi_launch_decode_float16", lambda: ml.split_decode(**f16, dtype="float16", threads=128),
                lambda rng: decode(rng, "float16", **f16)),
        Program("multi_launch_decode_float32", lambda: ml.split_decode(**ml.SHAPE),
                lambda rng: decode(rng, "float32", **ml.SHAPE)),
        Program("multi_launch_symbolic_workspace", ml.symbolic_workspace, symbolic_workspace, out_idx=(1,)),
        Program("multi_launch_handoff", lambda: ml.handoff(70, 9), handoff),
    ]


def _language_programs() -> list[Program]:
    from tests.language import programs as lp

    def matmul(rng, M=256, N=256, K=256):
        a, b = rand(rng, (M, K), "float16"), rand(rng, (K, N), "float16")
        return Run([a, b, Out((M, N), "float16")], {2: np.maximum(a.value @ b.value, 0)})

    def matmul_transposed(rng, M=256, N=256, K=256, bK=32):
        a, b = rand(rng, (K, M), "float16"), rand(rng, (N, K), "float16")
        # clear_accum=True clears C before every gemm: only the last k-block remains
        last = slice(K - bK, K)
        return Run([a, b, Out((M, N), "float32")], {2: a.value[last].T @ b.value[:, last].T})

    def softmax(rng, M=256, N=128):
        x = rand(rng, (M, N), "float32")
        return Run([x, Out((M, N), "float32")], {},
                   unchecked="reduce_sum(clear=False) adds to row_sum, which is never initialized")

    def elementwise(rng, n=4096):
        a, b = rand(rng, n, "float32"), rand(rng, n, "float32")
        return Run([a, b, Out((n,), "float32")], {2: a.value + b.value})

    def symbolic_copy(rng, m=100):
        a = rand(rng, (m, 64), "float16")
        return Run([a, Out((m, 64), "float16")], {1: a.value})

    def atomic_accumulate(rng, M=256, N=256, block=32):
        a, c0 = rand(rng, (M, N), "float32"), rand(rng, (block, block), "float32")
        return Run([a, c0], {}, unchecked="atomic adds, maxes and mins of different blocks interleave "
                                         "in any order: the result is not deterministic")

    def debug_ops(rng, n=16):
        a = rand(rng, (n, n), "float32")
        rows = np.cumsum(a.value, axis=1)
        ref = np.flip(np.cumsum(np.flip(rows, 0), axis=0), 0)
        return Run([a, Out((n, n), "float32")], {1: ref}, stdout=("tile", "[programs.py:"))

    def scalar_vars(rng, n=128):
        a = rand(rng, n, "int32")
        a.array = np.abs(a.array)  # a positive total takes the store branch
        return Run([a, Out((1,), "int32")], {1: np.array([a.value.sum() * n])})

    def layouts(rng):
        a = rand(rng, (64, 64), "float16")
        return Run([a, Out((64, 64), "float16")], {1: a.value})

    def loop_kinds(rng, N=64, n=50):
        a = rand(rng, (N, N), "float32")
        ref = a.value.copy()
        ref[0:4, 0:4] = 1.0
        ref[1:n, 0] = np.arange(1, n)
        for i in range(0, N, 2):
            ref[i, 1] = ref[i, 0] if i > 2 else np.inf
        return Run([a, n], {0: ref})

    return [
        Program("lang_matmul", lambda: lp.matmul(256, 256, 256, 128, 128, 32), matmul),
        Program("lang_matmul_transposed", lambda: lp.matmul_transposed(256, 256, 256, 64, 64, 32), matmul_transposed),
        Program("lang_softmax", lambda: lp.softmax(256, 128, 16), softmax),
        Program("lang_elementwise_add", lambda: lp.elementwise_add(4096), elementwise),
        Program("lang_symbolic_copy", lp.symbolic_copy, symbolic_copy),
        Program("lang_atomic_accumulate", lambda: lp.atomic_accumulate(256, 256, 32), atomic_accumulate),
        Program("lang_debug_ops", lambda: lp.debug_ops(16), debug_ops),
        Program("lang_scalar_vars", lambda: lp.scalar_vars(128), scalar_vars),
        Program("lang_layouts", lp.layouts, layouts),
        Program("lang_loop_kinds", lambda: lp.loop_kinds(64), loop_kinds),
    ]


def _dequant_programs() -> list[Program]:
    dq = _import("tilelang_dequant_programs", HERE / "dequant_programs.py")
    N, K = 256, 1024

    def case(rng, in_dtype, decode):
        if in_dtype == "int8":
            a = Tensor(rng.integers(-128, 128, (1, K)).astype(np.int8), "int8")
        else:
            a = rand(rng, (1, K), "float16")
        b = Tensor(rng.integers(-128, 128, (N, K // 2)).astype(np.int8), "int8")
        out = Out((1, N), "int32" if in_dtype == "int8" else "float16")
        return Run([a, b, out], {2: dq.reference(a.array, b.array, decode)})

    return [
        Program(f"dequant_gemv_{in_dtype}_{decode}",
                lambda in_dtype=in_dtype, decode=decode: dq.gemv(N, K, in_dtype, decode=decode),
                lambda rng, in_dtype=in_dtype, decode=decode: case(rng, in_dtype, decode))
        for in_dtype, decode in (("float16", "lop3"), ("float16", "tir"), ("int8", "tir"))
    ]


def _core_fix_programs() -> list[Program]:
    """The kernels of the core's regression tests for floating fragments, fragments in a
    T.macro and vector accesses (tests/transform): on a GPU they prove what the host
    emulation showed."""
    fl = _import("test_floating_fragments", REPO / "tests" / "transform" / "test_floating_fragments.py")
    ic = _import("test_inline_constants", REPO / "tests" / "transform" / "test_inline_constants.py")
    vz = _import("test_vectorize", REPO / "tests" / "transform" / "test_vectorize.py")

    def serial_fill(rng):
        a = rand(rng, (4, 64), "float32")
        return Run([a, Out((4, 64), "float32")], {1: a.value * 2 + 1})

    def row_sum(rng, n):
        x = rand(rng, (3, n), "float32")
        return Run([x, Out((3,), "float32")], {1: x.value.sum(1)}, tol={1: (1e-5, 1e-5)})

    def replicated_reduce(rng):
        a = rand(rng, (3, 64), "float32")
        return Run([a, Out((3, 2), "float32")], {1: np.stack([a.value.sum(1), a.value.max(1)], axis=1)})

    def softmax(rng):
        a = rand(rng, (ic.M, ic.N), "float32", scale=4.0)
        e = np.exp(a.value - a.value.max(1, keepdims=True))
        return Run([a, Out((ic.M, ic.N), "float32")], {1: e / e.sum(1, keepdims=True)})

    def centered(rng):
        a = rand(rng, (ic.M, ic.N), "float32")
        return Run([a, Out((ic.M, ic.N), "float32")], {1: a.value - a.value.max(1, keepdims=True)})

    def axpy(rng, M, N, dtype):
        a = rand(rng, (M, N), dtype)
        return Run([a, Out((M, N), dtype), Out((M, N), dtype)], {1: a.value, 2: a.value * 3})

    return [
        Program("core_floating_serial_fill", lambda: fl.serial_fill(4, 64), serial_fill),
        Program("core_floating_row_sum", lambda: fl.chunked_row_sum(3, 4096, 2048), lambda rng: row_sum(rng, 4096)),
        Program("core_floating_row_sum_ragged", lambda: fl.chunked_row_sum(3, 3000, 1024),
                lambda rng: row_sum(rng, 3000)),
        Program("core_floating_replicated_reduce", lambda: fl.reduce_serial_fill(3, 64), replicated_reduce),
        Program("core_macro_softmax", lambda: ic.softmax_kernel(True), softmax),
        Program("core_macro_allocates_fragment", lambda: ic.centered_kernel(), centered),
        Program("core_vector_axpy_float16", lambda: vz.axpy(256, 128, 16, "float16"),
                lambda rng: axpy(rng, 256, 128, "float16")),
        Program("core_vector_axpy_ragged_float32", lambda: vz.axpy(12, 30, 4, "float32"),
                lambda rng: axpy(rng, 12, 30, "float32")),
        Program("core_vector_axpy_odd_float32", lambda: vz.axpy(9, 15, 3, "float32"),
                lambda rng: axpy(rng, 9, 15, "float32")),
    ]


def programs() -> dict[str, Program]:
    """Every program of the CUDA test set, by name."""
    from tests.run import kernels as run_kernels

    found = (_example_programs() + _language_programs() + _gemm_programs(run_kernels)
             + _reduce_programs(run_kernels) + _cumsum_programs(run_kernels)
             + _atomic_programs(run_kernels) + _misc_run_programs(run_kernels) + _multi_launch_programs()
             + _dequant_programs() + _core_fix_programs())
    table = {p.name: p for p in found}
    assert len(table) == len(found), "duplicate program names"
    return table


# ---------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------


def _seed(name: str) -> int:
    return sum((i + 1) * ord(ch) for i, ch in enumerate(name)) % (2**31)


def _dtype_of_param(kernel, index: int) -> str:
    return kernel.meta.params[index].dtype


def describe(program: Program, kernel, folder: Path) -> dict:
    """Write the inputs and references of `program` into `folder`; return case.json's data."""
    run = program.run(np.random.default_rng(_seed(program.name)))
    user_params = [i for i in range(len(kernel.meta.params) - len(kernel.meta.symbols))
                   if i not in kernel.meta.out_idx]
    if len(run.args) != len(user_params):
        raise ValueError(f"{program.name}: the case passes {len(run.args)} arguments, the kernel takes "
                         f"{len(user_params)}")
    args = []
    for position, (arg, param) in enumerate(zip(run.args, user_params)):
        if isinstance(arg, Tensor):
            file = f"arg{position}.npy"
            np.save(folder / file, arg.stored())
            args.append({"kind": "tensor", "file": file, "dtype": arg.dtype})
        elif isinstance(arg, Out):
            args.append({"kind": "output", "shape": list(arg.shape), "dtype": arg.dtype})
        else:
            args.append({"kind": "scalar", "value": arg, "dtype": _dtype_of_param(kernel, param)})
    checks = []
    for number, (key, ref) in enumerate(run.expect.items()):
        if isinstance(key, int):
            dtype = _dtype_of_param(kernel, user_params[key])
        else:
            dtype = _dtype_of_param(kernel, kernel.meta.out_idx[int(key[3:])])
        rtol, atol = run.tol.get(key, TOLERANCES.get(dtype, (0.0, 0.0)))
        file = f"ref{number}.npy"
        np.save(folder / file, np.asarray(ref, np.float64))
        checks.append({"output": key, "file": file, "dtype": dtype, "rtol": rtol, "atol": atol})
    return {"name": program.name, "args": args, "checks": checks, "unchecked": run.unchecked,
            "stdout": list(run.stdout), "expect_error": run.expect_error}


def export_all(out_dir: Path, arch: str, names: list[str] | None = None, verbose: bool = True) -> list[str]:
    """Compile, export and describe each program; returns the names exported."""
    import tilelang_core

    table = programs()
    unknown = sorted(set(names or ()) - set(table))
    if unknown:
        raise SystemExit(f"unknown program(s): {', '.join(unknown)}; known: {', '.join(sorted(table))}")
    out_dir.mkdir(parents=True, exist_ok=True)
    done = []
    for name, program in table.items():
        if names and name not in names:
            continue
        start = time.perf_counter()
        kernel = tilelang_core.compile(program.build(), out_idx=list(program.out_idx) or None,
                                       target=f"cuda/{arch}")
        folder = out_dir / name
        kernel.export(folder)
        case = describe(program, kernel, folder)
        (folder / "case.json").write_text(json.dumps(case, indent=2))
        done.append(name)
        if verbose:
            print(f"  {name:40s} {time.perf_counter() - start:6.2f} s", flush=True)
    return done


# ---------------------------------------------------------------------------------------------
# Checking the references on the CPU backend
# ---------------------------------------------------------------------------------------------


def verify_on_cpu(names: list[str] | None = None) -> int:
    """Run each program on the CPU backend with the exported inputs; count mismatches."""
    import ml_dtypes

    import tilelang_core

    failures = 0
    for name, program in programs().items():
        if names and name not in names:
            continue
        run = program.run(np.random.default_rng(_seed(name)))
        if run.unchecked or run.expect_error:
            print(f"  skip {name}: {run.unchecked or 'expects an error'}")
            continue
        try:
            kernel = tilelang_core.compile(program.build(), out_idx=list(program.out_idx) or None, target="cpu")
        except Exception as exc:  # noqa: BLE001 - report and go on
            print(f"  n/a  {name}: the CPU backend does not compile it ({type(exc).__name__}: {str(exc)[:120]})")
            continue

        def host(arg):
            if isinstance(arg, Tensor):
                return arg.array.astype(ml_dtypes.bfloat16) if arg.dtype == "bfloat16" else arg.array.copy()
            if isinstance(arg, Out):
                dtype = ml_dtypes.bfloat16 if arg.dtype == "bfloat16" else np.dtype(arg.dtype)
                return np.full(arg.shape, np.nan, dtype) if arg.dtype.startswith(("float", "bfloat")) \
                    else np.full(arg.shape, np.iinfo(arg.dtype).min, arg.dtype)
            return arg

        args = [host(a) for a in run.args]
        result = kernel(*args)
        results = result if isinstance(result, tuple) else (result,)
        for key, ref in run.expect.items():
            out = args[key] if isinstance(key, int) else results[int(key[3:])]
            dtype = str(out.dtype)
            rtol, atol = run.tol.get(key, TOLERANCES.get(dtype, (0.0, 0.0)))
            ok, detail = compare(np.asarray(out).astype(np.float64), ref, rtol, atol)
            failures += not ok
            print(f"  {'ok  ' if ok else 'FAIL'} {name}[{key}] {detail}")
    return failures


def compare(out: np.ndarray, ref: np.ndarray, rtol: float, atol_fraction: float) -> tuple[bool, str]:
    """Every element: |out - ref| <= atol + rtol |ref| (atol = atol_fraction * max |ref|);
    infinities and NaNs must match exactly. Returns (passed, a one-line summary)."""
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    if out.shape != ref.shape:
        return False, f"shape {out.shape} != reference {ref.shape}"
    finite = np.isfinite(ref)
    scale = float(np.max(np.abs(ref[finite]))) if finite.any() else 1.0
    atol = atol_fraction * max(scale, 1e-30)
    with np.errstate(invalid="ignore"):
        err = np.where(finite, np.abs(out - ref), 0.0)
        bound = atol + rtol * np.abs(np.where(finite, ref, 0.0))
        bad = (err > bound) | (finite & ~np.isfinite(out))
        bad |= ~finite & ~((out == ref) | (np.isnan(out) & np.isnan(ref)))
        worst = float(np.max(np.where(finite, err / np.maximum(bound, 1e-300), 0.0)))
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        return False, (f"{int(bad.sum())}/{bad.size} elements differ; first at {first}: "
                       f"got {out[first]!r}, expected {ref[first]!r}")
    return True, f"max error {worst:.2f} of tolerance"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--arch", default="sm_90a", help="CUDA arch to compile for (default sm_90a)")
    parser.add_argument("--only", nargs="*", help="export only these programs")
    parser.add_argument("--verify-cpu", action="store_true", help="also check the references on the CPU backend")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    done = export_all(args.out_dir, args.arch, args.only)
    size = sum(f.stat().st_size for f in args.out_dir.rglob("*") if f.is_file())
    print(f"exported {len(done)} programs for {args.arch} to {args.out_dir} "
          f"({size / 2**20:.1f} MiB, {time.perf_counter() - start:.1f} s)")
    if args.verify_cpu:
        return 1 if verify_on_cpu(args.only) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
