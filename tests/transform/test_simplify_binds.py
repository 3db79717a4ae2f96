"""tilelang_core.transform.Simplify: trivial `Bind`s inlined before TVM's simplifier (TileLang's
`enable_simplify_let_inline`), so facts they carry prove conditions."""
from __future__ import annotations

import tvm
from tvm import tirx

from tilelang_core.transform import Simplify
from tilelang_core.transform.tvm_passes import inline_trivial_binds


def _module():
    A = tirx.decl_buffer((16,), "float32", name="A")
    n = tirx.Var("n", "int32")
    i = tirx.Var("i", "int32")
    store = tirx.BufferStore(A, tirx.const(0.0, "float32"), [i])
    loop = tirx.For(i, 0, n, tirx.ForKind.SERIAL, tirx.IfThenElse(i < 12, store, None))
    return tvm.IRModule.from_expr(tirx.PrimFunc([A], tirx.SeqStmt([tirx.Bind(n, tirx.const(10)), loop])))


def test_bind_of_a_constant_is_inlined_and_proves_the_condition():
    body = Simplify()(_module())["main"].body
    assert isinstance(body, tirx.For) and int(body.extent.value) == 10
    assert isinstance(body.body, tirx.BufferStore)


def test_a_bind_of_a_computed_value_is_kept():
    A = tirx.decl_buffer((16,), "int32", name="A")
    x, i = tirx.Var("x", "int32"), tirx.Var("i", "int32")
    body = tirx.SeqStmt([tirx.Bind(x, i + 1), tirx.BufferStore(A, x, [i])])
    kept = inline_trivial_binds(body)
    assert isinstance(kept, tirx.SeqStmt) and isinstance(kept.seq[0], tirx.Bind)
