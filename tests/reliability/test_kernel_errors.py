"""Mistakes in writing or handing over a kernel: Python math on kernel values, `compile()`
given something that is not a kernel, bad `out_idx`, typos. Each error names the user's line
(or the value seen) and what to write instead."""
from __future__ import annotations

import math
import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.language.parser import KernelSyntaxError


def with_python_call(kind):
    @T.prim_func
    def main(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(16):
                if kind == "math.sqrt":
                    B[i] = math.sqrt(A[i])
                elif kind == "math.exp":
                    B[i] = math.exp(n)
                elif kind == "np.exp":
                    B[i] = np.exp(A[i])
                elif kind == "np.maximum":
                    B[i] = np.maximum(A[i], 0.0)
                elif kind == "max":
                    B[i] = max(A[i], 0.0)
                elif kind == "abs":
                    B[i] = abs(A[i])
                elif kind == "round":
                    B[i] = round(A[i])
                elif kind == "float":
                    B[i] = float(A[i])
                elif kind == "int":
                    B[i] = A[int(i)]
                else:
                    B[i] = math.sqrt(2.0) * A[i]  # on a Python number: fine
    return main


@pytest.mark.parametrize("kind, advice", [
    ("math.sqrt", "T.sqrt(...)"), ("math.exp", "T.exp(...)"), ("np.exp", "T.exp(...)"), ("np.maximum", "T.max(...)"),
    ("max", "T.max(...)"), ("abs", "T.abs(...)"), ("round", "T.round(...)"), ("float", 'T.Cast("float32", ...)'),
    ("int", 'T.Cast("int32", ...)'),
])
def test_python_math_on_a_kernel_value_names_the_T_function(kind, advice):
    with pytest.raises(KernelSyntaxError) as info:
        with_python_call(kind)
    message = str(info.value)
    assert "test_kernel_errors.py" in message  # the user's line
    assert f"hint: {kind}(...) computes on Python numbers while the kernel is parsed" in message, message
    assert f"use {advice}" in message, message


def test_python_math_on_python_numbers_still_works(cache_dir):
    kernel = tilelang.compile(with_python_call("constant"), out_idx=[1], target="cpu")
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_allclose(kernel(x, 0), x * math.sqrt(2.0), rtol=1e-6)


def plain_kernel(A, B):
    return A


@pytest.mark.parametrize("given, words", [
    (plain_kernel, ["compile: got the plain Python function plain_kernel", "test_kernel_errors.py", "@T.prim_func"]),
    (None, ["expected a T.prim_func or an IRModule, got NoneType"]),
    ("main", ["expected a T.prim_func or an IRModule, got str"]),
])
def test_compile_given_something_else_says_what_to_pass(given, words):
    with pytest.raises(TypeError) as info:
        tilelang.compile(given, target="cpu")
    for word in words:
        assert word in str(info.value), str(info.value)


def test_compile_given_a_jit_function_says_to_call_it():
    @tilelang.jit(out_idx=[-1])
    def double(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=1):
                for i in T.Parallel(n):
                    B[i] = A[i] * 2.0
        return main

    with pytest.raises(TypeError, match=r"@tilelang.jit function .*double, which compiles itself: call it"):
        tilelang.compile(double, target="cpu")


def two_params():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32"), s: T.float32, B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(16):
                B[i] = A[i] * s
    return main


@pytest.mark.parametrize("out_idx, error, words", [
    (5, ValueError, r"out_idx 5 is out of range for a kernel with 3 parameters \(0: A, 1: s, 2: B\)"),
    (-4, ValueError, r"out_idx -4 is out of range"),
    ("B", TypeError, r"out_idx: 'B' is not a parameter position; pass an int or a list of ints"),
    ([2.0], TypeError, r"out_idx: 2.0 is not a parameter position"),
    (1, ValueError, r"out_idx 1 names the scalar parameter 's'; outputs are tensors"),
])
def test_bad_out_idx_is_refused_with_the_parameters(cache_dir, out_idx, error, words):
    with pytest.raises(error, match=words):
        tilelang.compile(two_params(), out_idx=out_idx, target="cpu")


def test_repeated_out_idx_is_one_output(cache_dir):
    kernel = tilelang.compile(two_params(), out_idx=[2, -1], target="cpu")
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_allclose(kernel(x, 3.0), x * 3)


def test_misspelt_language_name_suggests_the_right_one():
    with pytest.raises(KernelSyntaxError, match=r"T.cpoy is not part of the tilelang_core language; did you mean T.copy"):
        @T.prim_func
        def main(X: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                T.cpoy(X, X)


def test_gemm_with_mismatched_k_names_both_shapes():
    with pytest.raises(KernelSyntaxError, match=r"T.gemm: K of A is 32 but K of B is 16; A is As \(16, 32\), B is Bs "
                                                r"(.|\n)*T.gemm\(As, Bs, Cl\)"):
        @T.prim_func
        def main(A: T.Tensor((16, 32), "float16"), B: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")):
            with T.Kernel(1, threads=128):
                As = T.alloc_shared((16, 32), "float16")
                Bs = T.alloc_shared((16, 16), "float16")
                Cl = T.alloc_fragment((16, 16), "float32")
                T.copy(A, As)
                T.copy(B, Bs)
                T.gemm(As, Bs, Cl)
                T.copy(Cl, C)


def test_copy_between_shapes_that_differ_names_both():
    with pytest.raises(KernelSyntaxError, match=r"T.copy: source A \(16, 32\) and destination B \(16, 16\) differ"):
        @T.prim_func
        def main(A: T.Tensor((16, 32), "float32"), B: T.Tensor((16, 16), "float32")):
            with T.Kernel(1, threads=128):
                T.copy(A, B)


@pytest.mark.parametrize("target, limit", [("cuda/sm_90a", "232448"), ("hip/gfx942", "65536")])
def test_shared_memory_past_the_target_names_the_buffer(target, limit):
    @T.prim_func
    def main(X: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((1024, 1024), "float32")
            T.copy(X, S[0, 0:4])

    from tilelang_core.transform.errors import CapabilityError

    with pytest.raises(CapabilityError, match=rf"needs 4194304 bytes of shared memory \(S 4194304 B\) but {target} "
                                              rf"allows {limit}(.|\n)*T.alloc_shared\(\(1024, 1024\)"):
        tilelang.lower(main, target=target)


@pytest.mark.parametrize("spec, words", [
    ("cuda/sm_12", r"unknown arch 'sm_12' for target kind 'cuda'.*Valid archs for cuda: sm_70, sm_75, sm_80"),
    ("cdua", r"unknown target kind 'cdua'.*Valid kinds: .*cuda"),
])
def test_bad_target_names_the_valid_ones(spec, words):
    from tilelang_core.plugin import TargetError

    with pytest.raises(TargetError, match=words):
        tilelang.compile(two_params(), target=spec)


def test_unknown_pass_config_lists_the_valid_keys():
    from tilelang_core.jit.options import OptionsError

    with pytest.raises(OptionsError, match=r"unknown pass config 'tl.no_such'; valid keys: .*fast_math"):
        tilelang.compile(two_params(), target="cpu", pass_configs={"tl.no_such": 1})
