"""Bad kernels get clear compile errors naming the line, the values seen and the fix."""
from __future__ import annotations

import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.transform.errors import CapabilityError, TileLangCompileError


def test_fragment_with_two_layouts_is_rejected():
    @T.prim_func
    def main(A: T.Tensor((16, 16), "float32"), B: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32) as bx:
            f = T.alloc_fragment((16, 16), "float32")
            T.annotate_layout({f: T.Layout((16, 16), lambda i, j: (j, i))})
            T.annotate_layout({f: T.Layout((16, 16), lambda i, j: (i, j))})
            T.copy(A, f)
            T.copy(f, B)

    with pytest.raises(TileLangCompileError) as err:
        tilelang.compile(main, target="cpu")
    msg = str(err.value)
    assert "two different layouts" in msg and "test_errors.py" in msg


def test_too_many_threads_names_the_capability():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=2048) as bx:
            for i in T.Parallel(16):
                A[i] = A[i] + 1.0

    with pytest.raises(CapabilityError, match="max_threads_per_block"):
        tilelang.compile(main, target="cuda/sm_90a")


def test_shared_memory_over_budget_names_buffers():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            big = T.alloc_shared((256, 256), "float32")  # 256 KB > 227 KB
            T.clear(big)
            T.copy(big[0, 0:16], A)

    with pytest.raises(CapabilityError) as err:
        tilelang.compile(main, target="cuda/sm_90a")
    assert "big" in str(err.value) and "shared_memory_optin" in str(err.value)


def test_dtype_the_target_lacks():
    @T.prim_func
    def main(A: T.Tensor((16,), "float8_e4m3fn")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(16):
                A[i] = A[i]

    with pytest.raises(CapabilityError, match="float8_e4m3fn"):
        tilelang.compile(main, target="cuda/sm_80")


def test_explicit_threads_with_tile_ops_on_block_serial_target():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            s = T.alloc_shared((128,), "float32")
            T.copy(A, s)
            A[tx] = s[tx] + 1.0

    with pytest.raises(CapabilityError, match="block-serial"):
        tilelang.compile(main, target="cpu")


def test_explicit_threads_alone_are_emulated_on_cpu():
    import numpy as np

    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            B[tx] = A[tx] * 2.0 + 1.0

    kernel = tilelang.compile(main, out_idx=[1], target="cpu")
    a = np.random.default_rng().uniform(-1, 1, 128).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a * 2 + 1, rtol=1e-6)
