"""CPU backend benchmark: ours beside NumPy in the same run, reported as ratios.

    .venv/bin/python bench/cpu.py [--quick]

Measures fp32 GEMM at 1024^3 and a row softmax at 4096x4096 against NumPy, the cold and warm
compile time of the seed GEMM, and the per-call host overhead of a tiny kernel.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import tilelang_core as tilelang  # noqa: E402
from kernels import elementwise_add, matmul, softmax  # noqa: E402


def median_time(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def bench_gemm(size: int, reps: int, tiles=(64, 64, 64)) -> dict:
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    kernel = tilelang.compile(matmul(size, size, size, *tiles, "float32", "float32"), out_idx=[2], target="cpu")
    out = kernel(a, b)
    err = np.linalg.norm(out - a.astype(np.float64) @ b) / np.linalg.norm(a.astype(np.float64) @ b)
    ours = median_time(lambda: kernel(a, b), reps)
    ref = median_time(lambda: a @ b, reps)
    flops = 2 * size ** 3
    return {"name": f"GEMM fp32 {size}^3 (tiles {tiles})", "ours_ms": ours * 1e3, "numpy_ms": ref * 1e3,
            "ours_gflops": flops / ours / 1e9, "numpy_gflops": flops / ref / 1e9, "ratio": ref / ours, "err": err}


def bench_softmax(m: int, n: int, reps: int) -> dict:
    rng = np.random.default_rng(2)
    x = rng.uniform(-4, 4, (m, n)).astype(np.float32)
    kernel = tilelang.compile(softmax(m, n, 4), out_idx=[1], target="cpu")

    def ref_fn():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    out = kernel(x)
    ref64 = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    ref64 /= ref64.sum(axis=1, keepdims=True)
    err = np.linalg.norm(out - ref64) / np.linalg.norm(ref64)
    ours = median_time(lambda: kernel(x), reps)
    ref = median_time(ref_fn, reps)
    return {"name": f"softmax fp32 {m}x{n}", "ours_ms": ours * 1e3, "numpy_ms": ref * 1e3, "ratio": ref / ours, "err": err}


_COMPILE_SNIPPET = """
import sys, time
sys.path.insert(0, {examples!r})
start = time.perf_counter()
import tilelang_core as tilelang
from kernels import matmul
k = tilelang.compile(matmul(1024, 1024, 1024, 64, 64, 64, "float32", "float32"), out_idx=[2], target="cpu")
t1 = time.perf_counter()
k2 = tilelang.compile(matmul(1024, 1024, 1024, 64, 64, 64, "float32", "float32"), out_idx=[2], target="cpu")
t2 = time.perf_counter()
print(t1 - start, t2 - t1, k.cache_hit)
"""


def bench_compile() -> dict:
    examples = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TILELANG_CACHE_DIR=cache)
        code = _COMPILE_SNIPPET.format(examples=examples)
        cold = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        disk = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    cold_s, memo_s, _ = cold.stdout.split()
    disk_s, _, hit = disk.stdout.split()
    return {"cold_ms": float(cold_s) * 1e3, "disk_hit_process_ms": float(disk_s) * 1e3,
            "warm_in_process_ms": float(memo_s) * 1e3, "disk_hit": hit == "True"}


def bench_overhead(reps: int) -> dict:
    a = np.ones(16, np.float32) * 2
    b = np.ones(16, np.float32)
    c = np.empty(16, np.float32)
    kernel = tilelang.compile(elementwise_add(16, block=16, threads=16), target="cpu")
    ours = median_time(lambda: kernel(a, b, c), reps)
    ref = median_time(lambda: np.add(a, b, out=c), reps)
    return {"ours_us": ours * 1e6, "numpy_add_us": ref * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    reps = 3 if args.quick else 10
    rows = [bench_gemm(1024, reps), bench_softmax(4096, 4096, reps)]
    comp = bench_compile()
    over = bench_overhead(200)
    print(f"{'benchmark':<36} {'ours ms':>9} {'numpy ms':>9} {'numpy/ours':>10} {'rel.err':>9}")
    for r in rows:
        print(f"{r['name']:<36} {r['ours_ms']:9.2f} {r['numpy_ms']:9.2f} {r['ratio']:9.2f}x {r['err']:9.1e}")
        if "ours_gflops" in r:
            print(f"{'':<36} {r['ours_gflops']:6.1f} GFLOP/s vs {r['numpy_gflops']:6.1f} GFLOP/s")
    print(f"seed GEMM compile: cold {comp['cold_ms']:.0f} ms (fresh process incl. imports); "
          f"disk-cache hit in a fresh process {comp['disk_hit_process_ms']:.0f} ms (incl. imports); "
          f"warm in-process {comp['warm_in_process_ms']:.2f} ms")
    print(f"tiny kernel per-call host overhead: {over['ours_us']:.1f} us (numpy add(out=): {over['numpy_add_us']:.1f} us)")


if __name__ == "__main__":
    main()
