"""tl_expf / tl_exp2f (include/tl_cpu.h), the inline exp of float32 kernels: within 2 ulp of
the exact result on a sweep of all float32 bit patterns, IEEE results at the edges, and the
same values whether or not the calling loop was vectorized."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T

EDGES = np.array([
    0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, -1e-45, 1e-38, 0.5, -0.5,
    88.72283, 88.72284, 89.0, -87.33655, -103.27893, -103.972, -104.0, -110.0,  # exp limits
    127.99999, 128.0, 129.0, -126.0, -149.0, -149.5, -150.0, -150.00002, -151.0,  # exp2 limits
    3.4028235e38, -3.4028235e38,
], dtype=np.float32)


def sweep() -> np.ndarray:
    """Every 4099th float32 bit pattern (~1M values: all exponents, both signs, NaNs), plus
    dense samples where exp and exp2 are finite and non-zero, plus the edges."""
    bits = np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32)
    rng = np.random.default_rng(0)
    dense = np.concatenate([rng.uniform(-151, 129, 1 << 18), rng.uniform(-1, 1, 1 << 16)])
    values = np.concatenate([bits.view(np.float32), dense.astype(np.float32), EDGES])
    return np.ascontiguousarray(values)


def unary(n, op, vectorized: bool):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 64), threads=64) as bx:
            if vectorized:
                for i in T.Parallel(64):
                    if bx * 64 + i < n:
                        Y[bx * 64 + i] = op(X[bx * 64 + i])
            else:
                for i in T.serial(64):
                    if bx * 64 + i < n:
                        Y[bx * 64 + i] = op(X[bx * 64 + i])

    return main


def ulp_error(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in units of the last place of the float32 nearest to `exact` (float64);
    infinities and NaNs must match exactly."""
    with np.errstate(over="ignore"):
        near = exact.astype(np.float32)
    finite = np.isfinite(near)
    err = np.zeros(got.shape)
    same_special = (got == near) | (np.isnan(got) & np.isnan(near))
    err[~finite] = np.where(same_special[~finite], 0.0, np.inf)
    spacing = np.maximum(np.spacing(np.abs(near[finite]), dtype=np.float32).astype(np.float64), 2.0 ** -149)
    with np.errstate(invalid="ignore"):
        err[finite] = np.abs(got[finite].astype(np.float64) - exact[finite]) / spacing
    err[finite & ~np.isfinite(got)] = np.inf
    return err


@pytest.mark.parametrize("name", ["exp", "exp2"])
def test_within_two_ulp_everywhere(name):
    x = sweep()
    op, ref = (T.exp, np.exp) if name == "exp" else (T.exp2, np.exp2)
    kernel = tilelang.compile(unary(len(x), op, vectorized=True), out_idx=[1], target="cpu")
    assert f"tl_{name}f(" in kernel.source
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        exact = ref(x.astype(np.float64))
    got = kernel(x)
    err = ulp_error(got, exact)
    worst = int(np.argmax(err))
    assert err[worst] <= 2.0, f"{name}({x[worst]!r}) = {got[worst]!r}, exact {exact[worst]!r}: {err[worst]:.2f} ulp"


@pytest.mark.parametrize("name", ["exp", "exp2"])
def test_edges_are_ieee(name):
    op, ref = (T.exp, np.exp) if name == "exp" else (T.exp2, np.exp2)
    x = np.ascontiguousarray(np.resize(EDGES, 64))
    got = tilelang.compile(unary(64, op, vectorized=True), out_idx=[1], target="cpu")(x)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        want = ref(x.astype(np.float64)).astype(np.float32)
    exact_cases = ~np.isfinite(want) | (want == 0) | ~np.isfinite(x) | (x == 0)
    np.testing.assert_array_equal(got[exact_cases], want[exact_cases])
    assert np.all(np.signbit(got[want == 0]) == False)  # noqa: E712  (exp never returns -0)


def test_scalar_and_vector_loops_agree():
    x = sweep()[: 1 << 16]
    vec = tilelang.compile(unary(len(x), T.exp, vectorized=True), out_idx=[1], target="cpu")(x)
    ser = tilelang.compile(unary(len(x), T.exp, vectorized=False), out_idx=[1], target="cpu")(x)
    np.testing.assert_array_equal(vec, ser)
