"""TileLang's keywords on the reductions and the kernel launch: `batch=`, `nan_propagate=` and
`annotations=` on `T.reduce_*` / `T.finalize_reducer`, a `T.Kernel` with no grid extents, a
1-D grid bound as `as (bx,)`, and errors raised inside a kernel keeping their Python type."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.language.parser import KernelSyntaxError

from .helpers import thread_extents, tile_ops


def _reduce_program(fn, **keywords):
    @T.prim_func
    def main(A: T.Tensor((4, 64), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            a = T.alloc_fragment((4, 64), "float32")
            b = T.alloc_fragment((4,), "float32")
            T.copy(A, a)
            fn(a, b, dim=1, **keywords)
            T.copy(b, B)

    return main


def _reduce_kinds(func) -> list[str]:
    return [op.str_arg(2) for op in tile_ops(func, "reduce")]


@pytest.mark.parametrize("fn,kind", [(T.reduce_max, "max_nan"), (T.reduce_min, "min_nan"),
                                     (T.reduce_absmax, "absmax_nan")])
def test_nan_propagate_selects_the_nan_kind(fn, kind):
    assert _reduce_kinds(_reduce_program(fn, nan_propagate=True)) == [kind]
    assert _reduce_kinds(_reduce_program(fn)) == [kind.removesuffix("_nan")]


def test_nan_propagate_makes_a_nan_the_result_on_the_cpu():
    kernel = tilelang.compile(_reduce_program(T.reduce_max, nan_propagate=True), target="cpu")
    a = np.arange(256, dtype=np.float32).reshape(4, 64)
    a[1, 5] = np.nan
    b = np.zeros(4, np.float32)
    kernel(a, b)
    assert np.isnan(b[1]) and not np.isnan(b[[0, 2, 3]]).any()
    np.testing.assert_array_equal(b[[0, 2, 3]], a[[0, 2, 3]].max(axis=1))


def test_batch_and_annotations_leave_the_reduction_as_it_is():
    func = _reduce_program(T.reduce_sum, batch=2, annotations={"enable_fadd2": False})
    assert _reduce_kinds(func) == ["sum"]


@pytest.mark.parametrize("batch,error,match", [
    (0, ValueError, "batch must be >= 1"), (-1, ValueError, "batch must be >= 1"),
    (8, ValueError, "exceeds total output elements"), (3, ValueError, "must evenly divide"),
    (2.0, TypeError, "batch must be an int")])
def test_bad_batch_is_the_error_python_would_raise(batch, error, match):
    with pytest.raises(error, match=match) as info:
        _reduce_program(T.reduce_max, batch=batch)
    assert isinstance(info.value, KernelSyntaxError)  # still names the kernel's line
    assert "test_reduce_keywords.py" in str(info.value)


def test_unknown_annotation_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown annotation 'fast'.*enable_fadd2"):
        _reduce_program(T.reduce_sum, annotations={"fast": True})


def test_nan_propagate_is_refused_for_sums():
    def sum_with_nan(a, b, dim, **keywords):
        return T.reduce(a, b, "sum", dim, nan_propagate=True)

    with pytest.raises(ValueError, match="nan_propagate applies to max, min, absmax only"):
        _reduce_program(sum_with_nan)


def test_finalize_reducer_checks_batch():
    def program(batch):
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=128):
                acc = T.alloc_reducer((64,), "float32", op="sum", replication="all")
                a = T.alloc_fragment((64, 64), "float32")
                T.copy(A, a)
                T.clear(acc)
                for i, j in T.Parallel(64, 64):
                    acc[i] += a[i, j]
                T.finalize_reducer(acc, batch=batch)
                T.copy(acc, B)

        return main

    program(4)
    with pytest.raises(ValueError, match="batch must be >= 1"):
        program(0)
    with pytest.raises(ValueError, match="exceeds total output elements"):
        program(128)


def test_kernel_without_grid_extents_is_one_block():
    @T.prim_func
    def main(A: T.Tensor((32,), "float32")):
        with T.Kernel(threads=32):
            for i in T.Parallel(32):
                A[i] = A[i] + 1.0

    assert [(tag, int(extent)) for tag, _, extent in thread_extents(main)] == [("blockIdx.x", 1), ("threadIdx.x", 32)]
    kernel = tilelang.compile(main, target="cpu")
    a = np.arange(32, dtype=np.float32)
    kernel(a)
    np.testing.assert_array_equal(a, np.arange(32, dtype=np.float32) + 1)


def test_one_dim_grid_unpacks_as_a_tuple():
    @T.prim_func
    def main(A: T.Tensor((4, 32), "float32")):
        with T.Kernel(4, threads=32) as (bx,):
            for i in T.Parallel(32):
                A[bx, i] = T.cast(bx, "float32")

    kernel = tilelang.compile(main, target="cpu")
    a = np.zeros((4, 32), np.float32)
    kernel(a)
    np.testing.assert_array_equal(a, np.repeat(np.arange(4, dtype=np.float32)[:, None], 32, axis=1))
    with pytest.raises(ValueError, match="not enough values to unpack"):
        @T.prim_func
        def two(A: T.Tensor((4, 32), "float32")):
            with T.Kernel(4, threads=32) as (bx, by):
                A[bx, 0] = 0.0


def _v2_program(body: str):
    """A kernel around a v2 reducer `acc` ((1,) float32 sum) whose epoch `body` names, in this
    order: `early` T.reducer_update before the init, `init` T.reducer_init, `again` a second
    init, `update` T.reducer_update in T.Parallel, `store` a plain `acc[0] +=`, `bare`
    T.reducer_update outside T.Parallel, `fin` T.finalize_reducer, `loopfin` the finalize
    inside a T.serial loop."""
    steps = set(body.split())
    early, init, again, update = "early" in steps, "init" in steps, "again" in steps, "update" in steps
    store, bare, fin, loopfin = "store" in steps, "bare" in steps, "fin" in steps, "loopfin" in steps

    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            src = T.alloc_fragment((8,), "float32")
            T.copy(A, src)
            acc = T.alloc_reducer((1,), "float32", op="sum")
            result = T.alloc_fragment((1,), "float32")
            if early:
                for i in T.Parallel(8):
                    T.reducer_update(acc[0], src[i])
            if init:
                T.reducer_init(acc)
            if again:
                T.reducer_init(acc)
            if update:
                for i in T.Parallel(8):
                    T.reducer_update(acc[0], src[i])
            if store:
                for i in T.Parallel(8):
                    acc[0] += src[i]
            if bare:
                T.reducer_update(acc[0], src[0])
            if fin:
                T.finalize_reducer(acc, result)
            if loopfin:
                for _ in T.serial(2):
                    T.finalize_reducer(acc, result)
            T.copy(result, B)

    return main


def test_v2_reducer_epoch_rules():
    _v2_program("init update fin")  # the lifecycle TileLang's v2 spelling asks for
    for body, match in [("early init fin", "before T.reducer_init"), ("init again update fin", "double T.reducer_init"),
                        ("init update", "never finalized"), ("init store fin", "illegal store to reducer acc"),
                        ("init bare fin", "outside any T.Parallel"),
                        ("init update loopfin", "not in the scope of its T.reducer_init")]:
        with pytest.raises(ValueError, match=match):
            _v2_program(body)
    _v2_program("init update fin")  # a failed parse leaves no epoch open for the next kernel


def test_v2_init_value_must_have_the_reducer_dtype():
    @T.prim_func
    def ok(B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((1,), "float32", op="sum")
            result = T.alloc_fragment((1,), "float32")
            T.reducer_init(acc, 1.0)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    with pytest.raises(ValueError, match="does not match reducer acc"):
        @T.prim_func
        def bad(B: T.Tensor((1,), "float32")):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((1,), "float32", op="sum")
                result = T.alloc_fragment((1,), "float32")
                T.reducer_init(acc, T.float16(1.0))
                T.finalize_reducer(acc, result)
                T.copy(result, B)
