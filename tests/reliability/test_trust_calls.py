"""Issue 31, calls: strides must be whole elements, inputs are checked before outputs are
allocated, a written tensor may not share memory with another argument unless the kernel
declares it (pass_configs={"tl.may_alias": True}), scalar and device errors name what is
wrong; ops give torch's results on empty inputs; new-backend refuses taken names."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.runtime import KernelCallError


def reverse(n=64):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(4, threads=1) as bx:
            for i in T.Parallel(n // 4):
                B[bx * (n // 4) + i] = A[n - 1 - bx * (n // 4) - i]
    return main


def test_byte_stride_of_no_whole_element_is_refused(cache_dir):
    kernel = tilelang.compile(reverse(), out_idx=[1], target="cpu")
    raw = np.arange(64 * 6, dtype=np.uint8)
    view = np.lib.stride_tricks.as_strided(raw.view(np.float32)[:1], shape=(64,), strides=(6,))
    kernel(np.zeros(64, np.float32))  # a guard exists: the view must not pass it either
    with pytest.raises(KernelCallError, match=r"argument 'A'.*strides are not whole elements"):
        kernel(view)


def test_input_and_written_output_sharing_memory_is_refused(cache_dir):
    kernel = tilelang.compile(reverse(), target="cpu")
    a, b = np.arange(64, dtype=np.float32), np.empty(64, np.float32)
    kernel(a, b)  # a guard exists: aliasing must not pass it
    np.testing.assert_array_equal(b, a[::-1])
    with pytest.raises(KernelCallError, match=r"'B' \(parameter 1\) and 'A' \(parameter 0\).*share memory"):
        kernel(a, a)
    base = np.arange(128, dtype=np.float32)
    with pytest.raises(KernelCallError, match="share memory"):  # overlapping, not equal
        kernel(base[:64], base[32:96])


def test_declared_in_place_kernel_may_alias(cache_dir):
    kernel = tilelang.compile(reverse(), target="cpu", pass_configs={"tl.may_alias": True})
    a = np.arange(64, dtype=np.float32)
    kernel(a, a)  # declared: the caller takes what the kernel does in place
    assert kernel.meta.extra["may_alias"] is True


def test_inputs_are_checked_before_outputs_are_allocated(cache_dir):
    @T.prim_func
    def huge(A: T.Tensor((1 << 33,), "float32"), B: T.Tensor((1 << 33,), "float32")):
        with T.Kernel(1, threads=1):
            B[0] = A[0]

    kernel = tilelang.compile(huge, out_idx=[1], target="cpu")
    with pytest.raises(KernelCallError, match=r"argument 'A'.*expected shape \(8589934592,\), got \(16,\)"):
        kernel(np.zeros(16, np.float32))


def test_huge_float_scalar_names_the_parameter(cache_dir):
    @T.prim_func
    def scaled(X: T.Tensor((8,), "float32"), s: T.float32, Y: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(8):
                Y[i] = X[i] * s

    kernel = tilelang.compile(scaled, out_idx=[2], target="cpu")
    with pytest.raises(KernelCallError, match=r"argument 's' \(parameter 1\).*past the largest float32"):
        kernel(np.zeros(8, np.float32), 2 ** 1100)


def test_meta_tensor_error_names_meta(cache_dir):
    torch = pytest.importorskip("torch")
    n = T.symbolic("n")

    @T.prim_func
    def copy(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                B[i] = A[i]

    kernel = tilelang.compile(copy, out_idx=[1], target="cpu")
    for shape in (64, 0):  # an empty meta tensor has no data pointer to miss either
        with pytest.raises(KernelCallError, match=r"argument 'A'.*'meta'"):
            kernel(torch.empty(shape, device="meta"))


def test_gemm_with_k_zero_gives_zeros(cache_dir):
    from tilelang_core import ops

    c = ops.gemm(np.zeros((16, 0), np.float32), np.zeros((0, 8), np.float32), target="cpu")
    assert c.shape == (16, 8) and not c.any()
    bias = np.arange(8, dtype=np.float32)
    c = ops.gemm(np.zeros((4, 0), np.float32), np.zeros((0, 8), np.float32), bias=bias, target="cpu")
    np.testing.assert_array_equal(c, np.broadcast_to(bias, (4, 8)))


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "gelu", "silu", "rms_norm"])
def test_empty_input_gives_an_empty_result(cache_dir, op):
    from tilelang_core import ops

    x = np.zeros((0, 16), np.float32)
    y = ops.rms_norm(x, np.ones(16, np.float32), target="cpu") if op == "rms_norm" else getattr(ops, op)(x, target="cpu")
    assert y.shape == (0, 16) and y.dtype == np.float32


@pytest.mark.parametrize("name, words", [("cpu", "installed backend 'cpu'"), ("core", "core package tilelang-core")])
def test_new_backend_refuses_a_taken_name(tmp_path, name, words):
    from tilelang_core.cli.main import main

    assert main(["new-backend", name, "--dest", str(tmp_path / name)]) == 2
    assert not (tmp_path / name).exists()
    from tilelang_core.cli.new_backend import ScaffoldError, scaffold_backend

    with pytest.raises(ScaffoldError, match=words):
        scaffold_backend(name, tmp_path / name)
