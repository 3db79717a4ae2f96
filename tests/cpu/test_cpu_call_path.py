"""The call path (tilelang_core.runtime.kernel) on the CPU backend: after a call has passed the
checked path and a guard was generated for it, every check still holds and every error still
names the parameter; NumPy and torch alternate; scalars convert as before."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.runtime import KernelCallError
from tilelang_core.runtime.tensors import numpy_data_ptr


def axpy(n, dtype="float32"):
    @T.prim_func
    def main(X: T.Tensor((n,), dtype), Y: T.Tensor((n,), dtype), a: T.float32, k: T.int32):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(n):
                Y[i] = X[i] * a + T.Cast(dtype, k)

    return main


def grid2d(m, n):
    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i, j in T.Parallel(m, n):
                Y[i, j] = X[i, j] + T.float32(1)

    return main


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    k = tilelang.compile(axpy(16), target="cpu")
    x, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    k(x, y, 2.0, 1)  # the checked path accepts it and generates the guard
    assert k._guard is not None
    np.testing.assert_array_equal(y, x * 2 + 1)
    return k


def test_guarded_calls_still_check_everything(kernel):
    good = np.ones(16, np.float32)
    with pytest.raises(KernelCallError, match=r"'X'.*expected shape \(16,\), got \(17,\)"):
        kernel(np.ones(17, np.float32), good, 1.0, 0)
    with pytest.raises(KernelCallError, match=r"'Y'.*expected dtype float32, got float64"):
        kernel(good, np.ones(16, np.float64), 1.0, 0)
    with pytest.raises(KernelCallError, match=r"'X'.*expected rank 1"):
        kernel(np.ones((16, 1), np.float32), good, 1.0, 0)
    with pytest.raises(KernelCallError, match=r"'X'.*contiguous"):
        kernel(np.ones(32, np.float32)[::2], good, 1.0, 0)
    with pytest.raises(KernelCallError, match=r"takes 4 argument"):
        kernel(good, good, 1.0)
    with pytest.raises(KernelCallError, match=r"'X'.*expected a tensor"):
        kernel([1.0] * 16, good, 1.0, 0)
    with pytest.raises(KernelCallError, match=r"'a'.*expected a float32 scalar"):
        kernel(good, good, good, 0)
    with pytest.raises(KernelCallError, match=r"'a'.*expected a float32 scalar, got str"):
        kernel(good, good, "1", 0)


def test_scalars_convert_like_the_checked_path(kernel):
    x, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    kernel(x, y, 3, 2.0)  # an int for a float parameter, an integral float for an int one
    np.testing.assert_array_equal(y, x * 3 + 2)
    with pytest.raises(KernelCallError, match=r"'k'.*2\.9 is not an integer"):  # never truncated (issue 14)
        kernel(x, y, 3, 2.9)
    kernel(x, y, True, 1)  # bool goes through the checked path: a number
    np.testing.assert_array_equal(y, x + 1)


def test_numpy_and_torch_alternate(kernel):
    torch = pytest.importorskip("torch")
    x, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    tx, ty = torch.arange(16, dtype=torch.float32), torch.zeros(16)
    kernel(x, y, 2.0, 0)
    kernel(tx, ty, 3.0, 0)
    guards = dict(kernel._guards)
    for _ in range(3):  # each shape of call keeps its guard: none is generated again
        kernel(x, y, 2.0, 0)
        kernel(tx, ty, 3.0, 0)
    assert kernel._guards == guards
    np.testing.assert_array_equal(y, x * 2)
    assert torch.equal(ty, tx * 3)
    with pytest.raises(KernelCallError, match=r"'Y'.*expected dtype float32, got float16"):
        kernel(tx, torch.zeros(16, dtype=torch.float16), 1.0, 0)
    with pytest.raises(KernelCallError, match=r"'X'.*contiguous"):
        kernel(torch.zeros(32)[::2], ty, 1.0, 0)
    with pytest.raises(KernelCallError, match=r"'X'.*expected shape"):
        kernel(torch.zeros(15), ty, 1.0, 0)


def test_a_look_alike_tensor_on_another_device_is_refused_after_guarding(kernel):
    torch = pytest.importorskip("torch")
    kernel(torch.ones(16), torch.ones(16), 1.0, 0)

    class OnGPU(torch.Tensor):
        """A torch.Tensor subclass that says it lives on a GPU (DLPack device type 2)."""

        def __dlpack_device__(self):
            return (2, 0)

    OnGPU.__module__ = "torch.fake"
    fake = torch.ones(16).as_subclass(OnGPU)
    with pytest.raises(KernelCallError, match=r"'X'.*DLPack device type 2"):
        kernel(fake, torch.ones(16), 1.0, 0)


def test_outputs_are_allocated_by_the_guard(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    k = tilelang.compile(grid2d(3, 5), out_idx=[1], target="cpu")
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    first, second = k(x), k(x)
    assert first is not second  # a fresh output per call
    np.testing.assert_array_equal(second, x + 1)
    with pytest.raises(KernelCallError, match=r"'X'.*contiguous"):
        k(np.asfortranarray(x))
    torch = pytest.importorskip("torch")
    out = k(torch.from_numpy(x))
    assert isinstance(out, torch.Tensor) and torch.equal(out, torch.from_numpy(x + 1))


def test_unit_dims_with_any_stride_are_contiguous(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    k = tilelang.compile(grid2d(1, 5), out_idx=[1], target="cpu")
    base = np.arange(10, dtype=np.float32).reshape(2, 5)
    row = base[1:]  # shape (1, 5), contiguous
    np.testing.assert_array_equal(k(row), row + 1)
    np.testing.assert_array_equal(k(np.ascontiguousarray(row)), row + 1)


def test_numpy_data_pointer_matches_the_array_interface():
    base = np.arange(100, dtype=np.float64)
    for arr in (base, base[3:], base[::-1], base.reshape(10, 10)[2], np.empty(0, np.int8), base.view(np.uint8)[5:]):
        assert numpy_data_ptr(arr) == arr.__array_interface__["data"][0] == arr.ctypes.data
    assert ctypes.c_double.from_address(numpy_data_ptr(base[7:])).value == 7.0


def square_plus_rows(block=8):
    n, m = T.symbolic("n"), T.symbolic("m")

    @T.prim_func
    def main(A: T.Tensor((n, n), "float32"), R: T.Tensor((m, n), "float32"), Y: T.Tensor((n, n), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            for i, j in T.Parallel(block, n):
                if bx * block + i < n:
                    Y[bx * block + i, j] = A[bx * block + i, j] + R[0, j] * T.Cast("float32", m)

    return main


def test_symbolic_dims_through_the_guard(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    k = tilelang.compile(square_plus_rows(), out_idx=[2], target="cpu")
    rng = np.random.default_rng(9)
    for n, m in [(5, 1), (5, 1), (19, 3), (8, 2), (1, 4)]:  # the grid follows n on every call
        a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        r = rng.uniform(-1, 1, (m, n)).astype(np.float32)
        np.testing.assert_allclose(k(a, r), a + r[0] * m, rtol=1e-6, atol=1e-6)
    assert k._guard is not None and "values" in k._guard.source
    a, r = np.ones((6, 6), np.float32), np.ones((2, 6), np.float32)
    with pytest.raises(KernelCallError, match=r"'A'.*\(dim 1: expected 6, got 7\)"):
        k(np.ones((6, 7), np.float32), r)  # n must be the same in both dims
    with pytest.raises(KernelCallError, match=r"'R'.*\(dim 1: expected 6, got 5\)"):
        k(a, np.ones((2, 5), np.float32))
    with pytest.raises(KernelCallError, match=r"'R'.*expected rank 2"):
        k(a, np.ones(6, np.float32))
    np.testing.assert_allclose(k(a, r), a + 2)
