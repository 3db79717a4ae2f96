"""Without the MUSA SDK, `compile` returns a kernel that holds its source: it exports, and a
call says that it cannot run here and why (as Metal's kernels do off macOS)."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core
from tilelang_core import language as T


def gemm(M=128, N=128, K=64, bM=64, bN=64, bK=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


@pytest.fixture
def no_musa_sdk(monkeypatch):
    from tilelang_musa import sdk

    monkeypatch.setattr(sdk, "find_mcc", lambda: None)
    monkeypatch.setattr(sdk, "import_torch_musa", lambda: None)


def test_gemm_for_mp31_compiles_to_a_source_only_kernel_that_exports(no_musa_sdk, tmp_path):
    from tilelang_musa.compile import SOURCE_ONLY_HEADER

    kernel = tilelang_core.compile(gemm(), target="musa/mp_31")
    source = kernel.get_kernel_source()
    assert "__global__" in source
    kernel.export(tmp_path / "gemm")
    exported = [p for p in (tmp_path / "gemm").rglob("*") if p.is_file() and p.read_bytes().startswith(SOURCE_ONLY_HEADER)]
    assert exported, f"no exported file holds the source: {sorted(p.name for p in (tmp_path / 'gemm').rglob('*'))}"
    assert source.strip().splitlines()[-1].encode() in exported[0].read_bytes()

    # a call on this machine's arrays is refused for their device first; loading says the rest
    with pytest.raises(Exception, match="musa/mp_31 and needs a tensor on its device"):
        kernel(np.ones((128, 64), np.float16), np.ones((64, 128), np.float16), np.zeros((128, 128), np.float32))
    loaded = tilelang_core.load(tmp_path / "gemm")
    with pytest.raises(Exception, match=r"holds MUSA C\+\+ source only.*cannot run here: no mcc here.*torch_musa"):
        loaded.loaded
