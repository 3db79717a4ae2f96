"""Source lines of tile ops and loops, and the IR helpers the lowering passes use."""
import pytest
import tvm
from tvm import tirx

from tilelang_core.ir import (
    Region,
    TileOp,
    collect_tile_ops,
    format_source,
    is_tile_op,
    make_call,
    source_of,
    tile_op_call,
)

from . import programs
from .helpers import stmts_of, tile_ops


def test_tile_ops_know_the_users_file_and_line():
    func = programs.matmul(256, 256, 256, 64, 64, 32)
    (gemm,) = tile_ops(func, "gemm")
    assert gemm.source == (programs.__file__, programs.line_of("marker: gemm"))
    assert gemm.location == f"{programs.__file__}:{programs.line_of('marker: gemm')}"
    copy_a = tile_ops(func, "copy")[0]
    assert source_of(copy_a.stmt) == (programs.__file__, programs.line_of("marker: copy A"))


def test_loops_know_their_line():
    func = programs.matmul(256, 256, 256, 64, 64, 32)
    parallel = [s for s in stmts_of(func, tirx.For) if s.kind == tirx.ForKind.PARALLEL]
    line = programs.line_of("marker: parallel")
    assert [source_of(loop) for loop in parallel] == [(programs.__file__, line)] * 2
    assert format_source(parallel[0]) == f"{programs.__file__}:{line}"


def test_op_inside_parallel_loops_knows_its_line():
    (elem,) = tile_ops(programs.atomic_accumulate(64, 64, 32), "atomic_elem")
    assert elem.source == (programs.__file__, programs.line_of("marker: atomic_elem"))


def test_reparsed_text_reports_lines_of_the_text():
    func = programs.matmul(256, 256, 256, 64, 64, 32)
    text = func.script()
    reparsed = tvm.script.from_source(text)
    (gemm,) = tile_ops(reparsed, "gemm")
    file, line = gemm.source
    assert file == "<str>" and "T.tl.gemm" in text.splitlines()[line - 1]


def test_nodes_without_span():
    stmt = tirx.Evaluate(make_call("use_swizzle", 4, "row"))
    assert source_of(stmt) is None and format_source(stmt) == "<unknown location>"
    assert is_tile_op(stmt, "use_swizzle") and is_tile_op(stmt, "tl.use_swizzle")
    assert not is_tile_op(stmt, "copy")
    assert not is_tile_op(tirx.Evaluate(tvm.tirx.const(0, "int32")))
    assert tile_op_call(tirx.Evaluate(tvm.tirx.const(0, "int32"))) is None


def test_tile_op_view():
    func = programs.softmax(64, 32, 8)
    ops = collect_tile_ops(func)
    assert [op.name for op in ops] == ["copy", "reduce", "reduce", "copy"]
    reduce = ops[1]
    assert isinstance(reduce, TileOp) and reduce.call.op.name == "tl.reduce"
    assert [r.buffer.name for r in reduce.regions] == ["x", "row_max"]
    assert reduce.regions[0].is_read and not reduce.regions[0].is_write
    assert reduce.regions[1].is_write and reduce.regions[1].scope == "local.fragment"
    assert reduce.regions[0].static_extents() == (8, 32) and reduce.regions[0].dtype == "float32"
    with pytest.raises(ValueError, match="not a tile-op statement"):
        TileOp.from_stmt(tirx.Evaluate(tvm.tirx.const(0, "int32")))


def test_region_round_trip_through_its_call():
    func = programs.matmul(256, 256, 256, 64, 64, 32)
    region = tile_ops(func, "copy")[0].regions[0]
    again = Region.from_call(region.to_call())
    assert again.buffer.same_as(region.buffer) and again.access == region.access
    tvm.ir.assert_structural_equal(list(again.extents), list(region.extents))
    tvm.ir.assert_structural_equal(list(again.mins), list(region.mins))
    full = Region.full(region.buffer, 1)
    assert full.static_extents() == (256, 256) and [int(m) for m in full.mins] == [0, 0]
    with pytest.raises(ValueError, match="needs 2 mins and extents"):
        Region(region.buffer, (0,), (1,), 1)
    with pytest.raises(ValueError, match="access mask"):
        Region(region.buffer, region.mins, region.extents, 4)


def test_ops_from_a_macro_report_the_macro_line():
    from tilelang_core import language as T

    @T.macro
    def zero(buf):
        T.clear(buf)  # marker: macro body

    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1) as bx:
            zero(A)

    (fill,) = tile_ops(main, "fill")
    assert isinstance(fill.stmt.span, tvm.ir.SequentialSpan)  # call site, then macro body
    import inspect

    lines, start = inspect.getsourcelines(test_ops_from_a_macro_report_the_macro_line)
    body_line = start + next(n for n, text in enumerate(lines) if "marker: macro body" in text)
    assert fill.source == (__file__, body_line)


def test_dtype_of_expressions():
    from tilelang_core.ir import dtype_of

    (fill,) = tile_ops(programs.matmul(256, 256, 256, 64, 64, 32), "fill")
    assert dtype_of(fill.args[1]) == "float32"
    assert dtype_of(tvm.tirx.const(1, "int8")) == "int8" and dtype_of(2) == "int32"
    with pytest.raises(TypeError, match="not a scalar expression"):
        dtype_of(fill.regions[0].buffer)
