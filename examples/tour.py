"""`make demo`: a short tour of tilelang-core on the CPU backend (the embedded default).

Each kernel is a TileLang program with only its imports changed; each result is checked
against NumPy in float64 on random inputs, then timed beside NumPy.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tilelang_core as tilelang  # noqa: E402
from kernels import elementwise_add, matmul, softmax  # noqa: E402

TARGET = os.environ.get("TILELANG_TARGET", "cpu")


def timed(fn, reps=10):
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def report(name, ours, ref, rel_err, tol):
    ok = rel_err <= tol
    print(f"  {name:<28} {'ok ' if ok else 'BAD'} rel.err {rel_err:.1e}   "
          f"ours {ours * 1e3:8.3f} ms   numpy {ref * 1e3:8.3f} ms   ratio (numpy/ours) {ref / ours:5.2f}x")
    return ok


def rel(a, b):
    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b))


def main() -> int:
    rng = np.random.default_rng()
    print(f"tilelang-core {tilelang.__version__}: tour on target {TARGET}")
    ok = True

    M = N = K = 512
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    start = time.perf_counter()
    gemm = tilelang.compile(matmul(M, N, K, 64, 64, 32, "float32", "float32"), out_idx=[2], target=TARGET)
    print(f"  seed GEMM compiled in {(time.perf_counter() - start) * 1e3:.0f} ms "
          f"({'cache hit' if gemm.cache_hit else 'cold'})")
    ref = a.astype(np.float64) @ b
    ok &= report("GEMM 512^3 fp32", timed(lambda: gemm(a, b)), timed(lambda: a @ b), rel(gemm(a, b), ref), 1e-5)

    relu = tilelang.compile(matmul(M, N, K, 64, 64, 32, "float32", "float32", relu=True), out_idx=[2], target=TARGET)
    ok &= report("GEMM + ReLU 512^3 fp32", timed(lambda: relu(a, b)), timed(lambda: np.maximum(a @ b, 0)),
                 rel(relu(a, b), np.maximum(ref, 0)), 1e-5)

    x = rng.uniform(-4, 4, (1000, 1024)).astype(np.float32)
    sm = tilelang.compile(softmax(1000, 1024, 8), out_idx=[1], target=TARGET)

    def np_softmax(v):
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    ok &= report("softmax 1000x1024", timed(lambda: sm(x)), timed(lambda: np_softmax(x)),
                 rel(sm(x), np_softmax(x.astype(np.float64))), 1e-5)

    n = 1_000_003
    u = rng.uniform(-1, 1, n).astype(np.float32)
    v = rng.uniform(-1, 1, n).astype(np.float32)
    add = tilelang.compile(elementwise_add(n), out_idx=[2], target=TARGET)
    ok &= report("elementwise add 1e6+3", timed(lambda: add(u, v)), timed(lambda: u + v),
                 rel(add(u, v), u.astype(np.float64) + v), 1e-6)

    print("tour:", "all results match NumPy" if ok else "SOME RESULTS ARE WRONG")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
