"""tilelang_core.tools (TileLang's `tilelang.tools`): plot_layout and Analyzer."""
from __future__ import annotations

import subprocess
import sys

from tilelang_core import language as T
from tilelang_core.tools import Analyzer, plot_layout


def gemm(M=256, N=384, K=512, bm=128, bn=128, bk=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(N // bn, M // bm, threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bn, bk), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for k in T.Pipelined(K // bk, num_stages=3):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[bx * bn, k * bk], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=True)
            T.copy(C_l, C[by * bm, bx * bn])
    return main


class Device:
    peak_tflops = 100.0
    bandwidth = (2_000_000, 2_000_000)  # TileLang's carver: MB/s


def test_analyzer_counts_flops_and_global_bytes_over_the_grid():
    M, N, K = 256, 384, 512
    result = Analyzer.analysis(gemm(M, N, K), Device())
    assert result.total_flops == 2 * M * N * K
    blocks_m, blocks_n = M // 128, N // 128
    assert result.total_global_bytes == 2 * (M * K * blocks_n + N * K * blocks_m + M * N)
    assert result.expected_bandwidth_GBps == 2000.0
    assert result.estimated_time == max(result.total_flops / 100e12, result.total_global_bytes / 2000e9)


def test_plot_layout_draws_layouts_and_fragments(tmp_path):
    files = plot_layout(T.Layout([4, 4], lambda i, j: (j, i)), save_directory=tmp_path, name="t", formats="all")
    assert [f.name for f in files] == ["t.png", "t.svg"]
    assert files[0].read_bytes().startswith(b"\x89PNG")
    svg = files[1].read_text()
    assert ">1,0<" in svg and ">0,1<" in svg  # element (0, 1) lives at (1, 0)
    frag = plot_layout(T.Fragment([2, 4], forward_fn=lambda i, j: (i * 2 + j // 2, j % 2)),
                       save_directory=tmp_path, name="f", formats="svg")[0].read_text()
    assert ">T3:1<" in frag  # element (1, 3): thread 3, slot 1


def test_tilelang_tools_resolves_under_the_alias():
    code = ("from tilelang_core.compat import install; install()\n"
            "from tilelang.tools import plot_layout, Analyzer\nprint(plot_layout.__module__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "tilelang_core.tools" in done.stdout, done.stderr
