"""T.copy into or out of a T.alloc_local array is each thread's own copy of its whole region
(TileLang's semantics; its 2:4 compressor copies `dense[row(tm), cols(tn)]` into one per
thread). It was shared out over the block like a tile copy: each thread copied one element of
some other thread's region, and TileLang's sparse GEMM example computed wrong results on the
H200. Checked in the TIR emulator."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import tilelang_core.language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import get_plugin_manager

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tir_emulator import run_kernel  # noqa: E402


def test_each_thread_copies_its_whole_region_into_and_out_of_its_local_array():
    rows, per = 4, 8

    @T.prim_func
    def main(A: T.Tensor((rows, 4 * per), "float32"), B: T.Tensor((rows, 4 * per), "float32")):
        with T.Kernel(1, threads=(rows, 4)) as bx:
            tm = T.get_thread_binding(0)
            tn = T.get_thread_binding(1)
            buf = T.alloc_local([per], "float32")
            T.copy(A[tm, tn * per:(tn + 1) * per], buf)
            for i in T.unroll(per):
                buf[i] = buf[i] * 2.0 + T.cast(tn, "float32")
            T.copy(buf, B[tm, tn * per:(tn + 1) * per])

    lowered = lower(main, get_plugin_manager().parse_target("cuda/sm_90a"), CompileOptions())
    rng = np.random.default_rng(0)
    a = rng.standard_normal((rows, 4 * per)).astype(np.float32)
    b = np.full_like(a, np.nan)
    run_kernel(lowered, a, b)
    want = a * 2 + np.repeat(np.arange(4, dtype=np.float32), per)[None, :]
    np.testing.assert_array_equal(b, want)
