"""Shared tiles in a user's placement on CUDA: TileLang's `make_mma_swizzle_layout` /
`get_swizzle_layout` (`tilelang.cuda.intrinsics`), `T.annotate_layout` of a `T.Layout` on a
shared tile (`tilelang_cuda.lower_layout`), and TVM's warp shuffles.

Kernels run in the NumPy emulator of lowered CUDA TIR (`tir_emulator.py`), every output
element checked against NumPy in float64 (outputs poisoned first); the layouts are checked
against TileLang's permutation table and for ldmatrix bank conflicts.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import get_plugin_manager
from tilelang_cuda.compat.intrinsics import get_swizzle_layout, make_mma_swizzle_layout
from tilelang_cuda.lower_layout import apply_index_map

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tir_emulator import run_kernel  # noqa: E402


def _target(arch: str = "sm_90a"):
    return get_plugin_manager().parse_target(f"cuda/{arch}")


def _lower(func, arch: str = "sm_90a"):
    return lower(func, _target(arch), CompileOptions())


# ---------------------------------------------------------------------------- the layouts


def _placement(rows: int, cols: int, dtype: str) -> np.ndarray:
    """Flat physical offset of every element of a (rows, cols) tile under the swizzle: the
    physical buffer is (column tiles, rows, tile width)."""
    elem = 2 if dtype == "float16" else 4
    width = min(128, cols * elem) // elem
    out = np.zeros((rows, cols), np.int64)
    for r in range(rows):
        for c in range(cols):
            tile, row, col = get_swizzle_layout(r, c, cols, dtype)
            assert 0 <= col < width
            out[r, c] = (tile * rows + row) * width + col
    return out


def test_128_byte_swizzle_is_tilelangs_table():
    """TileLang's table (mma_layout.py): in a 128-byte row, 16-byte chunk c of row r goes to c ^ (r % 8)."""
    for r in range(16):
        for c in range(64):
            tile, row, col = get_swizzle_layout(r, c, 64, "float16")
            assert (tile, row) == (0, r)
            assert (col // 8, col % 8) == ((c // 8) ^ (r % 8), c % 8)


@pytest.mark.parametrize("cols,dtype", [(16, "float16"), (32, "float16"), (64, "float16"), (128, "float16"),
                                        (8, "float32"), (16, "float32"), (32, "float32"), (64, "float32")])
def test_swizzle_is_a_bijection_without_ldmatrix_bank_conflicts(cols, dtype):
    rows = 32
    flat = _placement(rows, cols, dtype)
    assert sorted(flat.reshape(-1)) == list(range(rows * cols))
    elem = 2 if dtype == "float16" else 4
    chunk = 16 // elem
    for c in range(0, cols, chunk):
        assert (flat[:, c:c + chunk] - flat[:, c:c + 1] == np.arange(chunk)).all()  # runs stay whole
        for r0 in range(0, rows, 8):
            # the 8 row addresses of one ldmatrix phase fall in 8 different groups of 4 banks
            assert len({(flat[r, c] * elem // 16) % 8 for r in range(r0, r0 + 8)}) == 8


def test_rows_shorter_than_32_bytes_are_refused():
    with pytest.raises(ValueError, match="multiple of 32 bytes"):
        get_swizzle_layout(0, 0, 8, "float16")


@T.prim_func
def _layouts(A: T.Tensor((4, 64), "float16")):
    with T.Kernel(1, threads=32):
        narrow = T.alloc_shared((8, 16), "float16")  # 32-byte rows: not swizzled
        wide = T.alloc_shared((2, 8, 64), "float16")  # a leading dim passes through
        T.annotate_layout({narrow: make_mma_swizzle_layout(narrow), wide: make_mma_swizzle_layout(wide)})
        A[0, 0] = narrow[0, 0] + wide[0, 0, 0]


def test_make_mma_swizzle_layout_maps():
    from tvm import tirx

    maps = {}
    for attr in _attrs(_layouts.body):
        if isinstance(attr, tirx.AttrStmt) and attr.attr_key == "tl.layout":
            maps[attr.value.name] = attr.node
    assert apply_index_map(maps["narrow"], [3, 9], numeric=True) == [3, 9]
    assert [int(x) for x in apply_index_map(maps["wide"], [1, 5, 20], numeric=True)] == \
        [1, *get_swizzle_layout(5, 20, 64, "float16")]
    smooth = make_mma_swizzle_layout(_Buf((8, 64), "float16"), is_smooth=True)
    assert [int(x) for x in apply_index_map(smooth.index_map, [3, 9], numeric=True)] == [3, 9]


class _Buf:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


def _attrs(body) -> list:
    from tvm import tirx

    from tilelang_core.transform.irutil import walk

    found = []
    walk(body, found.append, (tirx.AttrStmt,))
    return found


# ---------------------------------------------------------------------------- Hadamard


@T.macro
def lane_butterflies(v, got, lane, bits, per_thread, width):
    """Butterflies over the low `bits` lane bits: each lane takes its partner's values."""
    for s in T.serial(bits):
        for k in T.serial(per_thread):
            got[k] = T.tvm_warp_shuffle(0xFFFFFFFF, v[k], lane ^ (1 << s), width, 32)
            v[k] = T.if_then_else(((lane >> s) & 1) == 0, v[k] + got[k], got[k] - v[k])


def hadamard_kernel(batch: int, n: int, threads: int, dtype: str):
    """y = x @ H_n (Sylvester's Hadamard matrix, natural order) for each row of x: one block per
    row, `n / threads` elements per thread. Butterflies over the element bits inside a thread
    run in registers, over the lane bits with `tvm_warp_shuffle` (in a `T.macro`, whose code
    carries a SequentialSpan into code generation), over the warp bits after a
    transpose of the block's threads through a swizzled shared tile (lane bits <-> warp bits),
    with `tvm_warp_shuffle_down` / `_up`, then the transpose back."""
    per_thread = n // threads
    warp = min(threads, 32)
    warps = threads // warp
    assert warps <= warp and per_thread >= 1
    inner, lane_bits, warp_bits = (int(math.log2(x)) for x in (per_thread, warp, warps))

    @T.prim_func
    def main(X: T.Tensor((batch, n), dtype), Y: T.Tensor((batch, n), dtype)):
        with T.Kernel(batch, threads=threads) as row:
            v = T.alloc_local((per_thread,), dtype)
            got = T.alloc_local((per_thread,), dtype)
            exchange = T.alloc_shared((threads, per_thread), dtype)
            T.annotate_layout({exchange: make_mma_swizzle_layout(exchange)})
            t = T.get_thread_binding(0)
            lane = t % warp
            for i in T.vectorized(per_thread):
                v[i] = X[row, t * per_thread + i]
            for s in T.serial(inner):  # element bits: pairs inside the thread
                half = 1 << s
                for k in T.serial(per_thread):
                    if (k & half) == 0:
                        a = v[k]
                        v[k] = a + v[k + half]
                        v[k + half] = a - v[k + half]
            lane_butterflies(v, got, lane, lane_bits, per_thread, warp)
            if warp_bits > 0:
                # thread t takes the values of thread (t % warps) * warp + t // warps: the warp
                # bits of the element index become this thread's low lane bits
                source = (t % warps) * warp + t // warps
                for i in T.vectorized(per_thread):
                    exchange[t, i] = v[i]
                for i in T.vectorized(per_thread):
                    v[i] = exchange[source, i]
                for s in T.serial(warp_bits):
                    for k in T.serial(per_thread):
                        below = T.tvm_warp_shuffle_down(0xFFFFFFFF, v[k], 1 << s, warp, 32)
                        above = T.tvm_warp_shuffle_up(0xFFFFFFFF, v[k], 1 << s, warp, 32)
                        v[k] = T.if_then_else(((lane >> s) & 1) == 0, v[k] + below, above - v[k])
                for i in T.vectorized(per_thread):
                    exchange[source, i] = v[i]
                for i in T.vectorized(per_thread):
                    v[i] = exchange[t, i]
            for i in T.vectorized(per_thread):
                Y[row, t * per_thread + i] = v[i]

    return main


def _hadamard(n: int) -> np.ndarray:
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h


@pytest.mark.parametrize("batch,n,threads,dtype", [
    (1, 2048, 64, "float32"),  # 2 warps, rows of 32 x 4 bytes: the 128-byte swizzle
    (1, 2048, 64, "float16"),  # rows of 32 x 2 bytes: the 64-byte swizzle, half-precision storage
    (1, 2048, 128, "float32"),  # 4 warps, rows of 16 x 4 bytes: the 64-byte swizzle
    (3, 256, 16, "float32"),  # one partial warp: shuffles of width 16, no exchange
])
def test_hadamard_with_shuffles_and_a_swizzled_exchange_is_exact(batch, n, threads, dtype):
    lowered = _lower(hadamard_kernel(batch, n, threads, dtype))
    script = lowered.script()
    if threads > 32:
        assert "^" in script  # the exchange tile is stored swizzled (3-D: column tile, row, column)
        (shape,) = [a.buffer.ty.shape for a in _allocs(lowered) if a.buffer.name == "exchange"]
        per_thread = n // threads
        width = min(128 // (2 if dtype == "float16" else 4), per_thread)
        assert [int(d) for d in shape] == [per_thread // width, threads, width]
    rng = np.random.default_rng(7)
    # small integers: every partial sum is exact in float16 and float32, so equality is the test
    x = rng.integers(-1, 2, (batch, n)).astype(np.float16 if dtype == "float16" else np.float32)
    y = np.full((batch, n), np.nan, x.dtype)
    run_kernel(lowered, x, y)
    ref = x.astype(np.float64) @ _hadamard(n)
    assert np.array_equal(y.astype(np.float64), ref), np.argwhere(y.astype(np.float64) != ref)[:5]


def _allocs(func) -> list:
    from tvm import tirx

    from tilelang_core.transform.irutil import walk

    found = []
    walk(func.body, found.append, (tirx.AllocBuffer,))
    return found


def test_hadamard_compiles_for_sm_90a_with_warp_shuffles():
    import tilelang_core

    kernel = tilelang_core.compile(hadamard_kernel(4, 2048, 64, "float16"), target="cuda/sm_90a")
    source = kernel.get_kernel_source()
    assert "__shfl_sync(0xffffffffu" in source and "__shfl_down_sync" in source and "__shfl_up_sync" in source
    assert "^" in source


# ---------------------------------------------------------------------------- tensor cores


def gemm_kernel(M, N, K, bm, bn, bk, stages, layout_of):
    """C = A @ B (fp16 in, fp32 out) with cp.async copies into shared tiles placed by
    `layout_of(tile)` and T.gemm reading them with ldmatrix."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.annotate_layout({A_s: layout_of(A_s), B_s: layout_of(B_s)})
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bm, bx * bn])

    return main


def _emulate_gemm(func, M, N, K):
    lowered = _lower(func, "sm_80")
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    run_kernel(lowered, a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    return float(np.abs(c - ref).max()), lowered.script()


@pytest.mark.parametrize("stages", [1, 2])
def test_gemm_on_tiles_in_tilelangs_mma_swizzle(stages):
    """cp.async writes and ldmatrix reads of tiles in `make_mma_swizzle_layout`: each stage of
    a pipelined tile keeps the user's placement."""
    err, script = _emulate_gemm(gemm_kernel(64, 64, 64, 64, 64, 32, stages, make_mma_swizzle_layout), 64, 64, 64)
    assert "ldmatrix" in script and "cp_async" in script and "^" in script
    assert err < 1e-3


def _column_major(tile):
    rows, cols = (int(d) for d in tile.shape)
    return T.Layout((rows, cols), lambda i, j: (j, i))


def test_a_layout_that_splits_16_byte_runs_copies_without_cp_async():
    """A column-major placement: no 16 contiguous bytes per row, so the copies take the
    portable path (and are still placed), and a gemm on mma.sync is refused by name."""
    from tilelang_core.transform.errors import TileLangCompileError

    @T.prim_func
    def copy_only(A: T.Tensor((32, 32), "float16"), B: T.Tensor((32, 32), "float16")):
        with T.Kernel(1, threads=64):
            A_s = T.alloc_shared((32, 32), "float16")
            T.annotate_layout({A_s: _column_major(A_s)})
            T.copy(A, A_s)
            T.copy(A_s, B)

    lowered = _lower(copy_only, "sm_80")
    assert "cp_async" not in lowered.script()
    a = np.arange(32 * 32, dtype=np.float16).reshape(32, 32)
    b = np.full((32, 32), np.nan, np.float16)
    run_kernel(lowered, a, b)
    assert np.array_equal(a, b)
    with pytest.raises(TileLangCompileError, match="does not keep 16-byte runs"):
        _lower(gemm_kernel(64, 64, 64, 64, 64, 32, 2, _column_major), "sm_80")


def _column_sums(M, K, bm, bk, layout):
    """Out[m] = sum_k A[m, k], A's (bm, bk) tiles arriving in a 2-stage `T.Pipelined` loop into
    a shared tile placed by `layout(bm, bk)`."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), Out: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=64) as bx:
            A_s = T.alloc_shared((bm, bk), "float32")
            acc = T.alloc_fragment((bm,), "float32")
            T.annotate_layout({A_s: layout(bm, bk)})
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[bx * bm, ko * bk], A_s)
                for i in T.Parallel(bm):
                    for k in T.serial(bk):
                        acc[i] += A_s[i, k]
            T.copy(acc, Out[bx * bm])

    return main


def _transposed(bm, bk):  # K-major rows bm + 4 floats apart: one float of a row per 4 bytes
    return T.Layout((bm, bk), lambda i, k: (k * (bm + 4) + i,))


def _pairs(bm, bk):  # k pairs of a row stay together: 8-byte runs
    return T.Layout((bm, bk), lambda i, k: (k // 2, i, k % 2))


@pytest.mark.parametrize("layout, size", [(_transposed, 4), (_pairs, 8)])
def test_a_float32_layout_that_keeps_4_or_8_byte_runs_copies_with_cp_async_ca(layout, size):
    """A placement that splits 16-byte runs but keeps 4 (a transposed tile) or 8 bytes
    together: the pipelined copy still runs on cp.async, one `cp.async.ca` of that size per
    run (zero-filled past the ragged edges), in two stages; the sums match NumPy."""
    M, K = 45, 70
    lowered = _lower(_column_sums(M, K, 32, 16, layout), "sm_80")
    script = lowered.script()
    assert f"tl::cp_async_ca_zfill<{size}>" in script and "cp_async_cg16" not in script
    assert "tl::cp_async_wait<0>" in script  # the 2-stage pipeline's wait, not a synchronous copy's wait_all
    a = np.random.default_rng(5).standard_normal((M, K)).astype(np.float32)
    out = np.full((M,), np.nan, np.float32)
    run_kernel(lowered, a, out)
    np.testing.assert_allclose(out, a.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_a_layout_that_places_two_elements_together_is_an_error():
    from tilelang_core.transform.errors import TileLangCompileError

    @T.prim_func
    def clash(A: T.Tensor((8, 8), "float32")):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((8, 8), "float32")
            T.annotate_layout({S: T.Layout((8, 8), lambda i, j: (i // 2, j))})
            S[0, 0] = A[0, 0]
            A[1, 1] = S[0, 0]

    with pytest.raises(TileLangCompileError, match=r"places elements \(0, 0\) and \(1, 0\) at the same index"):
        _lower(clash)
