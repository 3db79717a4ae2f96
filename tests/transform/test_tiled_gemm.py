"""`tilelang_core.transform.tiled_gemm` on a toy instruction (4x4 tiles of 8 lanes, the
`ToyPlan` of tests/layout): which gemms it plans, the layouts it asks for, and the shape of
the lowering. The lowering's arithmetic is checked end to end by the HIP and Metal emulators
(tests/hip, tests/metal), which run it."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from tvm import ir
from tvm import tirx as tir

from tilelang_core import language as T
from tilelang_core.ir import collect_tile_ops
from tilelang_core.layout import FragmentDecision
from tilelang_core.transform import (feeds_from_another_layout, infer_tiled_gemm_layout, lower_tiled_gemm,
                                     plan_tiled_gemm, walk)
from tests.layout.test_tiled_gemm_layouts import ToyPlan


def gemm_op(m=32, n=16, k=8, a_scope="fragment", trans_a=False, policy=0):
    """The T.gemm tile op of a one-gemm kernel (A a whole fragment or in shared memory)."""
    a_shape = (k, m) if trans_a else (m, k)

    @T.prim_func
    def main(C: T.Tensor((m, n), "float32")):
        with T.Kernel(1, threads=32):
            A_s = T.alloc_shared(a_shape, "float16")
            A_f = T.alloc_fragment(a_shape, "float16")
            B_s = T.alloc_shared((k, n), "float16")
            C_f = T.alloc_fragment((m, n), "float32")
            T.gemm(A_f if a_scope == "fragment" else A_s, B_s, C_f, transpose_A=trans_a, policy=policy)
            T.copy(C_f, C[0, 0])

    return collect_tile_ops(main)[0]


def plan(op, threads=32, a_registers=None, **geometry):
    shape = {"lanes": 8, "tile": 4, "k_tile": 4, **geometry}
    return plan_tiled_gemm(op, threads, a_registers=a_registers, make=ToyPlan, **shape)


def test_a_whole_fragment_a_is_read_from_registers():
    assert plan(gemm_op()) == ToyPlan(32, 16, 8, 2, 2, True)  # Square split of 8 x 4 tiles over 4 groups
    assert plan(gemm_op(), a_registers=False) == ToyPlan(32, 16, 8, 2, 2, False)  # from its shared copy
    assert plan(gemm_op(policy=1)) == ToyPlan(32, 16, 8, 4, 1, True)  # FullRow


def test_a_in_shared_memory_or_transposed_is_not_the_register_form():
    assert plan(gemm_op(a_scope="shared")) == ToyPlan(32, 16, 8, 2, 2, False)
    assert plan(gemm_op(a_scope="shared"), a_registers=True) is None
    assert plan(gemm_op(trans_a=True)).a_registers is False


@pytest.mark.parametrize("threads, geometry", [(36, {}), (32, {"k_tile": 16}), (32, {"tile": 64}), (512, {})],
                         ids=["threads-not-whole-groups", "k-not-whole-steps", "m-not-whole-tiles", "no-even-split"])
def test_shapes_that_do_not_fit_are_portable(threads, geometry):
    assert plan(gemm_op(), threads, **geometry) is None


def test_an_a_cast_from_an_accumulator_of_another_split_goes_to_shared_memory():
    op = gemm_op(32, 8, 16)
    second = plan(op)
    accumulator = ToyPlan(32, 16, 8, 2, 2).accumulator_layout()  # the same shape as A, another split
    same_split = ToyPlan(32, 16, 8, 4, 1).accumulator_layout()
    a = op.regions[0]

    def ctx(layout, pinned=True):
        decisions = [FragmentDecision(None, layout, pinned=pinned)]
        return SimpleNamespace(layouts=SimpleNamespace(decisions=lambda: decisions))

    assert feeds_from_another_layout(a, second.a_operand_layout(), ctx(accumulator).layouts, "toy.C")
    assert not feeds_from_another_layout(a, second.a_operand_layout(), ctx(accumulator, pinned=False).layouts, "toy.C")
    assert not feeds_from_another_layout(a, second.a_operand_layout(), ctx(accumulator).layouts, "other.C")
    assert second.a_operand_layout() == same_split  # FullRow feeds the register form in place ...
    inferred = infer_tiled_gemm_layout(op, ctx(same_split), second)
    assert inferred == {op.regions[2].buffer: second.accumulator_layout(), a.buffer: second.a_operand_layout()}
    inferred = infer_tiled_gemm_layout(op, ctx(accumulator), second)  # ... a Square split does not
    assert list(inferred) == [op.regions[2].buffer]
    assert infer_tiled_gemm_layout(op, ctx(accumulator), None) is None


def _lower(op, in_registers, c_layout=None):
    """`lower_tiled_gemm` with a stand-in context that grants the layouts the plan asks for."""
    planned = plan(op, a_registers=in_registers)
    layouts = {op.regions[2].buffer: c_layout or planned.accumulator_layout(),
               op.regions[0].buffer: planned.a_operand_layout()}
    registers = {}
    ctx = SimpleNamespace(
        target=None, threads=32,
        layouts=SimpleNamespace(in_registers=lambda buffer: in_registers),
        layout_of=lambda buffer: layouts.get(buffer),
        register_buffer=lambda buffer: registers.setdefault(
            buffer, tir.decl_buffer((64,), buffer.dtype, name=f"{buffer.name}_reg", scope="local")),
        per_thread=lambda body, span=None: body(tir.Var("tx", "int32")),
    )
    calls = []

    def mma(plan_, dst, a, b):
        calls.append((plan_, dst, a, b))
        return tir.call_extern("void", "toy_mma", dst, a, b)

    def plan_gemm(op_, target, threads, a_registers):
        return plan(op_, threads, a_registers)

    return lower_tiled_gemm(op, ctx, plan_gemm, mma), calls


def _nodes(stmt, kind):
    found = []
    walk(stmt, found.append, (kind,))
    return found


def test_lowering_reads_a_from_registers_in_the_register_form():
    op = gemm_op()
    stmt, calls = _lower(op, in_registers=True)
    assert len(calls) == 1 and isinstance(calls[0][0], ToyPlan) and calls[0][0].a_registers
    a_address = calls[0][2]
    assert a_address.args[0].source.name == "A_f_reg"  # the fragment's registers, no A_frag copy
    allocated = {node.buffer.name for node in _nodes(stmt, tir.AllocBuffer)}
    assert allocated == {"B_frag"}
    assert all(loop.kind == tir.ForKind.UNROLLED for loop in _nodes(stmt, tir.For))


def test_lowering_loads_a_from_shared_memory_and_keeps_long_k_loops_rolled():
    op = gemm_op(k=64, a_scope="shared")
    stmt, calls = _lower(op, in_registers=False)
    assert calls[0][2].args[0].source.name == "A_frag"
    assert {node.buffer.name for node in _nodes(stmt, tir.AllocBuffer)} == {"A_frag", "B_frag"}
    k_loop = [loop for loop in _nodes(stmt, tir.For) if loop.loop_var.name == "kk"]
    assert len(k_loop) == 1 and k_loop[0].kind == tir.ForKind.SERIAL and int(k_loop[0].extent) == 16
    loaded = {node.source.name for node in _nodes(stmt, ir.TensorLoad)}
    assert {"A_s", "B_s"} <= loaded


def test_lowering_is_portable_when_c_got_another_layout():
    op = gemm_op()
    other = ToyPlan(32, 16, 8, 4, 1).accumulator_layout()
    assert _lower(op, in_registers=True, c_layout=other)[0] is None
