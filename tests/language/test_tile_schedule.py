"""T.PersistentTileScheduler on the CPU target: each worker's tiles, in order, against a
Python decode of the linear order (column- and row-major, swizzle panels, clusters)."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T


def _expected(mt, nt, workers, swizzle, column_major, cluster):
    mc = -(-mt // cluster)
    primary, secondary = (mc, nt) if column_major else (nt, mc)
    tiles = {w: [] for w in range(workers)}
    for w in range(workers):
        for t in range(w, mc * nt, workers):
            group = t // (primary * swizzle)
            base = group * swizzle
            width = max(1, min(swizzle, secondary - base))
            inner = t - group * primary * swizzle
            fast, slow = inner // width, base + inner % width
            tiles[w].append((fast, slow) if column_major else (slow, fast))
    return tiles


@pytest.mark.parametrize("mt, nt, workers, swizzle, column_major, cluster", [
    (5, 7, 3, 2, True, 1), (4, 6, 4, 1, False, 1), (6, 5, 2, 3, True, 2), (3, 9, 5, 4, False, 1)])
def test_persistent_scheduler_walks_the_tiles(mt, nt, workers, swizzle, column_major, cluster):
    @T.prim_func
    def main(Mi: T.Tensor((workers, 32), "int32"), Ni: T.Tensor((workers, 32), "int32"),
             Iters: T.Tensor((workers,), "int32")):
        with T.Kernel(workers, threads=1) as w:
            sched = T.PersistentTileScheduler(mt, nt, num_workers=workers, swizzle_size=swizzle,
                                              column_major=column_major, cluster_size=cluster)
            sched.init(w)
            while sched.valid():
                Mi[w, sched.current_iter] = sched.m_idx
                Ni[w, sched.current_iter] = sched.n_idx
                sched.next_tile()
            Iters[w] = sched.current_iter

    m = np.full((workers, 32), -1, np.int32)
    n = np.full((workers, 32), -1, np.int32)
    iters = np.zeros(workers, np.int32)
    tilelang.compile(main, target="cpu")(m, n, iters)
    expected = _expected(mt, nt, workers, swizzle, column_major, cluster)
    for w in range(workers):
        got = list(zip(m[w, :iters[w]].tolist(), n[w, :iters[w]].tolist()))
        assert got == expected[w]
    covered = sorted(t for w in expected for t in expected[w])
    assert covered == sorted({t for w in expected for t in expected[w]})  # no tile twice


def test_stateless_scheduler_only_decodes():
    with pytest.raises(ValueError, match="swizzle_size must be an int >= 1"):
        T.PersistentTileScheduler(4, 4, num_workers=2, swizzle_size=0, stateful=False)
    sched = T.PersistentTileScheduler(4, 6, num_workers=2, stateful=False)
    assert sched.coord(5) == (1, 1)
    with pytest.raises(RuntimeError, match="keeps no state"):
        sched.m_idx
