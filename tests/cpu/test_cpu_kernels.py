"""Hand-lowered kernels (what the core's passes produce for a block-serial target) taken
through the CPU backend and checked on every element against a float64 NumPy reference."""
from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm.script import tirx as T

from tilelang_core.codegen import builtins  # noqa: F401  (registers the tl.* ops)

# ---------------------------------------------------------------------------------------------
# Elementwise: a 1-D grid with a tail guard
# ---------------------------------------------------------------------------------------------

N_ELEM = 1000


@T.prim_func
def axpb(A: T.Buffer((N_ELEM,), "float32"), B: T.Buffer((N_ELEM,), "float32"),
         C: T.Buffer((N_ELEM,), "float32"), alpha: T.float32):
    bx = T.launch_thread("blockIdx.x", (N_ELEM + 127) // 128)
    for i in T.vectorized(128):
        if bx * 128 + i < N_ELEM:
            C[bx * 128 + i] = A[bx * 128 + i] * alpha + B[bx * 128 + i]


def test_elementwise_tail(build, rng, poisoned):
    k = build(axpb)
    a, b = rng.standard_normal(N_ELEM).astype("float32"), rng.standard_normal(N_ELEM).astype("float32")
    c = poisoned(N_ELEM)
    k(a, b, c, 1.5)
    np.testing.assert_allclose(c, a.astype(np.float64) * 1.5 + b, rtol=1e-6, atol=1e-6)
    assert k.kernel_source.grid == (8, 1, 1)
    assert "#pragma omp simd" in k.source and "restrict" in k.source


# ---------------------------------------------------------------------------------------------
# A symbolic dimension (passed as an int32 parameter) in shapes and in the grid
# ---------------------------------------------------------------------------------------------


@T.prim_func
def scale_rows(x: T.handle, y: T.handle, m: T.int32):
    X = T.match_buffer(x, (m, 48), "float32")
    Y = T.match_buffer(y, (m, 48), "float32")
    bx = T.launch_thread("blockIdx.x", (m + 7) // 8)
    for i, j in T.grid(8, 48):
        if bx * 8 + i < m:
            Y[bx * 8 + i, j] = X[bx * 8 + i, j] * T.Cast("float32", bx * 8 + i + 1)


@pytest.mark.parametrize("m", [1, 8, 37])
def test_symbolic_dim(build, rng, poisoned, m):
    k = build(scale_rows)
    assert k.kernel_source.grid == ("(m + 7) // 8", 1, 1)
    x = rng.standard_normal((m, 48)).astype("float32")
    y = poisoned((m, 48))
    k(x, y, m)
    ref = x.astype(np.float64) * np.arange(1, m + 1)[:, None]
    np.testing.assert_allclose(y, ref, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# Tiled GEMM with block-local arrays, masked tile loads and a masked store
# ---------------------------------------------------------------------------------------------

GM, GN, GK = 100, 72, 90
BM, BN, BK = 32, 32, 16


@T.prim_func
def gemm_tiled(A: T.Buffer((GM, GK), "float32"), B: T.Buffer((GK, GN), "float32"),
               C: T.Buffer((GM, GN), "float32")):
    bx = T.launch_thread("blockIdx.x", (GN + BN - 1) // BN)
    by = T.launch_thread("blockIdx.y", (GM + BM - 1) // BM)
    A_shared = T.alloc_buffer((BM, BK), "float32", scope="shared.dyn")
    B_shared = T.alloc_buffer((BK, BN), "float32", scope="shared.dyn")
    C_local = T.alloc_buffer((BM, BN), "float32", scope="local.fragment")
    for i in range(BM):
        for j in T.vectorized(BN):
            C_local[i, j] = T.float32(0)
    for ko in range((GK + BK - 1) // BK):
        for i in range(BM):
            for k in T.vectorized(BK):
                A_shared[i, k] = T.if_then_else(
                    by * BM + i < GM and ko * BK + k < GK, A[by * BM + i, ko * BK + k], T.float32(0))
        for k in range(BK):
            for j in T.vectorized(BN):
                B_shared[k, j] = T.if_then_else(
                    ko * BK + k < GK and bx * BN + j < GN, B[ko * BK + k, bx * BN + j], T.float32(0))
        for i in range(BM):
            for k in range(BK):
                for j in T.vectorized(BN):
                    C_local[i, j] = C_local[i, j] + A_shared[i, k] * B_shared[k, j]
    for i in range(BM):
        for j in T.vectorized(BN):
            if by * BM + i < GM and bx * BN + j < GN:
                C[by * BM + i, bx * BN + j] = C_local[i, j]


def test_tiled_gemm(build, rng, poisoned):
    k = build(gemm_tiled)
    a = rng.uniform(-1, 1, (GM, GK)).astype("float32")
    b = rng.uniform(-1, 1, (GK, GN)).astype("float32")
    c = poisoned((GM, GN))
    k(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert "TL_ALIGNED(64)" in k.source
    assert "collapse(2)" in k.source
    assert k.kernel_source.shared_memory == 0  # block-local arrays, not dynamic shared memory


# ---------------------------------------------------------------------------------------------
# float16 in and out, float32 math
# ---------------------------------------------------------------------------------------------

NH = 300


@T.prim_func
def half_fma(X: T.Buffer((NH,), "float16"), Y: T.Buffer((NH,), "float16"),
             Z: T.Buffer((NH,), "float16"), S: T.Buffer((NH,), "float32")):
    bx = T.launch_thread("blockIdx.x", (NH + 63) // 64)
    for i in range(64):
        if bx * 64 + i < NH:
            Z[bx * 64 + i] = T.Cast("float16", T.Cast("float32", X[bx * 64 + i]) * T.Cast("float32", Y[bx * 64 + i])
                                    + T.float32(0.25))
            S[bx * 64 + i] = T.Cast("float32", X[bx * 64 + i] + Y[bx * 64 + i])


def test_float16_in_out(build, rng, poisoned):
    k = build(half_fma)
    x = rng.uniform(-4, 4, NH).astype("float16")
    y = rng.uniform(-4, 4, NH).astype("float16")
    z = poisoned(NH, "float16")
    s = poisoned(NH, "float32")
    k(x, y, z, s)
    ref = (x.astype(np.float64) * y.astype(np.float64) + 0.25).astype(np.float16)
    np.testing.assert_allclose(z.astype(np.float64), ref.astype(np.float64), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(s, x.astype(np.float64) + y.astype(np.float64), rtol=1e-3, atol=1e-3)


@T.prim_func
def bf16_roundtrip(X: T.Buffer((64,), "bfloat16"), Y: T.Buffer((64,), "bfloat16")):
    bx = T.launch_thread("blockIdx.x", 1)
    for i in range(64):
        Y[i] = T.Cast("bfloat16", T.Cast("float32", X[i]) * T.float32(2) + T.float32(1))


def test_bfloat16(build, rng, poisoned):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    k = build(bf16_roundtrip)
    x = rng.uniform(-8, 8, 64).astype(ml_dtypes.bfloat16)
    y = np.zeros(64, ml_dtypes.bfloat16)
    k(x, y)
    ref = (x.astype(np.float64) * 2 + 1).astype(np.float32).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(y.view(np.uint16), ref.view(np.uint16))


# ---------------------------------------------------------------------------------------------
# A reduction with max: one row per block
# ---------------------------------------------------------------------------------------------

RM, RN = 37, 130


@T.prim_func
def row_max(X: T.Buffer((RM, RN), "float32"), Y: T.Buffer((RM,), "float32")):
    bx = T.launch_thread("blockIdx.x", RM)
    acc = T.alloc_buffer((1,), "float32", scope="local.var")
    acc[0] = T.float32("-inf")
    for j in range(RN):
        acc[0] = T.max(acc[0], X[bx, j])
    Y[bx] = acc[0]


def test_reduce_max(build, rng, poisoned):
    k = build(row_max)
    x = rng.standard_normal((RM, RN)).astype("float32")
    x[3, 17] = np.inf
    y = poisoned(RM)
    k(x, y)
    np.testing.assert_array_equal(y, x.astype(np.float64).max(axis=1))


def test_reduce_max_propagates_nan(build, rng, poisoned):
    k = build(row_max)
    x = rng.standard_normal((RM, RN)).astype("float32")
    x[5, 0] = np.nan
    x[6, RN - 1] = np.nan
    y = poisoned(RM)
    k(x, y)
    np.testing.assert_array_equal(y, x.max(axis=1))


# ---------------------------------------------------------------------------------------------
# floordiv / floormod of negative numbers
# ---------------------------------------------------------------------------------------------

ND = 64


@T.prim_func
def floor_ops(A: T.Buffer((ND,), "int32"), B: T.Buffer((ND,), "int32"), Q: T.Buffer((ND,), "int32"),
              R: T.Buffer((ND,), "int32"), A64: T.Buffer((ND,), "int64"), Q64: T.Buffer((ND,), "int64"),
              R64: T.Buffer((ND,), "int64")):
    bx = T.launch_thread("blockIdx.x", 1)
    for i in range(ND):
        Q[i] = T.floordiv(A[i], B[i])
        R[i] = T.floormod(A[i], B[i])
        Q64[i] = T.floordiv(A64[i], T.int64(7))
        R64[i] = T.floormod(A64[i], T.int64(-5))


def test_floordiv_floormod_negative(build, rng, poisoned):
    k = build(floor_ops)
    a = rng.integers(-1000, 1000, ND).astype("int32")
    b = rng.integers(1, 50, ND).astype("int32") * rng.choice([-1, 1], ND).astype("int32")
    a64 = rng.integers(-10**12, 10**12, ND).astype("int64")
    q, r = poisoned(ND, "int32"), poisoned(ND, "int32")
    q64, r64 = poisoned(ND, "int64"), poisoned(ND, "int64")
    k(a, b, q, r, a64, q64, r64)
    np.testing.assert_array_equal(q, a // b)
    np.testing.assert_array_equal(r, a % b)
    np.testing.assert_array_equal(q64, a64 // 7)
    np.testing.assert_array_equal(r64, a64 % -5)
    assert "tl_floordiv_i32" in k.source and "tl_floormod_i64" in k.source


@T.prim_func
def floor_nonneg(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32")):
    bx = T.launch_thread("blockIdx.x", 4)
    for i in range(16):
        B[bx * 16 + i] = T.floordiv(bx * 16 + i, 8) * 100 + T.floormod(bx * 16 + i, 8) + A[0] * 0


def test_floordiv_fast_path_when_provably_nonnegative(build, poisoned):
    k = build(floor_nonneg)
    assert "tl_floordiv" not in k.source and "tl_floormod" not in k.source
    a = np.arange(64, dtype="int32") + 1
    b = poisoned(64, "int32")
    k(a, b)
    idx = np.arange(64)
    np.testing.assert_array_equal(b, idx // 8 * 100 + idx % 8)


# ---------------------------------------------------------------------------------------------
# Math intrinsics, casts, select, NaN/inf (no -ffast-math)
# ---------------------------------------------------------------------------------------------

NM = 256


@T.prim_func
def math_ops(X: T.Buffer((NM,), "float32"), O: T.Buffer((12, NM), "float32"), D: T.Buffer((NM,), "float64"),
             I: T.Buffer((NM,), "int32")):
    bx = T.launch_thread("blockIdx.x", 2)
    for i in range(128):
        v = X[bx * 128 + i]
        O[0, bx * 128 + i] = T.exp(v)
        O[1, bx * 128 + i] = T.exp2(v)
        O[2, bx * 128 + i] = T.log(T.fabs(v) + T.float32(1))
        O[3, bx * 128 + i] = T.sqrt(T.fabs(v))
        O[4, bx * 128 + i] = T.rsqrt(T.fabs(v) + T.float32(0.5))
        O[5, bx * 128 + i] = T.pow(T.fabs(v), T.float32(1.5))
        O[6, bx * 128 + i] = T.tanh(v)
        O[7, bx * 128 + i] = T.floor(v)
        O[8, bx * 128 + i] = T.Select(v > T.float32(0), v, T.float32(0) - v)
        O[9, bx * 128 + i] = T.min(v, T.float32(0.5)) + T.sigmoid(v)
        O[10, bx * 128 + i] = v / (X[0] - X[0])
        O[11, bx * 128 + i] = T.if_then_else(T.isnan(v), T.float32(-1), T.float32("nan"))
        D[bx * 128 + i] = T.Cast("float64", v) * T.float64(3) + T.exp(T.Cast("float64", v))
        I[bx * 128 + i] = T.Cast("int32", v * T.float32(10)) % 7 + (((bx * 128 + i) << 2) ^ 5)


def test_math_intrinsics(build, rng, poisoned):
    k = build(math_ops)
    x = rng.uniform(-3, 3, NM).astype("float32")
    x[0] = 0.0
    o, d, ii = poisoned((12, NM)), poisoned(NM, "float64"), poisoned(NM, "int32")
    with np.errstate(divide="ignore", invalid="ignore"):
        k(x, o, d, ii)
        xd = x.astype(np.float64)
        refs = [np.exp(xd), np.exp2(xd), np.log(np.abs(xd) + 1), np.sqrt(np.abs(xd)),
                1 / np.sqrt(np.abs(xd) + 0.5), np.abs(xd) ** 1.5, np.tanh(xd), np.floor(xd),
                np.abs(xd), np.minimum(xd, 0.5) + 1 / (1 + np.exp(-xd)), xd / 0.0,
                np.full(NM, np.nan)]
    for row, ref in enumerate(refs):
        np.testing.assert_allclose(o[row], ref, rtol=2e-6, atol=2e-6, err_msg=f"row {row}")
    np.testing.assert_allclose(d, xd * 3 + np.exp(xd), rtol=1e-14)
    idx = np.arange(NM)
    np.testing.assert_array_equal(ii, np.mod((x * np.float32(10)).astype(np.int32), 7) + ((idx << 2) ^ 5))
    assert "expf(" in k.source and "NAN" in k.source


# ---------------------------------------------------------------------------------------------
# printf, device_assert, atomics
# ---------------------------------------------------------------------------------------------


@T.prim_func
def say_hello(A: T.Buffer((4,), "float32")):
    bx = T.launch_thread("blockIdx.x", 1)
    for i in range(4):
        T.evaluate(T.call_intrin("int32", "tl.printf", "A[%d] = %.2f (%s)\n", i, A[i], "ok"))


def test_printf(build, capfd):
    k = build(say_hello)
    k(np.array([1.5, -2.25, 3, 4], "float32"))
    out = capfd.readouterr().out
    assert "A[0] = 1.50 (ok)" in out and "A[1] = -2.25 (ok)" in out and "A[3] = 4.00 (ok)" in out


NBLOCKS = 4096


@T.prim_func
def count_blocks(C: T.Buffer((2,), "float32"), I: T.Buffer((2,), "int32")):
    bx = T.launch_thread("blockIdx.x", NBLOCKS)
    for r in range(8):  # enough work per launch that blocks run on several threads
        T.evaluate(T.call_intrin("handle", "tl.atomic_add", C[0], T.float32(0.125)))
    T.evaluate(T.call_intrin("handle", "tl.atomic_max", C[1], T.Cast("float32", bx)))
    T.evaluate(T.call_intrin("handle", "tl.atomic_add", I[0], 1))
    T.evaluate(T.call_intrin("handle", "tl.atomic_min", I[1], 0 - bx))


def test_atomics_from_many_blocks(build):
    k = build(count_blocks)
    assert "tl_atomic_add_f32(&C[0], 0.125f, __ATOMIC_RELAXED)" in k.source and "omp parallel for" in k.source
    for _ in range(5):  # a lost update would show in some repetition
        c = np.array([0.0, -1.0], "float32")
        i = np.array([0, 0], "int32")
        k(c, i)
        assert c[0] == NBLOCKS and c[1] == NBLOCKS - 1
        assert i[0] == NBLOCKS and i[1] == -(NBLOCKS - 1)


@T.prim_func
def checked(A: T.Buffer((8,), "float32"), n: T.int32):
    bx = T.launch_thread("blockIdx.x", 8)
    T.evaluate(T.call_intrin("int32", "tl.device_assert", bx < n, "bx must stay below n"))
    A[bx] = T.float32(1)


def test_device_assert(build):
    from tilelang_cpu.runtime import DeviceAssertionError

    k = build(checked)
    a = np.zeros(8, "float32")
    k(a, 8)
    np.testing.assert_array_equal(a, 1)
    a[:] = 0
    with pytest.raises(DeviceAssertionError, match="bx must stay below n"):
        k(a, 5)
    assert (a[5:] == 0).all()  # failing blocks stop at the assertion (others may be skipped)
    k(a, 8)  # the error state is cleared on the next launch


# ---------------------------------------------------------------------------------------------
# Block-local buffers too big for the stack, loops, lets, while
# ---------------------------------------------------------------------------------------------


@T.prim_func
def big_scratch(A: T.Buffer((4, 40000), "float32"), B: T.Buffer((4, 40000), "float32")):
    bx = T.launch_thread("blockIdx.x", 4)
    tmp = T.alloc_buffer((40000,), "float32", scope="shared.dyn")
    small = T.alloc_buffer((16,), "float32", scope="local")
    for j in range(16):
        small[j] = T.float32(j)
    for j in T.vectorized(40000):
        tmp[j] = A[bx, j] * T.float32(2)
    for j in T.serial(0, 40000, step=1):
        B[bx, 39999 - j] = tmp[j] + small[j % 16]


def test_big_block_local_buffer_moves_to_heap(build, rng, poisoned):
    k = build(big_scratch)
    assert "tl_cpu_alloc(" in k.source and "#pragma omp for" in k.source
    a = rng.standard_normal((4, 40000)).astype("float32")
    b = poisoned((4, 40000))
    k(a, b)
    ref = a.astype(np.float64) * 2 + (np.arange(40000) % 16)
    np.testing.assert_allclose(b, ref[:, ::-1], rtol=1e-6)


LET_VAR = tvm.tirx.Var("q", "int32")


@T.prim_func
def control_flow(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32"), n: T.int32):
    bx = T.launch_thread("blockIdx.x", 16)
    steps = T.alloc_buffer((1,), "int32", scope="local.var")
    x = T.alloc_buffer((1,), "int32", scope="local.var")
    base = T.bind(A[bx] + n)
    x[0] = base
    steps[0] = 0
    while x[0] != 1 and steps[0] < 1000:
        if x[0] % 2 == 0:
            x[0] = x[0] // 2
        else:
            x[0] = 3 * x[0] + 1
        steps[0] = steps[0] + 1
    for j in T.serial(1, 9, step=3):
        steps[0] = steps[0] + T.Let(LET_VAR * 10, where={LET_VAR: j})
    B[bx] = steps[0]


def _collatz(v):
    steps = 0
    while v != 1 and steps < 1000:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        steps += 1
    return steps


def test_control_flow(build, poisoned):
    k = build(control_flow)
    a = np.arange(1, 17, dtype="int32")
    b = poisoned(16, "int32")
    k(a, b, 3)
    ref = np.array([_collatz(int(v) + 3) + 10 + 40 + 70 for v in a])
    np.testing.assert_array_equal(b, ref)


# ---------------------------------------------------------------------------------------------
# Launch shapes: 3-D grid, unused thread index, a threadIdx that is used (refused)
# ---------------------------------------------------------------------------------------------


@T.prim_func
def grid3(O: T.Buffer((3, 4, 5), "int32"), P: T.Buffer((3, 4, 5, 1024), "int32")):
    bx = T.launch_thread("blockIdx.x", 5)
    by = T.launch_thread("blockIdx.y", 4)
    bz = T.launch_thread("blockIdx.z", 3)
    tx = T.launch_thread("threadIdx.x", 128)
    O[bz, by, bx] = bz * 100 + by * 10 + bx
    for t in range(1024):
        P[bz, by, bx, t] = t - bx


def test_three_dimensional_grid(build, poisoned):
    k = build(grid3)
    assert "collapse(3)" in k.source and "threadIdx" not in k.source
    assert k.kernel_source.grid == (5, 4, 3) and k.kernel_source.block == (128, 1, 1)
    o, p = poisoned((3, 4, 5), "int32"), poisoned((3, 4, 5, 1024), "int32")
    k(o, p)
    z, y, x = np.meshgrid(np.arange(3), np.arange(4), np.arange(5), indexing="ij")
    np.testing.assert_array_equal(o, z * 100 + y * 10 + x)
    np.testing.assert_array_equal(p, np.arange(1024)[None, None, None, :] - x[..., None])


@T.prim_func
def tiny(O: T.Buffer((8,), "int32")):
    bx = T.launch_thread("blockIdx.x", 8)
    O[bx] = bx


@T.prim_func
def symbolic_grid(o: T.handle, n: T.int32):
    O = T.match_buffer(o, (n,), "int32")
    bx = T.launch_thread("blockIdx.x", n)
    O[bx] = bx * 2


def test_small_launches_skip_the_thread_team(build, poisoned):
    k = build(tiny)
    assert "omp parallel" not in k.source  # 8 stores: a thread team would cost more
    o = poisoned(8, "int32")
    k(o)
    np.testing.assert_array_equal(o, np.arange(8))
    k = build(symbolic_grid)
    assert "if((int64_t)tl_grid_x * 1 >= 32768)" in k.source  # decided at run time
    for n in (3, 100000):
        o = poisoned(n, "int32")
        k(o, n)
        np.testing.assert_array_equal(o, np.arange(n) * 2)


@T.prim_func
def uses_threads(O: T.Buffer((128,), "int32")):
    bx = T.launch_thread("blockIdx.x", 1)
    tx = T.launch_thread("threadIdx.x", 128)
    O[tx] = tx


def test_thread_index_is_refused():
    from tilelang_core.codegen import CodegenError
    from tilelang_cpu.codegen import CPUCodegen

    with pytest.raises(CodegenError, match="threadIdx.x.*block-serial"):
        CPUCodegen().render(uses_threads)


# ---------------------------------------------------------------------------------------------
# Vectors (Ramp / Broadcast), assert statements, buffer views, bit casts, parallel loops
# ---------------------------------------------------------------------------------------------


@T.prim_func
def vector_ops(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), Bits: T.Buffer((64,), "int32"),
               n: T.int32):
    bx = T.launch_thread("blockIdx.x", 16)
    T.Assert(n > 0, "n must be positive")
    B[T.Ramp(bx * 4, 1, 4)] = A[T.Ramp(bx * 4, 1, 4)] * T.Broadcast(T.float32(2), 4) + T.Broadcast(
        T.Cast("float32", n), 4)
    for i in T.parallel(4):
        Bits[bx * 4 + i] = T.reinterpret("int32", A[bx * 4 + i])


def test_vectors_asserts_and_bit_casts(build, rng, poisoned):
    from tilelang_cpu.runtime import DeviceAssertionError

    k = build(vector_ops)
    assert "tl_float32x4" in k.source and "#pragma GCC ivdep" in k.source
    a = rng.standard_normal(64).astype("float32")
    b, bits = poisoned(64), poisoned(64, "int32")
    k(a, b, bits, 3)
    np.testing.assert_allclose(b, a.astype(np.float64) * 2 + 3, rtol=1e-6)
    np.testing.assert_array_equal(bits, a.view(np.int32))
    with pytest.raises(DeviceAssertionError, match="n must be positive"):
        k(a, b, bits, 0)


@T.prim_func
def flat_view(A: T.Buffer((8, 8), "float32"), B: T.Buffer((64,), "float32")):
    bx = T.launch_thread("blockIdx.x", 1)
    Af = T.decl_buffer((64,), "float32", data=A.data)
    for i in range(64):
        B[i] = Af[63 - i] + T.float32(1)


def test_buffer_view(build, rng, poisoned):
    k = build(flat_view)
    a = rng.standard_normal((8, 8)).astype("float32")
    b = poisoned(64)
    k(a, b)
    np.testing.assert_allclose(b, a.ravel()[::-1].astype(np.float64) + 1, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# Small and wide dtypes: bool, int8, uint8, int16, int64 and float64 scalars
# ---------------------------------------------------------------------------------------------

NT = 100


@T.prim_func
def dtypes(M: T.Buffer((NT,), "bool"), I8: T.Buffer((NT,), "int8"), U8: T.Buffer((NT,), "uint8"),
           I16: T.Buffer((NT,), "int16"), O: T.Buffer((NT,), "float64"), OB: T.Buffer((NT,), "bool"),
           O8: T.Buffer((NT,), "int8"), big: T.int64, scale: T.float64):
    bx = T.launch_thread("blockIdx.x", 1)
    for i in range(NT):
        O[i] = T.if_then_else(M[i], T.Cast("float64", I8[i]) * scale,
                              T.Cast("float64", U8[i]) + T.Cast("float64", I16[i]) + T.Cast("float64", big))
        OB[i] = I8[i] < T.int8(0) or not M[i]
        O8[i] = I8[i] // T.int8(3) + T.Cast("int8", U8[i] % T.uint8(5))


def test_small_and_wide_dtypes(build, rng, poisoned):
    k = build(dtypes)
    m = rng.integers(0, 2, NT).astype(bool)
    i8 = rng.integers(-128, 128, NT).astype("int8")
    u8 = rng.integers(0, 256, NT).astype("uint8")
    i16 = rng.integers(-30000, 30000, NT).astype("int16")
    o, o8 = poisoned(NT, "float64"), poisoned(NT, "int8")
    ob = np.ones(NT, bool)
    ob[::2] = False
    big = 3 * 10**12
    k(m, i8, u8, i16, o, ob, o8, big, 0.5)
    ref = np.where(m, i8.astype(np.float64) * 0.5, u8.astype(np.float64) + i16 + big)
    np.testing.assert_array_equal(o, ref)
    np.testing.assert_array_equal(ob, (i8 < 0) | ~m)
    np.testing.assert_array_equal(o8, (i8.astype(np.int64) // 3 + u8 % 5).astype(np.int8))
