"""TileLang's fast-math functions (`T.__exp`, ...): float dtypes only; CUDA spells them with its
hardware approximations (`__expf`), a dialect without approximations (the CPU's) with its
accurate functions, and the values are the functions'."""
from __future__ import annotations

import numpy as np
import pytest
from tvm import tirx

import tilelang_core as tilelang
from tilelang_core import language as T

_FUNCTIONS = {"__exp": np.exp, "__exp10": lambda x: 10.0 ** x, "__log": np.log, "__log2": np.log2,
              "__log10": np.log10, "__tan": np.tan, "__cos": np.cos, "__sin": np.sin}


def _kernel(name, dtype="float32", n=64):
    fn = getattr(T, name)

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=n) as _:
            for i in T.Parallel(n):
                B[i] = fn(A[i])

    return main


def test_fast_math_takes_float_values_only():
    assert str(T.__log2(tirx.Var("v", "bfloat16")).ty) == "bfloat16"
    with pytest.raises(TypeError, match=r"T\.__exp only supports floating-point inputs, but got int32"):
        T.__exp(tirx.Var("v", "int32"))
    with pytest.raises(TypeError, match="but got float8_e4m3fn"):
        T.__cos(tirx.Var("v", "float8_e4m3fn"))


def test_cpu_values_are_the_functions():
    x = np.linspace(0.2, 1.4, 64, dtype=np.float32)
    for name in ("__exp", "__log10", "__tan"):
        out = np.zeros_like(x)
        tilelang.compile(_kernel(name), target="cpu")(x, out)
        np.testing.assert_allclose(out, _FUNCTIONS[name](x), rtol=1e-5, err_msg=name)


def test_cuda_spells_the_hardware_approximations():
    pytest.importorskip("tilelang_cuda")
    from tests.cuda.test_cuda_codegen import render

    for name in _FUNCTIONS:
        assert f"{name}f(" in render(_kernel(name)).source, name
    assert "__expf(__half2float(" in render(_kernel("__exp", "float16")).source
