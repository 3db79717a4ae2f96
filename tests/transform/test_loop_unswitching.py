"""LoopUnswitching: loop-invariant conditions hoisted out of loops (TileLang's pass)."""
from __future__ import annotations

import tvm
from tvm import tirx

from tilelang_core.transform import LoopUnswitching


def _loop(extra=None, cond_from_loop=False):
    A = tirx.decl_buffer((128,), "float32", name="A")
    B = tirx.decl_buffer((128,), "float32", name="B")
    flag = tirx.decl_buffer((1,), "int32", name="flag")
    i = tirx.Var("i", "int32")
    cond = (tirx.BufferLoad(flag, [0]) > 0) if not cond_from_loop else (i > 3)
    body = tirx.IfThenElse(cond, tirx.BufferStore(B, tirx.BufferLoad(A, [i]), [i]), None)
    if extra is not None:
        body = tirx.SeqStmt([extra(A, B, i), body])
    loop = tirx.For(i, 0, 128, tirx.ForKind.SERIAL, body)
    return tvm.IRModule({"main": tirx.PrimFunc([A, B, flag], loop)})


def test_invariant_condition_leaves_the_loop():
    body = LoopUnswitching()(_loop())["main"].body
    assert isinstance(body, tirx.IfThenElse)
    assert isinstance(body.then_case, tirx.For) and isinstance(body.then_case.body, tirx.BufferStore)
    assert isinstance(body.else_case.body, tirx.Evaluate)


def test_variant_condition_and_other_work_stay():
    assert isinstance(LoopUnswitching()(_loop(cond_from_loop=True))["main"].body, tirx.For)
    other = _loop(extra=lambda A, B, i: tirx.BufferStore(A, tirx.const(0.0, "float32"), [i]))
    assert isinstance(LoopUnswitching()(other)["main"].body, tirx.For)
