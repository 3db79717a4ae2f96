"""Whole-kernel layout inference (`infer_layout`) on real programs, for a SIMT target with
matrix instructions (cuda/sm_90a) and one without a backend layout (hip shares the core's
rules): which fragments stay in registers, in which layout, and why one leaves.

These tests fail when a fragment that should stay in registers is placed in shared memory."""
from __future__ import annotations

import pytest

from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import get_plugin_manager
from tilelang_core.transform.layout_inference import FRAGMENT_LAYOUTS
from tilelang_conformance.cases.attention import flashattn
from tilelang_conformance.cases.norm import layernorm_kernel, softmax_kernel


def infer(func, spec="cuda/sm_90a"):
    facts = {}
    lowered = lower(func, get_plugin_manager().parse_target(spec), CompileOptions(), facts)
    decisions = {d.buffer.name: d for d in facts[FRAGMENT_LAYOUTS].decisions()}
    return lowered, decisions


def test_flash_attention_keeps_every_fragment_in_registers():
    lowered, d = infer(flashattn(1, 2, 256, 64, False, 64, 64, num_stages=2, threads=128))
    assert all(x.in_registers for x in d.values()), {k: x.reason for k, x in d.items() if not x.in_registers}
    # matrix-instruction layouts for the gemm operands, projections for the row statistics
    # (Q @ K^T may run on wgmma on sm_90a: its accumulator layout is then the warpgroup's,
    # which equals mma.sync's here, one m64 block per warpgroup, so P still feeds P @ V)
    assert d["acc_s"].layout.name.startswith(("mma.sync.C", "wgmma.D.m64")) and \
        d["acc_o"].layout.name.startswith("mma.sync.C")
    assert d["acc_s_cast"].layout.name.startswith("mma.sync.A")  # the second gemm reads P from registers
    for name in ("scores_max", "scores_max_prev", "scores_scale", "scores_sum", "logsum"):
        assert d[name].layout.replicate == 4 and d[name].layout.slots == 2, name
    text = lowered.script()
    assert "acc_s_cast_reg" in text and "T.tl.shfl_xor" in text


def test_flash_attention_reads_the_row_maximum_from_the_local_replica():
    lowered, d = infer(flashattn(1, 2, 256, 64, False, 64, 64, num_stages=1, threads=128))
    text = lowered.script()
    # acc_s[i, j] - scores_max[i]: the thread's own register slot of the replicated maximum
    assert "scores_max_reg[0]" in text and "scores_max_reg[1]" in text
    assert "scores_max =" not in text  # no shared copy


@pytest.mark.parametrize("kernel", [softmax_kernel(64, 128, 8, "float32"), layernorm_kernel(64, 128, 8, 1e-5)],
                         ids=["softmax", "layernorm"])
def test_row_reductions_stay_in_registers(kernel):
    lowered, d = infer(kernel)
    assert all(x.in_registers for x in d.values()), {k: x.reason for k, x in d.items() if not x.in_registers}
    x = d["x"].layout
    assert x.replicate == 1 and "rows" in x.name  # rows over a warp's lanes, chosen for the reduction
    assert "T.tl.shfl_xor" in lowered.script()


def test_a_gemm_epilogue_runs_in_the_accumulator_layout():
    @T.prim_func
    def gemm_relu(A: T.Tensor((128, 64), "float16"), B: T.Tensor((64, 128), "float16"),
                  C: T.Tensor((128, 128), "float16"), bias: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            acc = T.alloc_fragment((128, 128), "float32")
            out = T.alloc_fragment((128, 128), "float16")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, acc, clear_accum=True)
            for i, j in T.Parallel(128, 128):
                out[i, j] = T.max(acc[i, j] + bias[j], 0)
            T.copy(out, C)

    lowered, d = infer(gemm_relu)
    assert d["acc"].in_registers and d["out"].in_registers
    assert d["out"].layout == d["acc"].layout  # the epilogue's result adopted the accumulator layout
    assert "out_reg" in lowered.script()


def test_a_layout_conflict_moves_one_fragment_to_shared_memory_and_says_why():
    @T.prim_func
    def transpose_read(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((64, 64), "float32")
            y = T.alloc_fragment((64, 64), "float32")
            T.copy(A, x)
            for i, j in T.Parallel(64, 64):
                y[i, j] = x[j, i]  # another thread holds x[j, i]
            T.copy(y, B)

    lowered, d = infer(transpose_read)
    moved = [k for k, x in d.items() if not x.in_registers]
    assert moved == ["x"]
    assert "held by other threads" in d["x"].reason and "T.Parallel at line" in d["x"].reason


def test_the_layout_report_lists_every_fragment():
    facts = {}
    lower(flashattn(1, 2, 256, 64, False, 64, 64), get_plugin_manager().parse_target("cuda/sm_90a"),
          CompileOptions(), facts)
    report = {e["fragment"]: e for e in facts["layout_report"]}
    assert set(report) >= {"acc_s", "acc_o", "acc_s_cast", "scores_max", "logsum"}
    assert report["acc_o"]["placement"] == "registers" and report["acc_o"]["registers_per_thread"] == 32
    assert report["scores_max"]["replicate"] == 4


def test_kernel_explain_reads_the_report():
    import tilelang_core

    kernel = tilelang_core.compile(flashattn(1, 2, 256, 64, False, 64, 64), target="cuda/sm_90a", cache=False)
    text = kernel.explain()
    assert "acc_s_cast [64x64 float16]: registers, 32 per thread; layout mma.sync.A" in text
    assert "scores_max [64 float32]: registers, 2 per thread, replicated x4" in text
    assert "SHARED MEMORY" not in text


def test_shared_buffers_with_disjoint_lifetimes_share_bytes():
    from tilelang_core.transform.storage import place_buffers

    offsets, total = place_buffers([("q", 100, 0, 5), ("k", 64, 1, 5), ("out", 128, 6, 7)])
    assert offsets == {"q": 0, "k": 112, "out": 0} and total == 176
    # an alignment per buffer: small buffers after a 1024-aligned tile do not each round up to 1024
    offsets, total = place_buffers([("tile", 2048, 0, 9, 1024), ("row", 256, 0, 9, 256), ("row2", 256, 0, 9, 256),
                                    ("tile2", 1024, 0, 9, 1024)], 16)
    assert offsets == {"tile": 0, "row": 2048, "row2": 2304, "tile2": 3072} and total == 4096
    # FlashAttention: the epilogue's O_shared reuses the bytes of the main loop's tiles
    import tilelang_core

    kernel = tilelang_core.compile(flashattn(1, 2, 256, 64, False, 64, 64, num_stages=2), target="cuda/sm_90a",
                                   cache=False)
    q, kv = 64 * 64 * 2, 2 * 64 * 64 * 2
    assert kernel.meta.shared_memory == q + 2 * kv  # not + 64 * 64 * 2 for O_shared


def _blocked_fragment(m, n, threads):
    per = m * n // threads
    return T.Fragment((m, n), forward_thread_fn=lambda i, j: (i * n + j) // per,
                      forward_index_fn=lambda i, j: (i * n + j) % per)


@T.prim_func
def annotated_double(A: T.Tensor((16, 32), "float32"), B: T.Tensor((16, 32), "float32")):
    with T.Kernel(1, threads=64) as bx:
        x = T.alloc_fragment((16, 32), "float32")
        T.annotate_layout({x: _blocked_fragment(16, 32, 64)})
        T.copy(A, x)
        for i, j in T.Parallel(16, 32):
            x[i, j] = x[i, j] * 2.0
        T.copy(x, B)


def test_a_user_fragment_annotation_is_kept_and_inverted_for_code():
    lowered, d = infer(annotated_double)
    assert d["x"].in_registers and d["x"].origin.startswith("T.annotate_layout at line")
    assert d["x"].layout.slots == 8 and d["x"].layout.holders(1, 0) == (4,)
    assert "x_reg[r] = x_reg[r] * T.float32(2.0)" in lowered.script()
    assert "tx * 8 + r" in lowered.script()  # element (tx * 8 + r) in row-major order, from the inverse map


def test_a_pinned_layout_that_a_matrix_instruction_cannot_use_is_an_error_naming_both_lines():
    from tilelang_core.transform.errors import TileLangCompileError

    @T.prim_func
    def pinned(A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.annotate_layout({acc: _blocked_fragment(64, 64, 128)})
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, acc, clear_accum=True)
            T.copy(acc, C)

    with pytest.raises(TileLangCompileError) as err:
        infer(pinned)
    text = str(err.value)
    assert "fragment acc is pinned" in text and "T.annotate_layout at line" in text and "T.gemm at line" in text
    assert "mma.sync.C" in text or "wgmma.D" in text  # the accumulator layout the instruction needs


def test_a_fragment_annotation_changes_nothing_on_a_block_serial_target():
    import numpy as np

    import tilelang_core

    kernel = tilelang_core.compile(annotated_double, target="cpu")
    a = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    b = np.full_like(a, np.nan)
    kernel(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_a_replicated_update_of_a_fragment_moved_to_shared_memory_runs_on_one_replica():
    # Without matrix instructions the portable GEMM's layout conflicts with the row
    # statistics: logsum moves to shared memory, and `logsum[i] = logsum[i] * scale[i] +
    # sum[i]` runs in the replicated layout of `sum`. Every replica read-modify-writing it
    # is a race wherever threads do not run in lockstep (OpenCL on a CPU): one replica writes.
    if "opencl" not in get_plugin_manager().registry.kinds:
        pytest.skip("needs a SIMT target without matrix instructions (tilelang-opencl is not installed)")
    lowered, d = infer(flashattn(1, 2, 128, 64, False, 64, 64), "opencl/pocl-cpu")
    assert not d["logsum"].in_registers and d["scores_sum"].in_registers
    lines = lowered.script().split("\n")
    updates = [i for i, line in enumerate(lines) if line.strip().startswith("logsum[") and "scores_sum_reg" in line]
    assert updates
    for i in updates:
        assert lines[i - 1].strip() == "if tx & 31 == 0:", lines[i - 1]
