"""Each core pass on a small kernel: what holds before and after it (see each pass's
docstring). Checked on the printed IR and on the IR's structure."""
from __future__ import annotations

import numpy as np
import pytest
import tvm_ffi
from tvm import tirx as tir

from tilelang_core import language as T
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import get_plugin_manager
from tilelang_core.transform import (check, finalize, lower_tile_ops, parallel, pipeline_planning,
                                     simt, threads)
from tilelang_core.transform.pipeline import PassContext, Pipeline, PipelineError, default_pipeline


def ctx_for(target: str) -> PassContext:
    from tilelang_core.plugin import hooks_for

    t = get_plugin_manager().parse_target(target)
    return PassContext(target=t, options=CompileOptions(), hooks=hooks_for(t))


def gemm(M=64, N=64, K=64):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 32), T.ceildiv(M, 32), threads=128) as (bx, by):
            A_s = T.alloc_shared((32, 16), "float16")
            B_s = T.alloc_shared((16, 32), "float16")
            C_f = T.alloc_fragment((32, 32), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, 16), num_stages=3):
                T.copy(A[by * 32, ko * 16], A_s)
                T.copy(B[ko * 16, bx * 32], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * 32, bx * 32])
    return main


def loops_of(func):
    found = []
    tvm_ffi.structural_walk(func.body, ((tir.For, lambda f: found.append(f)),))
    return found


def test_plan_pipeline_keeps_a_serial_loop_and_records_stages():
    ctx = ctx_for("cpu")
    before = gemm()
    assert any("num_stages" in f.annotations for f in loops_of(before))
    after = pipeline_planning.plan_pipeline(before, ctx)
    assert not any("num_stages" in f.annotations for f in loops_of(after))
    assert ctx.facts["pipelines"] == [("ko", 3)]


def test_lower_tile_ops_leaves_no_tile_op_and_marks_parallel_loops():
    from tilelang_core.ir import collect_tile_ops

    ctx = ctx_for("cuda/sm_80")
    after = lower_tile_ops.lower_tile_ops(pipeline_planning.plan_pipeline(gemm(), ctx), ctx)
    assert not collect_tile_ops(after)
    assert any(f.kind == tir.ForKind.PARALLEL for f in loops_of(after))


def test_partition_parallel_block_serial_vectorizes_innermost():
    ctx = ctx_for("cpu")
    func = lower_tile_ops.lower_tile_ops(gemm(), ctx)
    after = parallel.partition_parallel(func, ctx)
    kinds = {f.kind for f in loops_of(after)}
    assert tir.ForKind.PARALLEL not in kinds
    assert tir.ForKind.VECTORIZED in kinds


def test_simt_partition_puts_accumulator_in_registers():
    ctx = ctx_for("hip/gfx90a")
    func = lower_tile_ops.lower_tile_ops(gemm(), ctx)
    after = simt.partition_over_threads(func, ctx)
    text = after.script()
    assert tir.ForKind.PARALLEL not in {f.kind for f in loops_of(after)}
    assert "C_f" in text and 'scope="local.fragment"' not in text
    assert "tx" in text  # iterations are split over the block's threads


def test_simt_fragment_with_mismatched_access_moves_to_shared():
    @T.prim_func
    def main(X: T.Tensor((4, 64), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((4, 64), "float32")
            y = T.alloc_fragment((4,), "float32")
            T.copy(X, x)
            T.reduce_sum(x, y, dim=1)
            T.copy(y, Y)

    ctx = ctx_for("hip/gfx90a")
    func = lower_tile_ops.lower_tile_ops(main, ctx)
    after = simt.insert_block_barriers(simt.partition_over_threads(func, ctx), ctx)
    text = after.script()
    assert 'x = T.alloc_buffer((4, 64), scope="shared.dyn")' in text
    assert "sync_threads" in text


def test_lower_threads_removes_unused_thread_attr_on_block_serial():
    ctx = ctx_for("cpu")
    after = threads.lower_threads(gemm(), ctx)
    assert "threadIdx" not in after.script()
    assert "blockIdx.x" in after.script()


def test_finalize_appends_symbolic_dims_as_params():
    n = T.symbolic("n")

    @T.prim_func
    def main(X: T.Tensor((n, 8), "float32")):
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            for i, j in T.Parallel(32, 8):
                if bx * 32 + i < n:
                    X[bx * 32 + i, j] = X[bx * 32 + i, j] + 1.0

    ctx = ctx_for("cpu")
    after = finalize.finalize(main, ctx)
    assert len(after.params) == 2 and after.params[1].name == "n"
    assert ctx.facts["symbols"] == {"n": (0, 0)}


def test_check_passes_a_good_kernel_unchanged():
    ctx = ctx_for("cuda/sm_90a")
    func = gemm()
    assert check.check(func, ctx).same_as(func)


@T.prim_func
def no_launch_frame(A: T.Tensor((100,), "float32"), B: T.Tensor((100,), "float32"), C: T.Tensor((100,), "float32")):
    for i in T.Parallel(100):
        C[i] = A[i] * B[i] - A[i]
    for i in T.serial(99):
        C[i + 1] = C[i + 1] + C[i]


def test_check_runs_a_body_without_t_kernel_as_one_block_on_block_serial_targets():
    after = check.check(no_launch_frame, ctx_for("cpu"))
    text = after.script()
    assert 'T.launch_thread("blockIdx.x", 1)' in text and 'T.launch_thread("threadIdx.x", 1)' in text
    import tilelang_core as tilelang

    rng = np.random.default_rng()
    a, b = rng.standard_normal(100).astype(np.float32), rng.standard_normal(100).astype(np.float32)
    c = np.full(100, np.nan, np.float32)
    tilelang.compile(no_launch_frame, target="cpu")(a, b, c)
    np.testing.assert_allclose(c, np.cumsum(a * b - a, dtype=np.float32), rtol=1e-5, atol=1e-5)


def test_check_wants_t_kernel_on_simt_targets():
    from tilelang_core.transform.errors import TileLangCompileError

    with pytest.raises(TileLangCompileError, match="has no `with T.Kernel"):
        check.check(no_launch_frame, ctx_for("cuda/sm_80"))


def test_pipeline_edits_by_name():
    pipeline = default_pipeline()
    assert pipeline.names()[0] == "inline_constants" and pipeline.names()[-1] == "finalize"
    pipeline.insert_after("lower_tile_ops", "mine", lambda f, c: f)
    assert pipeline.names()[pipeline.names().index("lower_tile_ops") + 1] == "mine"
    pipeline.remove("mine")
    try:
        pipeline.insert_before("nope", "x", lambda f, c: f)
    except PipelineError as err:
        assert "check" in str(err)
    else:
        raise AssertionError("an unknown point must be an error")
    assert isinstance(pipeline, Pipeline)
