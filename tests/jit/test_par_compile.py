"""`par_compile`: several kernels compiled on a thread pool, in order, on the CPU backend."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
import tilelang_core.language as T


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))


def add(n, value):
    @T.prim_func
    def kernel(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(n):
                B[i] = A[i] + value

    return kernel


def test_kernels_come_back_in_order_and_run():
    kernels = tilelang.par_compile([add(16, float(v)) for v in range(4)], out_idx=[1], target="cpu", num_workers=4)
    x = np.arange(16, dtype=np.float32)
    for value, kernel in enumerate(kernels):
        assert np.array_equal(kernel(x), x + value)


def test_errors_raise_or_become_none():
    funcs = [add(8, 1.0), "not a kernel"]
    with pytest.raises(TypeError, match="expected a T.prim_func"):
        tilelang.par_compile(funcs, out_idx=[1], target="cpu")
    with pytest.warns(UserWarning, match="kernel 1 did not compile"):
        kernels = tilelang.par_compile(funcs, out_idx=[1], target="cpu", ignore_error=True)
    assert kernels[1] is None and kernels[0] is not None
    with pytest.raises(ValueError, match="num_workers must be a positive int"):
        tilelang.par_compile(funcs, num_workers=0)
    assert tilelang.par_compile([]) == []
