"""The JIT object and the eager style (`T.const`, annotations in the body, `T.empty`), on the CPU."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.jit.eager import EagerStyleError
from tilelang_core.language.eager import EagerDeclarationError


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))


@tilelang.jit(target="cpu")
def matmul_relu(A, B, block_M: int, block_N: int, block_K: int, dtype=T.float32):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=64) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), T.float32)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        for i, j in T.Parallel(block_M, block_N):
            C_local[i, j] = T.max(C_local[i, j], 0)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C


def _inputs(m, k, n, rng):
    return rng.uniform(-1, 1, (m, k)).astype(np.float32), rng.uniform(-1, 1, (k, n)).astype(np.float32)


def test_eager_function_compiles_per_shape_and_runs():
    rng = np.random.default_rng()
    assert matmul_relu.is_eager and matmul_relu.__name__ == "matmul_relu"
    a, b = _inputs(64, 32, 48, rng)
    c = matmul_relu(a, b, 32, 16, 16)
    np.testing.assert_allclose(c, np.maximum(a.astype(np.float64) @ b, 0), rtol=1e-5, atol=1e-5)
    kernel = matmul_relu.compile(M=64, N=48, K=32, block_M=32, block_N=16, block_K=16)
    assert [p.shape for p in kernel.meta.params] == [(64, 32), (32, 48), (64, 48)]
    assert kernel.meta.out_idx == (2,)
    a2, b2 = _inputs(96, 32, 48, rng)  # another M: another kernel, M a constant in each
    np.testing.assert_allclose(matmul_relu(a2, b2, 32, 16, 16), np.maximum(a2.astype(np.float64) @ b2, 0), rtol=1e-5, atol=1e-5)
    assert matmul_relu.compile(M=96, N=48, K=32, block_M=32, block_N=16, block_K=16) is not kernel


def test_compile_names_a_missing_const_and_an_unknown_keyword():
    with pytest.raises(EagerStyleError, match=r"no value for T.const 'M': pass M=<int> or a tensor for 'A' \(its dim 0\)"):
        matmul_relu.compile(N=48, K=32, block_M=32, block_N=16, block_K=16)
    with pytest.raises(EagerStyleError, match=r"unexpected keyword\(s\) Q"):
        matmul_relu.compile(M=64, N=48, K=32, Q=1, block_M=32, block_N=16, block_K=16)
    with pytest.raises(EagerStyleError, match=r"missing compile-time argument\(s\) block_K"):
        matmul_relu.compile(M=64, N=48, K=32, block_M=32, block_N=16)


@tilelang.jit(target="cpu")
def scale_rows(X, s, n_scale: int):
    N = T.dynamic("n")
    X: T.Tensor((N, 8), T.float32)
    s: T.float32
    Y = T.empty((N, 8), T.float32)
    Z = T.empty((N, 8), T.float32)
    with T.Kernel(T.ceildiv(N, 4), threads=32) as bx:
        for i, j in T.Parallel(4, 8):
            if bx * 4 + i < N:
                Y[bx * 4 + i, j] = X[bx * 4 + i, j] * s * n_scale
                Z[bx * 4 + i, j] = X[bx * 4 + i, j] + s
    return Y, Z


def test_dynamic_dims_scalar_parameters_and_two_outputs():
    rng = np.random.default_rng()
    kernel = scale_rows.compile(n_scale=3)
    assert [p.kind for p in kernel.meta.params[:4]] == ["tensor", "scalar", "tensor", "tensor"]
    for rows in (5, 13):  # one kernel: N stays symbolic
        x = rng.uniform(-1, 1, (rows, 8)).astype(np.float32)
        y, z = kernel(x, 0.5)
        np.testing.assert_allclose(y, x * 1.5, rtol=1e-6)
        np.testing.assert_allclose(z, x + 0.5, rtol=1e-6)
    y, z = scale_rows(x, 2.0, 3)
    np.testing.assert_allclose(y, x * 6.0, rtol=1e-6)
    assert len(scale_rows._kernels) == 1


def test_lazy_factories_still_return_kernels():
    @tilelang.jit(out_idx=[-1], target="cpu")
    def add(n: int):
        @T.prim_func
        def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
            with T.Kernel(1, threads=32):
                for i in T.Parallel(n):
                    B[i] = A[i] + 1.0
        return main

    assert not add.is_eager
    kernel = add(10)
    assert add(10) is kernel and add.compile(10) is kernel and add.compile(n=10) is not None
    x = np.arange(10, dtype=np.float32)
    np.testing.assert_array_equal(kernel(x), x + 1)
    assert "main" in str(add.get_tir(10).script())


def test_declarations_outside_an_eager_function_are_errors():
    with pytest.raises(EagerDeclarationError, match="only valid at the top of"):
        T.const("M")
    with pytest.raises(EagerDeclarationError, match="return C"):
        T.empty((4,), T.float32)


def test_a_kernel_error_points_at_the_users_line():
    @tilelang.jit(target="cpu")
    def broken(A):
        A: T.Tensor((16,), T.float32)
        with T.Kernel(1, threads=32):
            for i in T.Parallel(16):
                A[i] = undefined_name + 1.0  # noqa: F821
    import inspect

    line = inspect.getsourcelines(broken.orig_func)[1] + 5
    with pytest.raises(Exception, match=rf"eager kernel .*broken\)?:{line}"):
        broken.compile()


def test_out_idx_on_an_eager_function_is_refused():
    with pytest.raises(TypeError, match="drop out_idx"):
        @tilelang.jit(out_idx=[1])
        def f(A):
            A: T.Tensor((4,), T.float32)
            with T.Kernel(1):
                pass


def test_tilelang_pass_config_keys_are_accepted_and_unknown_ones_listed(capsys):
    from tilelang_core.jit.options import CompileOptions, OptionsError

    opts = CompileOptions.from_pass_configs({tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True,
                                             tilelang.PassConfigKey.TL_DISABLE_SHUFFLE_ELECT: True,
                                             tilelang.PassConfigKey.TL_DEVICE_COMPILE_FLAGS: ["-O3"]})
    assert opts.fast_math and opts.extra_flags == ("-O3",) and opts.ignored == ("tl.disable_shuffle_elect",)
    assert opts == CompileOptions(fast_math=True, extra_flags=("-O3",))  # ignored keys do not split the cache
    with pytest.raises(OptionsError, match="unknown pass config 'tl.nonsense'; valid keys: .*tl.disable_tma_lower"):
        CompileOptions.from_pass_configs({"tl.nonsense": 1})
    matmul_relu.pass_configs, matmul_relu.verbose = {"tl.disable_shuffle_elect": True}, True
    try:
        matmul_relu.compile(M=32, N=16, K=16, block_M=32, block_N=16, block_K=16)
    finally:
        matmul_relu.pass_configs, matmul_relu.verbose = None, False
    assert "pass configs with no effect on cpu" in capsys.readouterr().out


@tilelang.jit(target="cpu")
def clamp_then_bump(X, dtype: T.dtype = T.float):
    N = T.const("N")
    X: T.Tensor((N,), dtype)
    Y = T.empty((N,), dtype)
    with T.Kernel(1, threads=32):
        for i in T.Serial(N):
            Y[i] = T.clamp(X[i], -0.5, 0.5)
        T.atomic_add(Y[0], 1.0, memory_order="relaxed")
    return Y


def test_tilelang_spellings_float_dtype_serial_clamp_and_atomic_memory_order():
    assert T.float == T.float32 and T.half == T.float16 and isinstance(T.float16, T.dtype)
    x = np.random.default_rng().uniform(-1, 1, 10).astype(np.float32)
    ref = np.clip(x, -0.5, 0.5)
    ref[0] += 1
    np.testing.assert_allclose(clamp_then_bump(x), ref, rtol=1e-6)
    with pytest.raises(ValueError, match="memory_order='strongest' is not one of"):
        T.atomic_add(None, 1.0, memory_order="strongest")


@tilelang.jit(target="cpu")
def persistent_owner(X, sm_num: int, bm: int, bn: int, group: int):
    M, N = T.const("M, N")
    X: T.Tensor((M, N), T.int32)
    Y = T.empty((M, N), T.int32)
    with T.Kernel(sm_num, threads=32) as block_id:
        for bx, by in T.Persistent([T.ceildiv(M, bm), T.ceildiv(N, bn)], sm_num, block_id, group):
            for i, j in T.Parallel(bm, bn):
                Y[bx * bm + i, by * bn + j] = X[bx * bm + i, by * bn + j] + block_id * 1000
    return Y


@pytest.mark.parametrize("sm_num, group", [(5, 3), (4, 8), (7, 1)])
def test_persistent_loop_visits_every_tile_once_in_grouped_order(sm_num, group):
    m_tiles, n_tiles, bm, bn = 3, 5, 2, 8
    x = np.arange(m_tiles * bm * n_tiles * bn, dtype=np.int32).reshape(m_tiles * bm, n_tiles * bn)
    owner = (persistent_owner(x, sm_num, bm, bn, group) - x) // 1000
    # the order TileLang documents: tiles in groups of `g` columns, rows fastest within a group
    g = max(1, min(group, n_tiles))
    expected = np.full((m_tiles, n_tiles), -1)
    t = 0
    for col_group in range(-(-n_tiles // g)):
        for row in range(m_tiles):
            for off in range(g):
                col = col_group * g + off
                if col < n_tiles:
                    expected[row, col] = t % sm_num
                t += 1
    np.testing.assert_array_equal(owner[::bm, ::bn], expected)
    np.testing.assert_array_equal(owner, np.repeat(np.repeat(expected, bm, 0), bn, 1))


def test_prologue_that_computes_with_a_const_learns_its_dim():
    """TileLang's AWS examples assert on their shape constants before the kernel
    (`assert seq_len % block_M == 0`): the const's tensor dim is still found, and the assert
    still guards each call's real value."""
    import numpy as np

    @tilelang.jit
    def scale(A, block: int):
        n = T.const("n")
        A: T.Tensor((n,), T.float32)
        B = T.empty((n,), T.float32)
        assert n % block == 0
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * 3.0
        return B

    a = np.random.default_rng(0).standard_normal(256).astype("float32")
    np.testing.assert_array_equal(scale(a, 64), a * 3)
    with pytest.raises(AssertionError):
        scale(np.zeros(100, "float32"), 64)


def test_an_eager_stub_decorates_and_raises_when_compiled():
    """TileLang raises for an eager function with no kernel body when it is compiled, not when
    it is decorated (a stub written before its kernel)."""

    @tilelang.jit
    def stub(A, n: int = 16):
        A: T.Tensor((n,), T.float32)
        B = T.empty((n,), T.float32)
        return B

    assert stub.is_eager
    with pytest.raises(EagerStyleError, match=r"needs a kernel body \(`with T.Kernel"):
        stub.compile(n=16)
    with pytest.raises(EagerStyleError, match=r"needs a kernel body"):
        stub.get_kernel_source(n=16)


def test_several_dynamic_dims_at_once():
    """TileLang's sparse MLA examples write `batch, seq_len = T.dynamic("batch, seq_len")`."""
    import numpy as np

    @tilelang.jit
    def double(A):
        rows, cols = T.dynamic("rows, cols")
        A: T.Tensor((rows, cols), T.float32)
        B = T.empty((rows, cols), T.float32)
        with T.Kernel(T.ceildiv(rows, 8), threads=32) as bx:
            for i, j in T.Parallel(8, 16):
                if bx * 8 + i < rows and j < cols:
                    B[bx * 8 + i, j] = A[bx * 8 + i, j] * 2.0
        return B

    a = np.random.default_rng(1).standard_normal((20, 16)).astype("float32")
    np.testing.assert_array_equal(double(a), a * 2)
