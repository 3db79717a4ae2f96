"""T.rng_init / T.rng_rand / T.rng_rand_float: curand's Philox4x32-10 stream, run on the CPU
target against Random123's known answer and a Python reference of curand's stepping."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T

_M = 0xFFFFFFFF


def _philox(counter, key):
    c, k = list(counter), list(key)
    for r in range(10):
        if r:
            k = [(k[0] + 0x9E3779B9) & _M, (k[1] + 0xBB67AE85) & _M]
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & _M, (p0 >> 32) ^ c[3] ^ k[1], p0 & _M]
    return c


def _reference(seed, seq, off, count):
    """curand_init(seed, seq, off) then `count` x curand(): the counter is 128 bits, the
    subsequence its upper half, each block of four outputs one counter step."""
    counter = (seq << 64) + off // 4
    words, index = [], off % 4
    while len(words) < count:
        block = _philox([(counter >> (32 * i)) & _M for i in range(4)], [seed & _M, seed >> 32])
        words += block[index:]
        index, counter = 0, counter + 1
    return words[:count]


def _stream(seed, seq, off, n=12):
    @T.prim_func
    def main(A: T.Tensor((n,), "uint32")):
        with T.Kernel(1, threads=1) as bx:
            T.rng_init(seed, seq, off)
            for i in T.serial(n):
                A[i] = T.rng_rand()

    a = np.zeros(n, np.uint32)
    tilelang.compile(main, target="cpu")(a)
    return [int(x) for x in a]


def test_philox_known_answer_of_random123():
    assert _stream(0, 0, 0, 4) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


@pytest.mark.parametrize("seed, seq, off", [(1234, 0, 0), (0xDEADBEEF12345678, 5, 0), (42, 3, 6), (7, 1 << 40, 13)])
def test_stream_follows_curand_stepping(seed, seq, off):
    assert _stream(seed, seq, off) == _reference(seed, seq, off, 12)


def test_uniform_and_normal_floats_per_thread_streams():
    n = 4096

    @T.prim_func
    def main(U: T.Tensor((n,), "float32"), N: T.Tensor((n,), "float32"), D: T.Tensor((n,), "float64")):
        with T.Kernel(n // 128, threads=128) as bx:
            for t in T.serial(128):
                T.rng_init(2024, bx * 128 + t)
                U[bx * 128 + t] = T.rng_rand_float()
                N[bx * 128 + t] = T.rng_rand_float(dist="normal")
                D[bx * 128 + t] = T.rng_rand_float(64)

    u, z, d = np.zeros(n, np.float32), np.zeros(n, np.float32), np.zeros(n, np.float64)
    tilelang.compile(main, target="cpu")(u, z, d)
    assert 0 < u.min() and u.max() <= 1 and abs(u.mean() - 0.5) < 0.02
    assert abs(z.mean()) < 0.06 and abs(z.std() - 1) < 0.05
    assert 0 < d.min() and d.max() <= 1 and abs(d.mean() - 0.5) < 0.02
    # the first uniform of stream s is curand_uniform of its first word
    first = np.array([_reference(2024, s, 0, 1)[0] for s in range(8)], np.float64)
    np.testing.assert_allclose(u[:8], first * 2.3283064e-10 + 2.3283064e-10 / 2, rtol=1e-6)


def test_rng_errors_name_the_fix():
    with pytest.raises(Exception, match="only .curandStatePhilox4_32_10_t."):
        @T.prim_func
        def xorwow(A: T.Tensor((1,), "uint32")):
            with T.Kernel(1, threads=1) as bx:
                T.rng_init(1, generator="curandStateXORWOW_t")

    with pytest.raises(Exception, match="call T.rng_init"):
        @T.prim_func
        def uninitialised(A: T.Tensor((1,), "uint32")):
            with T.Kernel(1, threads=1) as bx:
                A[0] = T.rng_rand()
