"""Every construct of the language, compiled for the CPU backend and checked against NumPy in
float64 on fresh random inputs (sizes not multiples of the tile; outputs poisoned first)."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang

from . import kernels

TARGET = "cpu"


def rand(rng, shape, dtype):
    if dtype == "bfloat16":
        import ml_dtypes

        return rng.uniform(-1, 1, shape).astype(ml_dtypes.bfloat16)
    if dtype.startswith("int"):
        return rng.integers(-8, 8, shape).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dtype)


def poisoned(shape, dtype):
    if dtype.startswith("int"):
        return np.full(shape, np.iinfo(dtype).min, dtype)
    if dtype == "bfloat16":
        import ml_dtypes

        return np.full(shape, np.nan, ml_dtypes.bfloat16)
    return np.full(shape, np.nan, dtype)


def rel_err(out, ref) -> float:
    out = np.asarray(out, dtype=np.float64)
    assert np.all(np.isfinite(out)), "output has NaN/inf: an element was not written"
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))


@pytest.mark.parametrize("in_dtype,acc,out_dtype,tol", [
    ("float32", "float32", "float32", 1e-5),
    ("float16", "float32", "float16", 2e-3),
    ("bfloat16", "float32", "float32", 1e-5),
    ("int8", "int32", "int32", 0),
])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_dtypes_and_transposes(in_dtype, acc, out_dtype, tol, trans_a, trans_b):
    rng = np.random.default_rng()
    M, N, K = 70, 52, 45
    func = kernels.gemm(M, N, K, 32, 32, 16, in_dtype, acc, out_dtype, trans_a, trans_b)
    kernel = tilelang.compile(func, target=TARGET)
    a = rand(rng, (K, M) if trans_a else (M, K), in_dtype)
    b = rand(rng, (N, K) if trans_b else (K, N), in_dtype)
    c = poisoned((M, N), out_dtype)
    kernel(a, b, c)
    a64 = a.astype(np.float64).T if trans_a else a.astype(np.float64)
    b64 = b.astype(np.float64).T if trans_b else b.astype(np.float64)
    ref = a64 @ b64
    if tol == 0:
        np.testing.assert_array_equal(c.astype(np.int64), ref.astype(np.int64))
    else:
        assert rel_err(c, ref) < tol


@pytest.mark.parametrize("stages", [1, 4])
def test_gemm_out_idx_and_stages(stages):
    rng = np.random.default_rng()
    func = kernels.gemm(65, 33, 100, 32, 16, 32, "float32", "float32", "float32", stages=stages)
    kernel = tilelang.compile(func, out_idx=[-1], target=TARGET)
    a, b = rand(rng, (65, 100), "float32"), rand(rng, (100, 33), "float32")
    c = kernel(a, b)
    assert isinstance(c, np.ndarray) and c.shape == (65, 33)
    assert rel_err(c, a.astype(np.float64) @ b) < 1e-5


@pytest.mark.parametrize("kind", ["max", "min", "sum", "abssum", "absmax"])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("clear", [True, False])
def test_reductions(kind, dim, clear):
    rng = np.random.default_rng()
    M, N, bM = 27, 19, 8
    kernel = tilelang.compile(kernels.reduce(M, N, kind, dim, clear, bM), target=TARGET)
    x = rand(rng, (M, N), "float32")
    blocks = -(-M // bM)
    y_shape = (M,) if dim == 1 else (blocks, N)
    y0 = rand(rng, y_shape, "float32")
    y = y0.copy()
    kernel(x, y)
    x64 = x.astype(np.float64)
    ops = {"max": np.max, "min": np.min, "sum": np.sum,
           "abssum": lambda v, axis: np.sum(np.abs(v), axis=axis),
           "absmax": lambda v, axis: np.max(np.abs(v), axis=axis)}
    combine = {"max": np.maximum, "min": np.minimum, "sum": np.add, "abssum": np.add, "absmax": np.maximum}
    if dim == 1:
        ref = ops[kind](x64, axis=1)
    else:
        # each block reduces its own rows; rows past M were loaded as 0 (masked tail)
        padded = np.zeros((blocks * bM, N))
        padded[:M] = x64
        ref = ops[kind](padded.reshape(blocks, bM, N), axis=1)
    if not clear:
        ref = combine[kind](y0.astype(np.float64), ref)
    assert rel_err(y, ref) < 1e-5


@pytest.mark.parametrize("dim,reverse", [(0, False), (1, False), (1, True), (0, True)])
def test_cumsum(dim, reverse):
    rng = np.random.default_rng()
    kernel = tilelang.compile(kernels.cumsum(9, 13, dim, reverse), out_idx=[1], target=TARGET)
    x = rand(rng, (9, 13), "float32")
    y = kernel(x)
    x64 = x.astype(np.float64)
    ref = np.flip(np.cumsum(np.flip(x64, dim), axis=dim), dim) if reverse else np.cumsum(x64, axis=dim)
    assert rel_err(y, ref) < 1e-5


def test_split_k_atomic_add():
    rng = np.random.default_rng()
    M, N, K = 40, 36, 96
    kernel = tilelang.compile(kernels.atomic_split_k(M, N, K, 16, 16, 16, 3), target=TARGET)
    a, b = rand(rng, (M, K), "float32"), rand(rng, (K, N), "float32")
    c = np.zeros((M, N), np.float32)  # accumulated into: zeros are the identity here
    kernel(a, b, c)
    assert rel_err(c, a.astype(np.float64) @ b) < 1e-5


def test_symbolic_dim_bound_at_call_time():
    rng = np.random.default_rng()
    kernel = tilelang.compile(kernels.symbolic_scale(), out_idx=[1], target=TARGET)
    for n in (1, 64, 130):
        x = rand(rng, (n, 4), "float32")
        y = kernel(x)
        assert y.shape == (n, 4)
        assert rel_err(y, x.astype(np.float64) * 3 + 1) < 1e-6


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int8", "int32", "int64", "uint8", "int16"])
def test_elementwise_dtypes(dtype):
    rng = np.random.default_rng()
    n = 1000
    kernel = tilelang.compile(kernels.elementwise(n, dtype), out_idx=[2], target=TARGET)
    if dtype == "uint8":
        a, b = rng.integers(0, 15, n).astype(dtype), rng.integers(0, 15, n).astype(dtype)
    else:
        a, b = rand(rng, n, dtype), rand(rng, n, dtype)
    c = kernel(a, b)
    ref = a.astype(np.float64) * b.astype(np.float64) + a.astype(np.float64)
    if dtype.startswith(("int", "uint")):
        expect = (a.astype(np.int64) * b.astype(np.int64) + a.astype(np.int64)).astype(dtype)
        np.testing.assert_array_equal(c, expect)
    else:
        tol = {"float16": 2e-3, "bfloat16": 1e-2}.get(dtype, 1e-6)
        assert rel_err(c, ref) < tol


def test_copy_region_and_transpose():
    rng = np.random.default_rng()
    kernel = tilelang.compile(kernels.copy_region(12, 7), out_idx=[1], target=TARGET)
    x = rand(rng, (12, 7), "float32")
    np.testing.assert_array_equal(kernel(x), x.T)


def test_math_functions():
    rng = np.random.default_rng()
    kernel = tilelang.compile(kernels.math_ops(300), out_idx=[1], target=TARGET)
    x = rand(rng, 300, "float32") * 3
    x64 = x.astype(np.float64)
    ref = (np.exp(x64) + np.log(np.abs(x64) + 1) + np.sqrt(np.abs(x64)) + 1 / np.sqrt(x64 * x64 + 1)
           + np.where(x64 > 0, 1.0, -1.0) + np.minimum(x64, 0.5) + np.exp2(x64))
    assert rel_err(kernel(x), ref) < 1e-5


def test_alloc_var_scalar_loop():
    rng = np.random.default_rng()
    kernel = tilelang.compile(kernels.alloc_var_count(50), out_idx=[1], target=TARGET)
    x = rand(rng, 50, "float32")
    assert abs(float(kernel(x)[0]) - x[x > 0].astype(np.float64).sum()) < 1e-4


def test_print_and_device_assert(capfd):
    x = np.arange(1, 5, dtype=np.float32)
    kernel = tilelang.compile(kernels.printing(4), out_idx=[1], target=TARGET)
    np.testing.assert_array_equal(kernel(x), x)
    out = capfd.readouterr().out
    assert "tile: s[3] = 4.0" in out and "kernels.py" in out


def test_device_assert_failure_is_reported():
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import numpy as np, tilelang_core as tilelang
        from tests.run import kernels
        k = tilelang.compile(kernels.printing(4), out_idx=[1], target="cpu")
        k(np.full(4, 5000, np.float32))
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode != 0
    assert "value out of range" in res.stderr + res.stdout


def test_seed_gemm_and_softmax_from_examples():
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    from kernels import matmul, softmax  # examples/kernels.py

    rng = np.random.default_rng()
    gemm = tilelang.compile(matmul(100, 90, 80, 32, 32, 32, "float16", "float", relu=True), out_idx=[2], target=TARGET)
    a, b = rand(rng, (100, 80), "float16"), rand(rng, (80, 90), "float16")
    ref = np.maximum(a.astype(np.float64) @ b.astype(np.float64), 0)
    assert rel_err(gemm(a, b), ref) < 2e-3
    sm = tilelang.compile(softmax(37, 64, 8), out_idx=[1], target=TARGET)
    x = rand(rng, (37, 64), "float32") * 4
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    assert rel_err(sm(x), e / e.sum(axis=1, keepdims=True)) < 1e-5


def test_reduce_and_cumsum_over_a_one_row_tile():
    """A 1 x N tile reduces and scans like an N vector (the unit dim is not dropped from dim)."""
    from tilelang_core import language as T

    @T.prim_func
    def main(X: T.Tensor((1, 40), "float32"), S: T.Tensor((1,), "float32"), C: T.Tensor((1, 40), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((1, 40), "float32")
            s = T.alloc_fragment((1,), "float32")
            c = T.alloc_shared((1, 40), "float32")
            T.copy(X, x)
            T.reduce_sum(x, s, dim=1)
            T.cumsum(x, c, dim=1)
            T.copy(s, S)
            T.copy(c, C)

    for target in (TARGET, "cuda/sm_80"):
        kernel = tilelang.compile(main, out_idx=[1, 2], target=target) if target == TARGET else None
        if kernel is None:
            from tilelang_core.jit.api import lower
            from tilelang_core.jit.options import CompileOptions
            from tilelang_core.plugin import get_plugin_manager

            lower(main, get_plugin_manager().parse_target(target), CompileOptions())
            continue
        x = np.random.default_rng().uniform(-1, 1, (1, 40)).astype(np.float32)
        s, c = kernel(x)
        assert rel_err(s, x.astype(np.float64).sum(axis=1)) < 1e-5
        assert rel_err(c, np.cumsum(x.astype(np.float64), axis=1)) < 1e-5
