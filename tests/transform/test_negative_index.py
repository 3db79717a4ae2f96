"""legalize_negative_index: provably negative indices count from the end of their dimension
(TileLang's LegalizeNegativeIndex), in the core's pipeline and as a TVM pass."""
from __future__ import annotations

import numpy as np
from tvm import ir

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.transform.negative_index import LegalizeNegativeIndex, legalize_negative_index


@T.prim_func
def _mixed(A: T.Tensor((1024, 512), "float32"), B: T.Tensor((4, 4), "float32"), n: T.int32):
    with T.Kernel(1, threads=1) as _:
        for t in T.serial(4):
            B[t, T.Ramp(0, 1, 4)] = A[-1, T.Ramp(t - 4, 1, 4)] + A[0, T.Ramp(t - 2, 1, 4)]
        for i in T.serial(1, 8):
            A[-i, -2] = A[n, 3]


def test_negative_scalars_ramps_and_unknown_lanes():
    text = legalize_negative_index(_mixed).script()
    assert "A[1024 - i, 510] = A[n, 3]" in text  # the symbolic index n is left to check/guards
    # t in 0..3: lane t - 4 is negative (moved); t - 3 .. t - 1 may be (chosen at run time)
    assert ("T.Shuffle([t + 508, T.Select(t < 3, t + 509, t - 3), T.Select(t < 2, t + 510, t - 2), "
            "T.Select(t < 1, t + 511, t - 1)]") in text
    # no lane of t - 2 .. t + 1 is known to be negative: the vector load stays as written
    assert "A[0, T.Ramp(t - 2, 1, 4)]" in text
    assert "A[1023," in text
    moved = LegalizeNegativeIndex()(ir.IRModule({"main": _mixed}))["main"]
    assert moved.script() == text


def test_nothing_to_move_keeps_the_function():
    @T.prim_func
    def plain(A: T.Tensor((8,), "float32")):
        for i in T.serial(8):
            A[i] = A[7 - i]

    assert legalize_negative_index(plain).same_as(plain)


def test_a_kernel_reads_and_writes_from_the_end():
    @T.prim_func
    def reverse(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(1, 8):
                B[-i] = A[-1] + i

    a, b = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    tilelang.compile(reverse, target="cpu")(a, b)
    np.testing.assert_array_equal(b, [0, 14, 13, 12, 11, 10, 9, 8])
