"""CPU backend benchmark: ours beside NumPy in the same run, reported as ratios.

    .venv/bin/python bench/cpu.py [--quick] [--rounds N]

Measures, in one run:
- fp32 GEMM at 1024^3 (the seed program with 64^3 tiles, and 128^3 tiles) and a row softmax
  at 4096x4096, each timed interleaved with NumPy (`a @ b`; `exp(x - max) / sum`) round by
  round in this process, so both see the same machine load; best-of-N and median are shown;
- the compile time of the seed GEMM, split as (a) building the PrimFunc (TVMScript parse: a
  cost of the program, not of compile), (b) compile() on a cold cache, (c) compile() in a
  fresh process that finds the kernel in the disk cache, (d) compile() of the same PrimFunc
  again in-process (memo); plus the imports and the first-use costs (plugin loading, backend
  modules, kernel cache) that (c) excludes, and loading the shared library;
- the per-call host overhead of a tiny kernel (3 arrays of 16 floats) against the bare
  ctypes launch and `numpy.add(out=)`, for NumPy and torch arguments.

The compile figures come from fresh interpreters with their own cache directory and a
private bytecode cache (so imports are timed as in an installed package, even where
PYTHONDONTWRITEBYTECODE is set). NumPy's BLAS is sensitive to OPENBLAS_CORETYPE /
OPENBLAS_L2_SIZE: the header prints them and the BLAS kernel in use; to compare with an
unhindered NumPy run `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python bench/cpu.py`.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
sys.path.insert(0, EXAMPLES)

import tilelang_core as tilelang  # noqa: E402
from kernels import elementwise_add, matmul, softmax  # noqa: E402

GOALS = {"gemm": 0.5, "softmax": 1.0, "warm_compile_ms": 5.0, "overhead_us": 3.0}


# -- timing ------------------------------------------------------------------------------------


def interleaved(fns: dict, rounds: int, inner: int = 1) -> dict:
    """Seconds per call of each function, timed round by round in turn (so a burst of load
    from other processes hits all of them): {name: [per-round times]}."""
    for fn in fns.values():
        fn()
    times: dict = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            times[name].append((time.perf_counter() - start) / inner)
    return times


def summary(ts: list) -> dict:
    return {"best": min(ts), "median": statistics.median(ts), "spread": max(ts) / min(ts)}


# -- environment -------------------------------------------------------------------------------


def blas_info() -> str:
    """Which BLAS kernel NumPy runs, and with how many threads."""
    try:
        from threadpoolctl import threadpool_info

        blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        if blas:
            b = blas[0]
            return f"{b.get('internal_api')} {b.get('version')} kernel {b.get('architecture')}, {b.get('num_threads')} threads (threadpoolctl)"
    except ImportError:
        pass
    import ctypes

    try:
        libs = sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", open("/proc/self/maps").read())))
        lib = ctypes.CDLL(libs[0])
        for prefix, suffix in (("scipy_openblas", "64_"), ("openblas", "")):
            core = getattr(lib, f"{prefix}_get_corename{suffix}", None)
            threads = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            if core is not None:
                core.restype = ctypes.c_char_p
                return (f"OpenBLAS kernel {core().decode()}, {threads() if threads else '?'} threads "
                        f"(read from {os.path.basename(libs[0])}; threadpoolctl not installed)")
    except (OSError, IndexError):
        pass
    return "unknown (threadpoolctl not installed)"


def print_environment() -> None:
    blas_env = {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS",
                                                "OPENBLAS_NUM_THREADS")}
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}" if load else "")
    print("numpy " + np.__version__ + ": " + blas_info())
    print("environment: " + ", ".join(f"{k}={v if v is not None else '(unset)'}" for k, v in blas_env.items()))
    from tilelang_cpu import compile as cc
    from tilelang_cpu.target import host_arch

    compiler = cc.find_compiler()
    print(f"ours: {cc.compiler_version(compiler)}, flags {' '.join(cc.compile_flags(compiler, host_arch())[:3])} "
          f"{'-fopenmp' if cc.openmp_supported(compiler) else '(no OpenMP)'}; arch {host_arch()}")


# -- kernels -----------------------------------------------------------------------------------


def bench_gemm(size: int, rounds: int, tile_sets) -> list:
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    ref64 = a.astype(np.float64) @ b
    c = np.empty((size, size), np.float32)
    fns, errs = {"numpy": lambda: np.matmul(a, b, out=c)}, {}
    for tiles in tile_sets:
        kernel = tilelang.compile(matmul(size, size, size, *tiles, "float32", "float32"), out_idx=[2], target="cpu")
        errs[tiles] = np.linalg.norm(kernel(a, b) - ref64) / np.linalg.norm(ref64)
        fns[tiles] = (lambda k: lambda: k(a, b))(kernel)
    times = interleaved(fns, rounds)
    numpy_err = np.linalg.norm(c - ref64) / np.linalg.norm(ref64)
    ref = summary(times["numpy"])
    flops = 2 * size ** 3
    rows = []
    for tiles in tile_sets:
        ours = summary(times[tiles])
        rows.append({"name": f"GEMM fp32 {size}^3, tiles {'x'.join(map(str, tiles))}", "ours": ours, "numpy": ref,
                     "ratio": ref["best"] / ours["best"], "err": errs[tiles], "numpy_err": numpy_err,
                     "extra": f"{flops / ours['best'] / 1e9:.0f} vs {flops / ref['best'] / 1e9:.0f} GFLOP/s"})
    return rows


def bench_softmax(m: int, n: int, rounds: int, block_m: int) -> dict:
    rng = np.random.default_rng(2)
    x = rng.uniform(-4, 4, (m, n)).astype(np.float32)
    kernel = tilelang.compile(softmax(m, n, block_m), out_idx=[1], target="cpu")

    def numpy_softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    ref64 = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    ref64 /= ref64.sum(axis=1, keepdims=True)
    err = np.linalg.norm(kernel(x) - ref64) / np.linalg.norm(ref64)
    numpy_err = np.linalg.norm(numpy_softmax() - ref64) / np.linalg.norm(ref64)
    times = interleaved({"ours": lambda: kernel(x), "numpy": numpy_softmax}, rounds)
    ours, ref = summary(times["ours"]), summary(times["numpy"])
    return {"name": f"softmax fp32 {m}x{n}, block_M {block_m}", "ours": ours, "numpy": ref,
            "ratio": ref["best"] / ours["best"], "err": err, "numpy_err": numpy_err,
            "extra": f"{m * n * 8 / ours['best'] / 1e9:.1f} GB/s (read+write) vs {m * n * 8 / ref['best'] / 1e9:.1f}"}


# -- compile times -----------------------------------------------------------------------------

_COMPILE_SNIPPET = """
import json, sys, time
t0 = time.perf_counter()
import tilelang_core as tilelang
t1 = time.perf_counter()
sys.path.insert(0, {examples!r})
from kernels import elementwise_add, matmul  # imports TVM and the language
t2 = time.perf_counter()
seed = lambda: matmul(1024, 1024, 1024, 64, 64, 64, "float32", "float32")
func = seed()
t3 = time.perf_counter()
again = []
for _ in range(5):
    s = time.perf_counter(); seed(); again.append(time.perf_counter() - s)
out = {{"import_core": t1 - t0, "import_language": t2 - t1, "build_first": t3 - t2, "build": min(again)}}
if {warm_up!r}:
    # a different kernel first: first-use imports (plugin manager, backends, kernel cache) and
    # per-process probes, timed apart from compiling the seed GEMM
    s = time.perf_counter()
    tilelang.compile(elementwise_add(64, 64), target="cpu")
    out["first_use"] = time.perf_counter() - s
s = time.perf_counter()
kernel = tilelang.compile(func, out_idx=[2], target="cpu")
out["compile"] = time.perf_counter() - s
out["hit"] = kernel.cache_hit
s = time.perf_counter()
kernel.loaded
out["load"] = time.perf_counter() - s
memo = []
for _ in range(20):
    s = time.perf_counter(); tilelang.compile(func, out_idx=[2], target="cpu"); memo.append(time.perf_counter() - s)
out["memo"] = min(memo)
rebuild = []
for _ in range(5):
    s = time.perf_counter(); tilelang.compile(seed(), out_idx=[2], target="cpu"); rebuild.append(time.perf_counter() - s)
out["rebuild_and_memo"] = min(rebuild)
print(json.dumps(out))
"""


def _fresh_process(cache: str, pycache: str, warm_up: bool) -> dict:
    env = dict(os.environ, TILELANG_CACHE_DIR=cache, PYTHONPYCACHEPREFIX=pycache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    code = _COMPILE_SNIPPET.format(examples=EXAMPLES, warm_up=warm_up)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_compile(processes: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cache, pycache = os.path.join(tmp, "cache"), os.path.join(tmp, "pycache")
        _fresh_process(os.path.join(tmp, "scratch"), pycache, True)  # fills the bytecode cache
        # (b): a cold kernel cache (the compiler's probes are cached by then, as after any
        # earlier compile on this machine)
        cold = [_fresh_process(os.path.join(tmp, f"cold{i}"), pycache, True) for i in range(2)]
        _fresh_process(cache, pycache, True)  # puts the seed GEMM on disk
        # (c): fresh processes that find it there
        disk = [_fresh_process(cache, pycache, True) for _ in range(processes)]
        first = [_fresh_process(cache, pycache, False) for _ in range(2)]  # no warm-up kernel
    assert all(not r["hit"] for r in cold) and all(r["hit"] for r in disk + first)

    def best(rows, key):
        return min(r[key] for r in rows) * 1e3

    def spread(rows, key):
        return max(r[key] for r in rows) / min(r[key] for r in rows)

    return {
        "import_core_ms": best(disk, "import_core"), "import_language_ms": best(disk, "import_language"),
        "build_first_ms": best(disk, "build_first"), "build_ms": best(disk, "build"),
        "cold_ms": best(cold, "compile"), "disk_ms": best(disk, "compile"), "disk_spread": spread(disk, "compile"),
        "disk_median_ms": statistics.median(r["compile"] for r in disk) * 1e3,
        "first_use_ms": best(disk, "first_use"), "first_compile_ms": best(first, "compile"),
        "load_ms": best(disk, "load"), "memo_ms": best(disk, "memo"), "rebuild_and_memo_ms": best(disk, "rebuild_and_memo"),
        "processes": len(disk),
    }


# -- per-call overhead -------------------------------------------------------------------------


def bench_overhead(rounds: int) -> dict:
    a, b, c = np.full(16, 2, np.float32), np.ones(16, np.float32), np.empty(16, np.float32)
    kernel = tilelang.compile(elementwise_add(16, block=16, threads=16), target="cpu")
    with_out = tilelang.compile(elementwise_add(16, block=16, threads=16), out_idx=[2], target="cpu")
    kernel(a, b, c)
    assert np.array_equal(c, a + b)
    launch, pointers = kernel.loaded.launch, [a.ctypes.data, b.ctypes.data, c.ctypes.data]
    fns = {"ours": lambda: kernel(a, b, c), "ours_out": lambda: with_out(a, b),
           "launch": lambda: launch(pointers, None, None, 0, None), "numpy": lambda: np.add(a, b, out=c)}
    try:
        import torch

        ta, tb, tc = torch.full((16,), 2.0), torch.ones(16), torch.empty(16)
        fns["ours_torch"] = lambda: kernel(ta, tb, tc)
        fns["torch"] = lambda: torch.add(ta, tb, out=tc)
    except ImportError:
        pass
    times = interleaved(fns, rounds, inner=2000)
    result = {name: min(ts) * 1e6 for name, ts in times.items()}
    result["spread"] = max(times["ours"]) / min(times["ours"])
    return result


# -- report ------------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds per kernel (default 10, quick 4)")
    args = parser.parse_args()
    rounds = args.rounds or (4 if args.quick else 10)
    print_environment()
    rows = bench_gemm(1024, rounds, [(64, 64, 64), (128, 128, 128)])
    rows.append(bench_softmax(4096, 4096, rounds, block_m=4))
    comp = bench_compile(processes=3 if args.quick else 5)
    over = bench_overhead(rounds=5 if args.quick else 15)

    print(f"\n{'kernel':<38} {'ours ms':>15} {'numpy ms':>15} {'numpy/ours':>10} {'rel.err ours/numpy':>19}")
    print(f"{'':<38} {'best (median)':>15} {'best (median)':>15} {'(best)':>10}")
    for r in rows:
        o, n = r["ours"], r["numpy"]
        print(f"{r['name']:<38} {o['best'] * 1e3:6.1f} ({o['median'] * 1e3:6.1f}) {n['best'] * 1e3:6.1f} ({n['median'] * 1e3:6.1f}) "
              f"{r['ratio']:9.2f}x {r['err']:9.1e}/{r['numpy_err']:.1e}")
        print(f"{'':<38} {r['extra']}; spread max/min ours {o['spread']:.2f}, numpy {n['spread']:.2f}")

    print("\nseed GEMM (1024^3, 64^3 tiles) compile time, ms (best of fresh processes):")
    print(f"  imports: tilelang_core {comp['import_core_ms']:.1f}; the language (+TVM) {comp['import_language_ms']:.0f}")
    print(f"  (a) building the PrimFunc (TVMScript parse)      {comp['build_ms']:8.1f}   (first in a process {comp['build_first_ms']:.1f})")
    print(f"  (b) compile(), cold cache (C compiler runs)      {comp['cold_ms']:8.1f}")
    print(f"  (c) compile(), fresh process, disk-cache hit     {comp['disk_ms']:8.2f}   (median {comp['disk_median_ms']:.2f}, "
          f"spread {comp['disk_spread']:.1f}x over {comp['processes']} processes)")
    print(f"      first-use imports + probes it excludes       {comp['first_use_ms']:8.1f}   (first compile() of a process, all in: "
          f"{comp['first_compile_ms']:.1f})")
    print(f"      loading the shared library (first call)      {comp['load_ms']:8.2f}")
    print(f"  (d) compile() again in-process (memo hit)        {comp['memo_ms']:8.3f}   (rebuilding the PrimFunc + memo hit: "
          f"{comp['rebuild_and_memo_ms']:.1f})")

    print("\ntiny kernel (3 x 16 floats) per call, us (best of rounds of 2000 calls):")
    line = (f"  ours(numpy arrays) {over['ours']:.2f}; with an output allocated (out_idx) {over['ours_out']:.2f}; "
            f"bare ctypes launch {over['launch']:.2f}; numpy.add(out=) {over['numpy']:.2f}")
    if "ours_torch" in over:
        line += f"\n  ours(torch tensors) {over['ours_torch']:.2f}; torch.add(out=) {over['torch']:.2f}"
    print(line + f"\n  host overhead (ours - bare launch): {over['ours'] - over['launch']:.2f}; spread max/min {over['spread']:.2f}")

    gemm_best = max(r["ratio"] for r in rows if r["name"].startswith("GEMM"))
    print("\ngoals:")
    print(f"  GEMM >= {GOALS['gemm']}x NumPy: {gemm_best:.2f}x (best tiles; seed tiles {rows[0]['ratio']:.2f}x) "
          f"{verdict(gemm_best >= GOALS['gemm'])}")
    print(f"  softmax >= {GOALS['softmax']}x NumPy: {rows[-1]['ratio']:.2f}x {verdict(rows[-1]['ratio'] >= GOALS['softmax'])}")
    print(f"  warm compile <= {GOALS['warm_compile_ms']} ms: (c) {comp['disk_ms']:.2f} ms, (d) {comp['memo_ms']:.3f} ms "
          f"{verdict(comp['disk_ms'] <= GOALS['warm_compile_ms'])}")
    print(f"  call overhead <= {GOALS['overhead_us']} us: {over['ours']:.2f} us {verdict(over['ours'] <= GOALS['overhead_us'])}")


if __name__ == "__main__":
    main()
