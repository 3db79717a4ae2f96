"""`simplify_guards`: bounds guards that the launch proves true are dropped, the others stay,
and results do not change (run on the CPU at ragged and whole-tile sizes)."""
from __future__ import annotations

import numpy as np
import pytest
from tvm import tirx as tir

import tilelang_core
from tilelang_core import language as T
from tilelang_core.transform import VAR_RANGES
from tilelang_core.transform.guards import simplify_guards
from tilelang_core.transform.pipeline import PassContext


def copy_kernel(M, N, bm=32, bn=32):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            frag = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], frag)
            for i, j in T.Parallel(bm, bn):
                frag[i, j] = frag[i, j] * 2.0
            T.copy(frag, B[by * bm, bx * bn])
    return main


def _guarded_stores(func) -> int:
    count = []

    def visit(node):
        if isinstance(node, tir.IfThenElse) and isinstance(node.then_case, tir.BufferStore):
            count.append(node)

    tilelang_core.transform.walk(func.body, visit, (tir.IfThenElse,))
    return len(count)


def _ctx(facts=None):
    return PassContext(target=None, facts=dict(facts or {}))


def _loop(var, extent, body):
    return tir.For(var, tir.const(0, "int32"), tir.const(extent, "int32"), tir.ForKind.SERIAL, body)


def _guarded(buf, idx, value):
    return tir.IfThenElse(idx < buf.shape[0], tir.BufferStore(buf, value, [idx]), None)


def test_guard_proven_by_loop_and_known_ranges_is_dropped():
    buf = tir.decl_buffer((256,), "float32", name="C")
    i, b = tir.Var("i", "int32"), tir.Var("b_r", "int32")
    func = tir.PrimFunc([b], _loop(i, 32, _guarded(buf, b * 32 + i, tir.const(1.0, "float32"))))
    assert _guarded_stores(simplify_guards(func, _ctx())) == 1  # b_r unknown
    out = simplify_guards(func, _ctx({VAR_RANGES: {b: 8}}))
    assert _guarded_stores(out) == 0  # 8 blocks of 32 fit in 256


def test_value_of_a_variable_bound_once_is_used():
    buf = tir.decl_buffer((256,), "float32", name="C")
    i, b, n = tir.Var("i", "int32"), tir.Var("b", "int32"), tir.Var("n", "int32")
    body = tir.SeqStmt([tir.Bind(b, n % 8), _loop(i, 32, _guarded(buf, b * 32 + i, tir.const(1.0, "float32")))])
    assert _guarded_stores(simplify_guards(tir.PrimFunc([n], body), _ctx())) == 0


def test_guard_not_provable_stays():
    buf = tir.decl_buffer((250,), "float32", name="C")
    i, b = tir.Var("i", "int32"), tir.Var("b_r", "int32")
    func = tir.PrimFunc([b], _loop(i, 32, _guarded(buf, b * 32 + i, tir.const(1.0, "float32"))))
    assert _guarded_stores(simplify_guards(func, _ctx({VAR_RANGES: {b: 8}}))) == 1  # 8 * 32 > 250


def test_loop_variable_reused_with_two_ranges_is_not_trusted():
    buf = tir.decl_buffer((16,), "float32", name="C")
    i = tir.Var("i", "int32")
    one = tir.const(1.0, "float32")
    body = tir.SeqStmt([_loop(i, 16, _guarded(buf, i, one)), _loop(i, 64, _guarded(buf, i, one))])
    out = simplify_guards(tir.PrimFunc([], body), _ctx())
    assert _guarded_stores(out) == 2  # i < 16 holds in the first loop only: both stay


def test_partly_provable_guard_keeps_the_rest():
    buf = tir.decl_buffer((64, 50), "float32", name="C")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    store = tir.BufferStore(buf, tir.const(1.0, "float32"), [i, j])
    guard = tir.IfThenElse(tir.And(i < 64, j < 50), store, None)
    out = simplify_guards(tir.PrimFunc([], _loop(i, 64, _loop(j, 64, guard))), _ctx())
    conds = []
    tilelang_core.transform.walk(out.body, lambda n: conds.append(n.condition), (tir.IfThenElse,))
    assert len(conds) == 1 and "j" in str(conds[0]) and "i" not in str(conds[0])


def _source(func, target: str) -> str:
    from tilelang_core.jit.api import lower
    from tilelang_core.jit.options import CompileOptions
    from tilelang_core.plugin import get_plugin_manager, hooks_for

    t = get_plugin_manager().parse_target(target)
    return hooks_for(t).codegen(lower(func, t, CompileOptions()), CompileOptions()).source


@pytest.mark.parametrize("target", ["cuda/sm_90a", "hip/gfx942"])
def test_whole_tile_epilogue_has_no_guard_ragged_one_keeps_it(target):
    whole, ragged = _source(copy_kernel(128, 128), target), _source(copy_kernel(100, 128), target)
    assert "< 128" not in whole
    assert "< 100" in ragged


@pytest.mark.parametrize("shape", [(128, 96), (100, 70)])
def test_results_unchanged_on_cpu(shape):
    k = tilelang_core.compile(copy_kernel(*shape), target="cpu")
    a = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    b = np.full(shape, np.nan, np.float32)
    k(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_select_whose_condition_never_holds_takes_its_other_value():
    buf = tir.decl_buffer((64,), "float32", name="S")
    i = tir.Var("i", "int32")
    masked = tir.if_then_else(i >= 64, tir.const(-1e30, "float32"), tir.const(0.0, "float32"))
    out = simplify_guards(tir.PrimFunc([], _loop(i, 64, tir.BufferStore(buf, masked, [i]))), _ctx())
    assert "if_then_else" not in str(out.script())
    kept = simplify_guards(tir.PrimFunc([], _loop(i, 65, tir.BufferStore(buf, masked, [i % 64]))), _ctx())
    assert "if_then_else" in str(kept.script())  # i = 64 takes the mask
