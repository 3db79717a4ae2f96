"""The tl.* calls each tile op parses to: op names, argument orders, regions."""
import pytest
import tvm
from tvm import ir, tirx

from tilelang_core import language as T
from tilelang_core.ir import ACCESS_READ, ACCESS_READ_WRITE, ACCESS_WRITE, Region

from . import programs
from .helpers import ints, stmts_of, tile_ops


def _names(region: Region):
    return region.buffer.name


def test_tile_ops_are_evaluates_of_handle_calls_to_registered_ops():
    func = programs.matmul(256, 256, 256, 64, 64, 32)
    evaluates = [s for s in stmts_of(func, tirx.Evaluate)]
    names = [s.value.op.name for s in evaluates]
    assert names == ["tl.use_swizzle", "tl.fill", "tl.copy", "tl.copy", "tl.gemm", "tl.copy"]
    for stmt in evaluates:
        call = stmt.value
        assert isinstance(call, ir.Call) and call.op.same_as(ir.Op.get(call.op.name))
        assert str(call.ty) == "T.handle" or "handle" in str(call.ty)
        assert int(call.op.get_attr("TCallEffectKind")) == 3  # opaque: never removed


def test_copy_from_a_point_takes_the_destination_shape():
    func = programs.matmul(256, 256, 256, 64, 32, 16)
    copy_a, copy_b, store = tile_ops(func, "copy")
    src, dst = copy_a.regions
    assert (_names(src), _names(dst)) == ("A", "A_shared")
    assert ints(src.extents) == [64, 16] and ints(dst.extents) == [64, 16]
    assert [str(m) for m in src.mins] == ["by * 64", "ko * 16"]
    assert ints(dst.mins) == [0, 0]
    assert (src.access, dst.access) == (ACCESS_READ, ACCESS_WRITE)
    # the region argument is tl.region(BufferLoad(buf, mins), access, *extents)
    region_call = copy_a.args[0]
    assert region_call.op.name == "tl.region"
    assert isinstance(region_call.args[0], ir.TensorLoad)
    assert region_call.args[0].source.same_as(src.buffer)
    assert int(region_call.args[1]) == ACCESS_READ and ints(region_call.args[2:]) == [64, 16]
    # a point destination takes the source's shape
    src, dst = store.regions
    assert _names(dst) == "C" and ints(dst.extents) == [64, 32]


def test_point_with_more_dims_gets_leading_unit_extents():
    @T.prim_func
    def main(A: T.Tensor((4, 64, 64), "float16")):
        with T.Kernel(4, threads=128) as bx:
            S = T.alloc_shared((32, 64), "float16")
            T.copy(A[bx, 32, 0], S)

    (op,) = tile_ops(main, "copy")
    src, dst = op.regions
    assert ints(src.extents) == [1, 32, 64] and [str(m) for m in src.mins] == ["bx", "32", "0"]


def test_copy_of_slices_keeps_their_extents():
    func = programs.symbolic_copy(block=32)
    _, store = tile_ops(func, "copy")
    src, dst = store.regions
    assert ints(dst.extents) == [32, 64] and str(dst.mins[0]) == "bx * 32"


def test_gemm_arguments_and_mnk():
    func = programs.matmul(256, 256, 256, 128, 64, 32)
    (gemm,) = tile_ops(func, "gemm")
    a, b, c = gemm.regions
    assert [_names(r) for r in gemm.regions] == ["A_shared", "B_shared", "C_local"]
    assert (a.access, b.access, c.access) == (ACCESS_READ, ACCESS_READ, ACCESS_READ_WRITE)
    assert ints(gemm.args[3:7]) == [0, 0, 0, 0]  # transpose_A, transpose_B, policy, clear_accum
    assert ints(gemm.args[7:10]) == [128, 64, 32]  # M, N, K
    assert all(str(arg.ty) == "int32" for arg in gemm.args[3:7])


def test_gemm_transposed_operands_and_policy():
    func = programs.matmul_transposed(256, 256, 256, 64, 32, 16)
    (gemm,) = tile_ops(func, "gemm")
    # A_shared is (K, M) = (16, 64), B_shared is (N, K) = (32, 16)
    assert ints(gemm.args[3:7]) == [1, 1, int(T.GemmWarpPolicy.FullRow), 1]
    assert ints(gemm.args[7:10]) == [64, 32, 16]
    assert [int(p) for p in T.GemmWarpPolicy] == [0, 1, 2]


def test_clear_and_fill_values_take_the_buffer_dtype():
    func = programs.matmul(256, 256, 256, 64, 64, 32)
    (fill,) = tile_ops(func, "fill")
    (dst,) = fill.regions
    assert dst.buffer.name == "C_local" and dst.access == ACCESS_WRITE
    value = fill.args[1]
    assert isinstance(value, tirx.FloatImm) and float(value.value) == 0.0 and str(value.ty) == "float32"

    @T.prim_func
    def main(A: T.Tensor((64,), "float16")):
        with T.Kernel(1) as bx:
            T.fill(A[0:32], 3)

    (fill,) = tile_ops(main, "fill")
    assert ints(fill.regions[0].extents) == [32] and str(fill.args[1].ty) == "float16"


def test_reduce_arguments_normalize_dim():
    func = programs.softmax(256, 128, 16)
    rmax, rsum = tile_ops(func, "reduce")
    assert [_names(r) for r in rmax.regions] == ["x", "row_max"]
    assert [rmax.str_arg(2), rmax.int_arg(3), rmax.int_arg(4)] == ["max", 1, 1]
    # dim=-1 is normalized to 1; clear=False makes the destination read-write
    assert [rsum.str_arg(2), rsum.int_arg(3), rsum.int_arg(4)] == ["sum", 1, 0]
    assert rsum.regions[1].access == ACCESS_READ_WRITE and isinstance(rsum.args[2], ir.StringImm)


def test_all_reduce_kinds():
    @T.prim_func
    def main(A: T.Tensor((16, 8), "float32")):
        with T.Kernel(1) as bx:
            x = T.alloc_fragment((16, 8), "float32")
            r = T.alloc_fragment((8,), "float32")
            T.reduce_min(x, r, dim=0)
            T.reduce_abssum(x, r, 0)
            T.reduce_absmax(x, r, dim=0)

    assert [(op.str_arg(2), op.int_arg(3)) for op in tile_ops(main, "reduce")] == [
        ("min", 0), ("abssum", 0), ("absmax", 0)]


def test_cumsum_in_place_and_into_another_buffer():
    in_place, into_b = tile_ops(programs.debug_ops(16), "cumsum")
    assert [_names(r) for r in in_place.regions] == ["tile", "tile"]
    assert in_place.regions[1].access == ACCESS_READ_WRITE
    assert ints(in_place.args[2:]) == [1, 0]
    assert [_names(r) for r in into_b.regions] == ["tile", "B"]
    assert ints(into_b.args[2:]) == [0, 1]  # dim=-2 normalized, reverse


def test_atomics_elementwise_and_tile():
    func = programs.atomic_accumulate(256, 256, 32)
    (elem,) = tile_ops(func, "atomic_elem")
    assert elem.str_arg(0) == "add" and not elem.regions
    target = elem.args[1]
    assert isinstance(target, ir.TensorLoad) and target.source.name == "C"
    assert [str(i) for i in target.indices] == ["i", "j"]
    assert isinstance(elem.args[2], ir.TensorLoad) and elem.args[2].source.name == "tile"
    # the elementwise atomic sits inside the two parallel loops
    loops = stmts_of(func, tirx.For)
    assert [loop.kind for loop in loops] == [tirx.ForKind.PARALLEL] * 2
    assert loops[1].body.value.op.name == "tl.atomic_elem"

    amax, amin = tile_ops(func, "atomic")
    assert amax.str_arg(0) == "max" and amin.str_arg(0) == "min"
    dst, src = amax.regions
    assert (_names(dst), _names(src)) == ("C", "tile")
    assert (dst.access, src.access) == (ACCESS_READ_WRITE, ACCESS_READ)
    assert ints(dst.extents) == [32, 32]  # the point C[0, 0] takes the tile's shape
    assert ints(amin.regions[0].extents) == [32, 32]


def test_use_swizzle_print_and_device_assert():
    (swizzle,) = tile_ops(programs.matmul(256, 256, 256, 64, 64, 32), "use_swizzle")
    assert swizzle.int_arg(0) == 10 and swizzle.str_arg(1) == "row"

    func = programs.debug_ops(16)
    (check,) = tile_ops(func, "device_assert")
    assert "tx < 128" in str(check.args[0]) and check.str_arg(1) == "too many threads"
    region_print, value_print = tile_ops(func, "print")
    assert region_print.regions[0].buffer.name == "tile" and region_print.str_arg(1) == "tile"
    assert isinstance(value_print.args[0], tirx.Var) and value_print.str_arg(1) == ""


def test_use_swizzle_col_order_and_disabled():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(8, 8) as (bx, by):
            T.use_swizzle(4, order="col")
            T.use_swizzle(4, enable=False)
            A[bx] = T.float32(0)

    (swizzle,) = tile_ops(main, "use_swizzle")
    assert swizzle.int_arg(0) == 4 and swizzle.str_arg(1) == "col"


def test_layout_annotations_are_attrs_around_the_rest_of_the_kernel():
    func = programs.layouts()
    attrs = [s for s in stmts_of(func, tirx.AttrStmt) if s.attr_key == "tl.layout"]
    assert [a.value.name for a in attrs] == ["S", "R"]
    assert isinstance(attrs[0].node, str) and attrs[0].node == "swizzled"
    index_map = attrs[1].node
    assert isinstance(index_map, tirx.IndexMap) and len(index_map.initial_indices) == 2
    row, col = index_map.map_indices([tvm.tirx.const(9, "int64"), tvm.tirx.const(3, "int64")])
    simplify = tvm.sym.Analyzer().simplify
    assert (int(simplify(row)), int(simplify(col))) == (9, 3 ^ (9 % 8))
    # the copies are inside both annotations
    assert len(tile_ops(attrs[1].body, "copy")) == 3


def _reduce_rows(T_, kind, src, dst):
    """A plain Python helper, as TileLang programs write them: the reduction emits itself."""
    getattr(T_, f"reduce_{kind}")(src, dst, dim=1)


def test_reductions_called_from_a_python_helper_are_emitted():
    @T.prim_func
    def main(A: T.Tensor((4, 8), "int32")):
        with T.Kernel(1) as bx:
            x = T.alloc_local((4, 8), "int32")
            r = T.alloc_local((4,), "int32")
            _reduce_rows(T, "sum", x, r)
            _reduce_rows(T, "bitand", x, r)
            _reduce_rows(T, "bitor", x, r)
            _reduce_rows(T, "bitxor", x, r)

    assert [op.str_arg(2) for op in tile_ops(main, "reduce")] == ["sum", "bitand", "bitor", "bitxor"]
    # outside a kernel the call is returned, not emitted
    buf = tirx.decl_buffer((4, 8), "int32", name="x")
    out = tirx.decl_buffer((4,), "int32", name="r")
    assert T.reduce_bitor(buf, out, dim=1).op.name == "tl.reduce"


def test_bit_reductions_need_an_integer_destination():
    x = tirx.decl_buffer((4, 8), "float32", name="x")
    r = tirx.decl_buffer((4,), "float32", name="r")
    with pytest.raises(ValueError, match="T.reduce_bitxor needs an integer or bool destination"):
        T.reduce_bitxor(x, r, dim=1)


def test_transpose_regions_and_shapes():
    @T.prim_func
    def main(A: T.Tensor((2, 3, 4), "float32"), B: T.Tensor((2, 4, 3), "float16")):
        with T.Kernel(1) as bx:
            T.transpose(A, B)
            T.transpose(A[0:2, 0:3, 1:3], B[0:2, 2:4, 0:3])

    whole, part = tile_ops(main, "transpose")
    assert [_names(r) for r in whole.regions] == ["A", "B"]
    assert (whole.regions[0].access, whole.regions[1].access) == (ACCESS_READ, ACCESS_WRITE)
    assert ints(part.regions[0].mins) == [0, 0, 1] and ints(part.regions[1].extents) == [2, 2, 3]
    a = tirx.decl_buffer((2, 3, 4), "float32", name="a")
    with pytest.raises(ValueError, match=r"transposed is \(2, 4, 3\), but the destination is"):
        T.transpose(a, tirx.decl_buffer((2, 3, 4), "float32", name="b"))
    with pytest.raises(ValueError, match="same rank, at least 2"):
        T.transpose(a, tirx.decl_buffer((4, 6), "float32", name="c"))


def test_copy_accepts_tilelangs_hints_and_checks_them():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            T.copy(A[0, 0], S, disable_tma=True, coalesced_width=8, eviction_policy="evict_first",
                   prefer_instruction="cp_async", annotations={})

    (op,) = tile_ops(main, "copy")
    assert ints(op.regions[1].extents) == [64, 64]
    from tilelang_core.language.tileops import _check_copy_hints

    with pytest.raises(ValueError, match="eviction_policy must be one of"):
        _check_copy_hints(None, False, "evict_sometimes", None, None, None)
    with pytest.raises(ValueError, match="coalesced_width must be a positive int"):
        _check_copy_hints(0, False, None, None, None, None)
    with pytest.raises(NotImplementedError, match="loop_layout"):
        _check_copy_hints(None, False, None, None, None, object())
