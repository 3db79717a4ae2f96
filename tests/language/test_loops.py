"""Loops: T.Pipelined annotations, T.Parallel nests, the tirx loop kinds."""
from tvm import tirx

from tilelang_core import language as T

from . import programs
from .helpers import ints, stmts_of


def test_pipelined_is_a_serial_loop_annotated_with_num_stages():
    func = programs.matmul(1024, 1024, 1024, 128, 128, 32)
    pipelined = stmts_of(func, tirx.For)[0]
    assert pipelined.kind == tirx.ForKind.SERIAL and pipelined.loop_var.name == "ko"
    assert int(pipelined.min) == 0 and int(pipelined.extent) == 1024 // 32
    assert dict(pipelined.annotations).keys() == {"num_stages"}
    assert int(pipelined.annotations["num_stages"]) == 3


def test_pipelined_order_and_stage():
    func = programs.matmul_transposed(256, 256, 256, 64, 64, 32)
    loop = stmts_of(func, tirx.For)[0]
    assert int(loop.annotations["num_stages"]) == 2
    assert ints(loop.annotations["tl_pipeline_order"]) == [0, 1, 2]
    assert ints(loop.annotations["tl_pipeline_stage"]) == [0, 0, 1]


def test_pipelined_with_start_and_stop():
    func = programs.loop_kinds(64)
    (loop,) = [s for s in stmts_of(func, tirx.For) if "num_stages" in s.annotations]
    assert int(loop.min) == 1 and "n - 1" in str(loop.extent)


def test_parallel_nests_one_parallel_loop_per_extent():
    func = programs.matmul(256, 256, 256, 64, 32, 16)
    outer, inner = [s for s in stmts_of(func, tirx.For) if s.kind == tirx.ForKind.PARALLEL]
    assert inner.same_as(outer.body)
    assert (outer.loop_var.name, inner.loop_var.name) == ("i", "j")
    assert (int(outer.extent), int(inner.extent)) == (64, 32)
    store = inner.body
    assert isinstance(store, tirx.BufferStore) and store.buffer.name == "C_local"


def test_parallel_with_three_extents_and_one_extent():
    @T.prim_func
    def main(A: T.Tensor((4, 8, 16), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            for i, j, k in T.Parallel(4, 8, 16, coalesced_width=4):
                A[i, j, k] = T.float32(0)
            for i in T.Parallel(16):
                B[i] = T.float32(1)

    loops = stmts_of(main, tirx.For)
    assert [loop.kind for loop in loops] == [tirx.ForKind.PARALLEL] * 4
    assert [int(loop.extent) for loop in loops] == [4, 8, 16, 16]
    assert int(loops[2].annotations["coalesced_width"]) == 4
    assert "coalesced_width" not in loops[0].annotations


def test_tirx_loop_kinds():
    func = programs.loop_kinds(64)
    kinds = [(s.kind, int(s.extent) if isinstance(s.extent, tirx.IntImm) else None)
             for s in stmts_of(func, tirx.For)]
    assert kinds[0] == (tirx.ForKind.UNROLLED, 8)
    assert kinds[1] == (tirx.ForKind.VECTORIZED, 8)
    assert kinds[2:4] == [(tirx.ForKind.SERIAL, 4), (tirx.ForKind.SERIAL, 4)]  # T.grid
    stepped = stmts_of(func, tirx.For)[-1]
    assert int(stepped.step) == 2 and int(stepped.extent) == 64


def test_python_range_is_still_a_serial_loop():
    @T.prim_func
    def main(A: T.Tensor((8,), "float32")):
        with T.Kernel(1) as bx:
            for i in range(8):
                A[i] = T.float32(0)

    (loop,) = stmts_of(main, tirx.For)
    assert loop.kind == tirx.ForKind.SERIAL and int(loop.extent) == 8
