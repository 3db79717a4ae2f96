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
    # t in 0..3: lane t - 4 is negative (moved); t - 3 .. t - 1 may be (chosen at run time);
    # lanes t - 2, t - 1 of the second load may be too (the loop range allows it): the vector
    # store becomes one scalar store per lane, each lane's index chosen at run time
    assert "B[t, 0] = A[1023, t + 508] + A[0, T.Select(t < 2, t + 510, t - 2)]" in text
    assert "B[t, 1] = A[1023, T.Select(t < 3, t + 509, t - 3)] + A[0, T.Select(t < 1, t + 511, t - 1)]" in text
    assert "B[t, 3] = A[1023, T.Select(t < 1, t + 511, t - 1)] + A[0, t + 1]" in text
    assert "T.Ramp" not in text
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


def _mixed_sign_kernels():
    import tilelang_core.language as T

    @T.prim_func
    def load(A: T.Tensor((1024,), "float32"), B: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=1) as _:
            for t in T.serial(4):
                B[t, T.Ramp(0, 1, 4)] = A[T.Ramp(t - 2, 1, 4)]

    @T.prim_func
    def store(B: T.Tensor((4, 4), "float32"), A: T.Tensor((1024,), "float32")):
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(1024):
                A[i] = T.float32(-1)
            for t in T.serial(4):
                A[T.Ramp(t - 2, 1, 4)] = B[t, T.Ramp(0, 1, 4)]

    return load, store


def test_vector_lanes_the_loop_ranges_allow_below_zero_wrap_lane_by_lane():
    """TileLang's issue 2554: `A[T.Ramp(t - 2, 1, 4)]` for t in 0..3 reads A[1022], A[1023], A[0],
    A[1] at t = 0 (each lane counted from the end when negative at run time); it was one
    misaligned vector load of A[-2..1]."""
    import tilelang_core

    load, store = _mixed_sign_kernels()
    a = np.arange(1024, dtype=np.float32)
    b = np.full((4, 4), np.nan, np.float32)
    tilelang_core.compile(load, target="cpu", cache=False)(a, b)
    want = np.array([[(t - 2 + k) % 1024 for k in range(4)] for t in range(4)], np.float32)
    np.testing.assert_array_equal(b, want)
    bb = np.arange(16, dtype=np.float32).reshape(4, 4)
    out = np.full(1024, np.nan, np.float32)
    tilelang_core.compile(store, target="cpu", cache=False)(bb, out)
    expected = np.full(1024, -1, np.float32)
    for t in range(4):
        for k in range(4):
            expected[(t - 2 + k) % 1024] = bb[t, k]
    np.testing.assert_array_equal(out, expected)
    source = tilelang_core.compile(load, target="cuda/sm_90a", cache=False).get_kernel_source()
    assert "uint4" not in source and "t + 1022" in source  # per-lane scalar loads, no vector load
