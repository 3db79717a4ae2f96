"""Integer scalar parameters in launch dimensions (`T.Kernel(T.ceildiv(n, 32))`): the runtime
evaluates the grid from the call's value, on the checked path, the fast path and after export."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T


def add_one(N=256, block=32):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), n_valid: T.int32, B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(n_valid, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n_valid:
                    B[bx * block + i] = A[bx * block + i] + 1.0
    return main


def _check(kernel, n):
    a = np.random.default_rng(n).standard_normal(256).astype("float32")
    b = np.full(256, -7.0, "float32")
    kernel(a, n, b)
    np.testing.assert_array_equal(b[:n], a[:n] + 1)
    np.testing.assert_array_equal(b[n:], -7.0)  # blocks past ceildiv(n, 32) never ran


def test_grid_follows_the_scalar_on_every_call():
    kernel = tilelang.compile(add_one(), target="cpu")
    for n in (100, 7, 256, 33, 100):  # the first call builds the fast path, the next ones take it
        _check(kernel, n)


def test_grid_scalar_survives_export_and_load(tmp_path):
    kernel = tilelang.compile(add_one(), target="cpu")
    kernel.export(tmp_path / "k")
    loaded = tilelang.load(tmp_path / "k")
    _check(loaded, 45)
    _check(loaded, 200)


def test_a_non_integer_grid_scalar_is_refused_with_its_name():
    kernel = tilelang.compile(add_one(), target="cpu")
    a, b = np.zeros(256, "float32"), np.zeros(256, "float32")
    with pytest.raises(Exception, match="n_valid"):
        kernel(a, 2.5, b)


def test_a_kernel_without_tensor_inputs_allocates_its_outputs_on_its_runtime():
    """TileLang's random-number example takes no tensor: its output is allocated where the
    runtime keeps tensors (here the host)."""
    @tilelang.jit(out_idx=[-1])
    def iota(n=64):
        @T.prim_func
        def main(start: T.int32, A: T.Tensor((n,), "int32")):
            with T.Kernel(1, threads=32) as bx:
                for i in T.Parallel(n):
                    A[i] = start + i
        return main

    out = iota()(5)
    np.testing.assert_array_equal(np.asarray(out), np.arange(5, 69, dtype=np.int32))


def test_torch_unsigned_tensors_are_their_dtypes():
    """TileLang's random-number example returns torch.uint32 tensors."""
    torch = pytest.importorskip("torch")
    from tilelang_core.runtime.tensors import view_of

    for name in ("uint16", "uint32", "uint64"):
        assert view_of(torch.zeros(4, dtype=getattr(torch, name))).dtype == name
