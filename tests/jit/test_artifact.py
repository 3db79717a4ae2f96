"""`tilelang_core.lower` (TileLang's `tilelang.lower`): the pipeline and the code generator
without loading, the source `compile` would build, the target from a TVM target context."""
from __future__ import annotations

import numpy as np
import pytest
import tvm

import tilelang_core as tilelang
from tilelang_core import language as T


def axpy(n=64):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"), alpha: T.float32):
        with T.Kernel(T.ceildiv(n, 16)) as bx:
            for i in T.Parallel(16):
                Y[bx * 16 + i] = Y[bx * 16 + i] + alpha * X[bx * 16 + i]
    return main


def test_lower_gives_the_source_compile_builds():
    func = axpy()
    artifact = tilelang.lower(func, target="cpu")
    kernel = tilelang.compile(func, target="cpu")
    assert artifact.kernel_source == kernel.get_kernel_source()
    assert [(p.name, p.kind, p.dtype) for p in artifact.params] == [
        ("X", "tensor", "float32"), ("Y", "tensor", "float32"), ("alpha", "scalar", "float32")]
    assert str(artifact.target).startswith("cpu/") and artifact.rt_mod is None and artifact.device_binary is None
    (lowered,) = [f for _, f in artifact.device_mod.functions.items()]
    assert isinstance(lowered, tvm.tirx.PrimFunc)
    # the kernel the source came from still computes Y += alpha * X
    rng = np.random.default_rng()
    x, y = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    expected = y + np.float32(0.5) * x
    kernel(x, y, 0.5)
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_target_from_a_tvm_target_context_and_tilelang_spellings():
    func = axpy()
    with tvm.target.Target("c"):
        in_context = tilelang.lower(func)
    spelled = tilelang.lower(tvm.IRModule({"main": func}), target="c", target_host="c")
    assert in_context.kernel_source == spelled.kernel_source and str(in_context.target).startswith("cpu/")
    assert spelled.target_host == "c"


def test_device_compile_on_request():
    artifact = tilelang.lower(axpy(), target="cpu", enable_device_compile=True)
    assert isinstance(artifact.device_binary, bytes) and artifact.device_binary


def test_lower_takes_one_prim_func():
    with pytest.raises(TypeError, match="expected a T.prim_func or an IRModule"):
        tilelang.lower("main", target="cpu")
    with pytest.raises(ValueError, match="holds 2 PrimFuncs"):
        tilelang.lower(tvm.IRModule({"a": axpy(), "b": axpy(32)}), target="cpu")
