"""What each atomic form parses to (tilelang_core.language.atomics): tile ops for statements,
builtins for expressions, memory orders as C11 numbers, errors at the user's line."""
import pytest
import tvm
from tvm import ir, tirx

from tilelang_core import language as T
from tilelang_core.codegen.builtins import MEMORY_ORDERS
from tilelang_core.ir import ACCESS_READ, ACCESS_READ_WRITE
from tilelang_core.language.parser import KernelSyntaxError

from .helpers import ints, stmts_of, tile_ops


@T.prim_func
def every_form(A: T.Tensor((8, 4), "float32"), B: T.Tensor((8, 4), "float32"), I: T.Tensor((4,), "int32"),
               H: T.Tensor((4,), "float16"), P: T.Tensor((8,), "float32")):
    with T.Kernel(1) as bx:
        T.atomic_add(B[0, 0], A[1, 2], memory_order="release")
        T.atomic_max(B, A)
        T.atomic_min(B[2:6, :], A[0:4, :], memory_order="seq_cst")
        T.atomic_add(B, 3)
        T.atomic_or(I[1], 6)
        T.atomic_addx2(H, H[2:4])
        T.atomic_addx4(B[1, 0], A[3, 0])
        P[0] = T.atomic_add(B[0, 1], A[0, 0], return_prev=True)
        P[1] = T.atomic_min(B[0, 2], 1.5, memory_order="acq_rel", return_prev=True)
        P[2] = T.atomic_load(A[0, 3], memory_order="acquire")
        T.atomic_store(B[7, 3], P[2] + T.float32(1), memory_order="relaxed")


def test_memory_orders_are_numbered_as_in_c11():
    assert MEMORY_ORDERS == ("relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")


def test_point_and_scalar_is_one_element():
    elem, or_elem = tile_ops(every_form, "atomic_elem")
    assert elem.str_arg(0) == "add" and elem.args[1].source.name == "B" and ints(elem.args[1].indices) == [0, 0]
    assert elem.int_arg(3) == MEMORY_ORDERS.index("release")
    assert or_elem.str_arg(0) == "or" and ints(or_elem.args[1].indices) == [1]
    assert str(or_elem.args[2].ty) == "int32" and int(or_elem.args[2]) == 6 and or_elem.int_arg(3) == 0


def test_block_forms_carry_order_and_use_tma():
    amax, amin, add_scalar, x2, x4 = tile_ops(every_form, "atomic")
    assert [op.str_arg(0) for op in (amax, amin, add_scalar, x2, x4)] == ["max", "min", "add", "add", "add"]
    dst, src = amax.regions
    assert (dst.access, src.access) == (ACCESS_READ_WRITE, ACCESS_READ) and ints(dst.extents) == [8, 4]
    assert (amax.int_arg(3), amax.int_arg(4)) == (0, 0)
    assert ints(amin.regions[0].mins) == [2, 0] and ints(amin.regions[0].extents) == [4, 4]
    assert amin.int_arg(3) == MEMORY_ORDERS.index("seq_cst")
    # a block and a scalar: one region, the value cast to the destination's dtype
    assert len(add_scalar.regions) == 1 and str(add_scalar.args[2].ty) == "float32"
    # x2 / x4: that many consecutive elements from each operand's first one
    assert [ints(r.mins) for r in x2.regions] == [[0], [2]] and [ints(r.extents) for r in x2.regions] == [[2], [2]]
    assert [ints(r.mins) for r in x4.regions] == [[1, 0], [3, 0]]
    assert [ints(r.extents) for r in x4.regions] == [[1, 4], [1, 4]]


def test_expression_forms_are_builtins():
    stores = [s for s in stmts_of(every_form, tirx.BufferStore) if s.buffer.name == "P"]
    add, amin, load = (s.value for s in stores)
    assert add.op.name == "tl.atomic_add" and len(add.args) == 2 and str(add.ty) == "float32"
    assert amin.op.name == "tl.atomic_min" and int(amin.args[2]) == MEMORY_ORDERS.index("acq_rel")
    assert load.op.name == "tl.atomic_load" and int(load.args[1]) == MEMORY_ORDERS.index("acquire")
    (store,) = [s.value for s in stmts_of(every_form, tirx.Evaluate) if s.value.op.name == "tl.atomic_store"]
    assert store.args[0].source.name == "B" and int(store.args[2]) == 0


def test_vector_return_prev_is_a_vector_expression():
    @T.prim_func
    def main(D: T.Tensor((2,), "float16"), V: T.Tensor((2,), "float16"), Prev: T.Tensor((2,), "float16")):
        with T.Kernel(1) as bx:
            Prev[0:2] = T.atomic_addx2(D[0:2], V[0:2], return_prev=True)

    (store,) = stmts_of(main, tirx.BufferStore)
    assert store.value.op.name == "tl.atomic_add" and str(store.value.ty) == "float16x2"


def test_atomic_kernels_print_and_parse_back_equal():
    text = every_form.script()
    tvm.ir.assert_structural_equal(every_form, tvm.script.from_source(text))


@pytest.mark.parametrize("call, message", [
    ("T.atomic_add(B[0], A[0], memory_order='strong')", "memory_order='strong' is not one of"),
    ("T.atomic_store(B[0], A[0], memory_order='acquire')", "memory_order='acquire' is not one of"),
    ("T.atomic_or(A[0], 1)", "needs an integer destination"),
    ("T.atomic_or(I, 1)", "takes a point destination and a scalar value"),
    ("T.atomic_addx4(B[0:2], A[0:2])", "has 2 elements along its last axis"),
])
def test_misuse_is_reported_at_the_line(tmp_path, call, message):
    source = (
        "from tilelang_core import language as T\n\n"
        "@T.prim_func\n"
        "def main(A: T.Tensor((4,), 'float32'), B: T.Tensor((4,), 'float32'), I: T.Tensor((4,), 'int32')):\n"
        "    with T.Kernel(1) as bx:\n"
        f"        {call}\n"
    )
    path = tmp_path / "kernel.py"
    path.write_text(source)
    with pytest.raises(KernelSyntaxError, match=message) as err:
        exec(compile(source, str(path), "exec"), {})
    assert "kernel.py:6" in str(err.value)


def test_load_of_a_block_is_an_error():
    with pytest.raises(ValueError, match="reads or writes one element"):
        buf = tirx.decl_buffer((4,), "float32", name="A")
        T.atomic_load(tvm.tirx.BufferRegion(buf, [ir.Range(0, 4)]))
