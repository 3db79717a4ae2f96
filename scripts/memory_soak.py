"""Compile and run many distinct small CPU kernels in one process and report its memory.

    python scripts/memory_soak.py --kernels 2000 [--memo 256] [--budget-mb 64] [--json out.json]

Each kernel differs by a constant, so each is a fresh compile (the disk cache goes to a
temporary directory) and a fresh shared library. The in-process memo keeps the last `--memo`
kernels (`TILELANG_KERNEL_MEMO_SIZE`); older ones are dropped and unloaded. The resident set
(RSS) is read after the warm-up (the memo full and `--memo` more kernels run, so allocator
pools and TVM's caches have settled) and at the end; the run passes when it grew by at most
`--budget-mb` between the two, and every kernel's output was right. Prints one JSON object.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time


def rss_mb() -> float:
    """The resident set of this process, in MiB (Linux /proc)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def kernel_mappings() -> int:
    """Shared libraries of compiled kernels mapped into this process."""
    with open("/proc/self/maps") as maps:
        # one library maps several segments; its file is unlinked once loaded, so count inodes
        return len({line.split()[4] for line in maps if "tilelang-" in line and ".so" in line})


def offset_kernel(value: float, n: int = 64):
    from tilelang_core import language as T

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(n):
                Y[i] = X[i] * 0.5 + value
    return main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", type=int, default=2000)
    parser.add_argument("--memo", type=int, default=256, help="TILELANG_KERNEL_MEMO_SIZE for the run")
    parser.add_argument("--budget-mb", type=float, default=64.0, help="allowed RSS growth after the warm-up")
    parser.add_argument("--json", help="also write the report here")
    args = parser.parse_args(argv)
    os.environ["TILELANG_KERNEL_MEMO_SIZE"] = str(args.memo)
    os.environ["TILELANG_CACHE_DIR"] = tempfile.mkdtemp(prefix="tilelang-soak-")
    import numpy as np

    import tilelang_core as tilelang

    warmup = min(args.kernels, 2 * args.memo)
    x = np.arange(64, dtype=np.float32)
    start, rss_warm, peak, wrong = time.perf_counter(), None, 0.0, 0
    rss_begin = rss_mb()
    for k in range(args.kernels):
        value = 1000.0 + k
        kernel = tilelang.compile(offset_kernel(value), out_idx=[1], target="cpu")
        if not np.array_equal(kernel(x), x * np.float32(0.5) + np.float32(value)):
            wrong += 1
        del kernel
        if k + 1 == warmup:
            gc.collect()
            rss_warm = rss_mb()
        peak = max(peak, rss_mb()) if k % 50 == 0 else peak
    gc.collect()
    rss_end = rss_mb()
    growth = rss_end - (rss_warm if rss_warm is not None else rss_begin)
    report = {
        "kernels": args.kernels, "memo": args.memo, "warmup_kernels": warmup, "wrong_results": wrong,
        "rss_begin_mb": round(rss_begin, 1), "rss_after_warmup_mb": round(rss_warm or rss_begin, 1),
        "rss_end_mb": round(rss_end, 1), "rss_peak_mb": round(max(peak, rss_end), 1),
        "growth_after_warmup_mb": round(growth, 1), "budget_mb": args.budget_mb,
        "kernel_libraries_mapped": kernel_mappings(), "seconds": round(time.perf_counter() - start, 1),
        "passed": wrong == 0 and growth <= args.budget_mb,
    }
    text = json.dumps(report)
    print(text)
    if args.json:
        with open(args.json, "w") as out:
            out.write(text + "\n")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
