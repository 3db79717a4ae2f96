"""T.cummax (and T.cumsum, which shares its lowering): the IR call, a CPU run against NumPy,
and the running maximum in generated CUDA source."""
import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T


def scan_kernel(op: str, m: int, n: int, dim: int, reverse: bool, in_place: bool, scope: str = "shared"):
    scan = getattr(T, op)
    alloc = T.alloc_shared if scope == "shared" else T.alloc_fragment

    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float32")):
        with T.Kernel(1, threads=64):
            x = alloc((m, n), "float32")
            y = alloc((m, n), "float32")
            T.copy(X, x)
            if in_place:
                scan(x, dim=dim, reverse=reverse)
                T.copy(x, y)
            else:
                scan(x, y, dim=dim, reverse=reverse)
            T.copy(y, Y)

    return main


def _numpy(op: str, x: np.ndarray, dim: int, reverse: bool) -> np.ndarray:
    fold = np.maximum.accumulate if op == "cummax" else np.cumsum
    if reverse:
        return np.flip(fold(np.flip(x, dim), axis=dim), dim)
    return fold(x, axis=dim)


def test_cummax_parses_to_its_tile_op():
    func = scan_kernel("cummax", 8, 16, 1, True, False)
    assert "T.tl.cummax(" in func.script() and ", 1, 1)" in func.script()


@pytest.mark.parametrize("dim, reverse, in_place, scope", [
    (1, False, False, "shared"), (0, True, True, "shared"), (1, True, False, "fragment")])
def test_cummax_runs_on_cpu_like_numpy(dim, reverse, in_place, scope):
    m, n = 12, 20
    x = np.random.default_rng(dim + 2 * reverse).standard_normal((m, n)).astype(np.float32)
    y = np.full((m, n), np.nan, np.float32)
    tilelang.compile(scan_kernel("cummax", m, n, dim, reverse, in_place, scope), target="cpu")(x, y)
    np.testing.assert_array_equal(y, _numpy("cummax", x, dim, reverse))


def test_cumsum_still_sums_through_the_shared_scan_lowering():
    x = np.random.default_rng(5).standard_normal((6, 10)).astype(np.float32)
    y = np.zeros_like(x)
    tilelang.compile(scan_kernel("cumsum", 6, 10, 1, True, False), target="cpu")(x, y)
    np.testing.assert_allclose(y, _numpy("cumsum", x, 1, True), rtol=1e-5, atol=1e-5)


def test_cummax_of_integers_starts_from_the_lowest_value():
    @T.prim_func
    def main(X: T.Tensor((16,), "int32"), Y: T.Tensor((16,), "int32")):
        with T.Kernel(1, threads=16):
            x = T.alloc_shared((16,), "int32")
            T.copy(X, x)
            T.cummax(x, dim=0)
            T.copy(x, Y)

    x = np.array([-2**31, -5, -7, 3, -1, 9, 2, 9, -100, 11, 0, 0, 4, 20, 19, -2**31], np.int32)
    y = np.zeros_like(x)
    tilelang.compile(main, target="cpu")(x, y)
    np.testing.assert_array_equal(y, np.maximum.accumulate(x))


def test_cummax_rejects_a_dim_the_tile_lacks():
    with pytest.raises(Exception, match="cummax"):
        scan_kernel("cummax", 8, 8, 2, False, False)


def test_cummax_in_cuda_source_keeps_a_running_maximum():
    pytest.importorskip("tilelang_cuda")
    kernel = tilelang.compile(scan_kernel("cummax", 16, 32, 1, False, False), target="cuda/sm_80", cache=False)
    source = kernel.get_kernel_source()
    assert "cummax_acc = fmaxf(cummax_acc, x[" in source  # the running maximum, stored at each step
