"""T.async_copy: a copy with the hints async_copy and disable_tma; on a target without an
asynchronous copy engine (the CPU) it is the synchronous copy."""
import json

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.ir import TileOp

from .helpers import stmts_of


def kernel():
    @T.prim_func
    def main(A: T.Tensor((64, 48), "float32"), B: T.Tensor((64, 48), "float32")):
        with T.Kernel(4, threads=32) as bx:
            tile = T.alloc_shared((16, 48), "float32")
            T.async_copy(A[bx * 16, 0], tile)
            for i, j in T.Parallel(16, 48):
                B[bx * 16 + i, j] = tile[i, j] * 2.0

    return main


def test_async_copy_is_a_copy_with_its_hints():
    from tvm import tirx

    ops = [TileOp.from_stmt(s) for s in stmts_of(kernel(), tirx.Evaluate)]
    (op,) = [o for o in ops if o.name == "copy"]
    assert op.hints == {"async_copy": True, "disable_tma": True}
    assert [r.buffer.name for r in op.regions] == ["A", "tile"] and json.loads(str(op.args[2].value))


def test_async_copy_runs_on_cpu_like_numpy():
    a = np.random.default_rng(1).standard_normal((64, 48)).astype(np.float32)
    b = np.zeros_like(a)
    tilelang.compile(kernel(), target="cpu")(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_async_copy_refuses_a_layout_hint_it_cannot_honour():
    with pytest.raises(Exception, match="loop_layout"):
        @T.prim_func
        def main(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=16):
                s = T.alloc_shared((16,), "float32")
                T.async_copy(A, s, loop_layout=object())
