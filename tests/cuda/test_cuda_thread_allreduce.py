"""`T.tvm_thread_allreduce` (TVM's per-thread collective, used by TileLang's GEMV examples):
lowered for CUDA and run in the NumPy emulator of lowered TIR (`tir_emulator.py`), every
output checked against NumPy; the butterfly, the shared-memory and the serial-loop paths are
each taken; the CPU rejects it with the line.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core
from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import get_plugin_manager
from tilelang_core.transform.errors import CapabilityError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tir_emulator import run_kernel  # noqa: E402


def _target(arch: str = "sm_90a"):
    return get_plugin_manager().parse_target(f"cuda/{arch}")


def row_reduce(rows: int, cols: int, block_rows: int, lanes: int, kind: str = "sum", cond_half: bool = False):
    """out[r] = reduce over c of x[r, c]; threads (block_rows, lanes): lane `tk` folds the
    columns tk, tk + lanes, ... of its row, then the lanes of a row all-reduce."""
    steps = cols // lanes

    @T.prim_func
    def kernel(x: T.Tensor((rows, cols), "float32"), out: T.Tensor((rows, 2), "float32")):
        with T.Kernel(rows // block_rows, threads=(block_rows, lanes)) as bx:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            part = T.alloc_local((1,), "float32")
            total = T.alloc_local((1,), "float32")
            if kind == "sum":
                part[0] = T.float32(0)
            else:
                part[0] = T.float32(-1e30)
            for s in T.serial(steps):
                if kind == "sum":
                    part[0] += x[bx * block_rows + tn, s * lanes + tk]
                else:
                    part[0] = T.max(part[0], x[bx * block_rows + tn, s * lanes + tk])
            if kind == "sum":
                with T.attr(T.comm_reducer(lambda a, b: a + b, [T.float32(0)]), "reduce_scope",
                            T.reinterpret(T.uint64(0), dtype="handle")):
                    T.evaluate(T.tvm_thread_allreduce(T.uint32(1), part[0], tk % 2 == 0 if cond_half else True,
                                                      total[0], tk, dtype="handle"))
            else:
                with T.attr(T.comm_reducer(lambda a, b: T.max(a, b), [T.float32(-1e30)]), "reduce_scope",
                            T.reinterpret(T.uint64(0), dtype="handle")):
                    T.evaluate(T.tvm_thread_allreduce(T.uint32(1), part[0], True, total[0], tk, dtype="handle"))
            # every lane holds the result: lane 0 and the last lane both write theirs
            if tk == 0:
                out[bx * block_rows + tn, 0] = total[0]
            if tk == lanes - 1:
                out[bx * block_rows + tn, 1] = total[0]

    return kernel


def _run(func, x):
    lowered = lower(func, _target(), CompileOptions())
    out = np.full((x.shape[0], 2), np.nan, np.float32)
    run_kernel(lowered, x, out)
    return out, lowered.script()


@pytest.mark.parametrize("block_rows,lanes,path", [
    (2, 32, "shuffle+shared"),  # lanes span bits 1..5: four bits shuffle, one across warps
    (1, 32, "shuffle"),         # one whole warp per row
    (32, 4, "shared"),          # lanes 32 apart: every bit crosses warps
    (3, 5, "loop"),             # extents not powers of two
])
def test_sum_allreduce_matches_numpy(block_rows, lanes, path):
    rows, cols = 2 * block_rows * (1 if block_rows > 1 else 2), lanes * 3
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    out, script = _run(row_reduce(rows, cols, block_rows, lanes), x)
    ref = x.astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(out[:, 0], ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[:, 0], out[:, 1])  # every lane of a row holds the same bits
    assert ("tl.shfl_xor" in script) == ("shuffle" in path)
    assert ("allreduce_red" in script) == (path != "shuffle")
    assert ("allreduce_j" in script) == (path == "loop")


def test_max_allreduce_and_condition():
    x = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
    out, _ = _run(row_reduce(4, 64, 2, 32, kind="max"), x)
    np.testing.assert_array_equal(out[:, 0], x.max(axis=1))
    # only even lanes contribute: the odd lanes give the reducer's identity
    out, _ = _run(row_reduce(4, 64, 2, 32, cond_half=True), x)
    lanes_even = x.reshape(4, 2, 32)[:, :, 0::2].astype(np.float64).sum(axis=(1, 2))
    np.testing.assert_allclose(out[:, 0], lanes_even, rtol=1e-5, atol=1e-5)


def test_compiles_with_nvrtc():
    kernel = tilelang_core.compile(row_reduce(4, 64, 2, 32), target="cuda/sm_90a")
    src = kernel.get_kernel_source()
    assert "__shfl_xor_sync" in src and "__syncthreads" in src


def test_cpu_rejects_it_with_the_line():
    with pytest.raises(CapabilityError, match="tvm_thread_allreduce") as err:
        tilelang_core.compile(row_reduce(4, 64, 2, 32), target="cpu")
    assert "test_cuda_thread_allreduce.py" in str(err.value)
