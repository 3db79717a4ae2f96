"""OpenCL kernels built and run for real on an OpenCL device (PoCL on the CPU in CI).

Each kernel runs on fresh random inputs with its outputs poisoned (NaN) first, and every
element is compared with a float64 NumPy reference. Skipped, with the backend's reason, where
there is no OpenCL device (scripts/install_opencl_runtime.sh installs PoCL).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tilelang_opencl")

import tilelang_core  # noqa: E402
from tilelang_core.runtime import CompileError  # noqa: E402
from tilelang_opencl import device as opencl_device  # noqa: E402
from tilelang_opencl.compile import compile_opencl, program_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.run import kernels  # noqa: E402

TARGET = "opencl/pocl-cpu"


def _pocl_reason() -> str | None:
    try:
        opencl_device.device_for("pocl-cpu")
    except opencl_device.OpenCLUnavailable as exc:
        return str(exc)
    return None


pytestmark = pytest.mark.skipif(_pocl_reason() is not None, reason=f"no PoCL CPU device: {_pocl_reason()}")


def compiled(program):
    return tilelang_core.compile(program, target=TARGET, cache=False)


def test_float16_elementwise_runs_and_rounds_like_numpy():
    rng = np.random.default_rng()
    a = rng.standard_normal(1000).astype(np.float16)
    b = rng.standard_normal(1000).astype(np.float16)
    c = np.full(1000, np.nan, np.float16)
    compiled(kernels.elementwise(1000, "float16"))(a, b, c)
    want = (a.astype(np.float64) * b + a).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float64), want.astype(np.float64), rtol=2e-3, atol=2e-3)


def test_gemm_and_row_reduction_through_local_memory():
    rng = np.random.default_rng()
    a = rng.standard_normal((64, 48)).astype(np.float32)
    b = rng.standard_normal((48, 32)).astype(np.float32)
    c = np.full((64, 32), np.nan, np.float32)
    compiled(kernels.gemm(64, 32, 48, 32, 32, 16, "float32", "float32", "float32"))(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)

    x = rng.standard_normal((64, 128)).astype(np.float32)
    y = np.full(64, np.nan, np.float32)
    compiled(kernels.reduce(64, 128, "max", 1, True, block_M=8))(x, y)
    np.testing.assert_array_equal(y, x.max(axis=1))


def test_split_k_atomics_add_every_block():
    rng = np.random.default_rng()
    a = rng.standard_normal((32, 64)).astype(np.float32)
    b = rng.standard_normal((64, 32)).astype(np.float32)
    c = np.zeros((32, 32), np.float32)
    compiled(kernels.atomic_split_k(32, 32, 64, 32, 32, 16, 4))(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_symbolic_shapes_size_the_buffers_per_call_and_export_round_trips(tmp_path):
    kernel = compiled(kernels.symbolic_scale())
    kernel.export(tmp_path / "k")
    loaded = tilelang_core.load(tmp_path / "k")
    rng = np.random.default_rng()
    for n, run in ((1, kernel), (100, kernel), (257, loaded)):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        y = np.full((n, 4), np.nan, np.float32)
        run(x, y)
        np.testing.assert_allclose(y, x.astype(np.float64) * 3 + 1, rtol=1e-6)


def test_a_program_the_compiler_refuses_names_the_log_and_a_rebuild_command():
    source = '#include "tl_opencl.h"\n__kernel void broken(__global float* A) { A[0] = undefined_name; }\n'
    with pytest.raises(CompileError, match=r"(?s)refused the generated program.*undefined_name.*program: .*\.cl\nrebuild: "):
        compile_opencl(source, "pocl-cpu", {})
    assert "tl_atomic_add" in program_text(source)  # the helpers travel inside the program


def test_a_target_without_a_device_says_what_to_install():
    with pytest.raises(opencl_device.OpenCLUnavailable, match="no OpenCL device of arch 'subgroup32'.*opencl/pocl-cpu"):
        opencl_device.device_for("subgroup32")


@pytest.mark.parametrize("batch, M, N, K", [(1, 70, 45, 37), (2, 33, 64, 16)])
def test_cuda_tables_fma_gemm_runs_its_two_launches(batch, M, N, K):
    """The CUDA table's float32 "highest" GEMM (`ops.gemm._gemm_fma_kernel`): a launch writing
    A as (K, M) into a workspace (`fma_pretranspose`), then the prefetch tile loop over it, at
    ragged sizes (and a batch), run as OpenCL on PoCL's CPU device: every element within the
    float32 bound of the float64 product (the CUDA emulator runs one launch)."""
    import numpy as np

    from tilelang_core import ops
    from tilelang_core.ops.gemm import _gemm_fma_kernel
    from tilelang_core.ops.registry import resolve_config
    from tilelang_core.plugin import get_plugin_manager

    manager = get_plugin_manager()
    if "cuda" not in manager.registry.kinds:
        pytest.skip("the CUDA backend (its config table) is not installed")
    op = ops.get("gemm")
    problem = {"batch": batch, "M": M, "N": N, "K": K, "dtype": "float32", "trans_a": False, "trans_b": False,
               "bias": True, "activation": "relu", "fma": True}
    config, _ = resolve_config(op, manager.parse_target("cuda/sm_90a"), problem)
    assert config["fma_pretranspose"] and config["fma_prefetch"]
    kernel = tilelang_core.compile(_gemm_fma_kernel(problem, {**config, "fma_min_blocks": 0}), target=TARGET)
    assert len(kernel.meta.launches) == 2 and kernel.meta.workspaces[0].shape == (batch, K, M)
    rng = np.random.default_rng(batch * 1000 + M)
    a = rng.standard_normal((batch, M, K)).astype(np.float32)
    b = rng.standard_normal((batch, K, N)).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    c = np.full((batch, M, N), np.nan, np.float32)
    kernel(a, b, bias, c)
    for i in range(batch):
        ref = op.reference(a[i], b[i], bias=bias, activation="relu")
        magnitude = op.reference(np.abs(a[i]), np.abs(b[i]), bias=np.abs(bias))
        assert (np.abs(c[i] - ref) <= 2 * (K + 2) * 2.0 ** -24 * magnitude).all()
