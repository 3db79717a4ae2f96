"""Where batched_gemm's time goes on a GPU, and which of its table's choices pay: one run.

    python bench/gemm_class.py            # on the GPU machine (compiles there: shared/gpu/README.md)
    python bench/gemm_class.py --dry      # anywhere: builds and compiles every kernel for sm_90a

1. **K sweep.** batched_gemm at batch 16, M = N = 2048, K = 1024 .. 8192, beside torch.bmm.
   Every K has the same 2048 tiles (16 waves on 132 SMs), so a straight line through our
   times splits them into a cost per K step and a cost per tile that nothing overlaps
   (pipeline fill, epilogue): the line's intercept / 16 waves. docs/ops.md estimates the
   latter at about 10 µs from two points of the last H100 run.
2. **Config A/B.** At 16 x 2048³: the 128 x 256 x 64 wgmma tile with 3 or 4 stages and C
   stored from the accumulators ("registers") or as one tile from shared memory ("shared",
   a TMA store), each checked against torch and timed beside torch.bmm.

Times are medians of CUDA-event pairs (bench/attention.py's `_time`). Exit status: 0 when
every output matched, 1 otherwise, 2 without a GPU.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
for _path in (REPO, Path(__file__).resolve().parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

BATCH, SIDE = 16, 2048
SWEEP = (1024, 2048, 4096, 8192)
VARIANTS = [(stages, epilogue) for stages in (3, 4) for epilogue in ("registers", "shared")]


def _kernel(target, k: int, changes: dict | None = None):
    """batched_gemm's compiled kernel at (BATCH, SIDE, SIDE, k) float16 with its table config
    on `target`, updated by `changes`, and that config."""
    import tilelang_core
    from tilelang_core import ops
    from tilelang_core.ops.registry import resolve_config

    op = ops.get("batched_gemm")
    problem = {"batch": BATCH, "M": SIDE, "N": SIDE, "K": k, "dtype": "float16", "trans_a": False,
               "trans_b": False, "bias": False, "activation": "none"}
    config = {**resolve_config(op, target, problem)[0], **(changes or {})}
    func = op.kernels[config["kernel"]](problem, config)
    return tilelang_core.compile(func, out_idx=list(op.outputs), target=target), config


def _run(target) -> int:
    import torch
    from attention import _time

    ok = True

    def timed(kernel, a, b):
        c = kernel(a, b, b.reshape(-1)[:1])
        want = torch.bmm(a.float(), b.float())
        good = bool(((c.float() - want).abs() <= 2e-2 * want.abs().max()).all())
        return good, _time(lambda: kernel(a, b, b.reshape(-1)[:1]), 5, 20), _time(lambda: torch.bmm(a, b), 5, 20)

    print(f"K sweep: batched_gemm {BATCH} x {SIDE} x {SIDE} x K, float16, table config")
    print("| K | ours ms | torch ms | torch / ours | ours TFLOP/s | check |\n|---|---|---|---|---|---|")
    points = []
    for k in SWEEP:
        a = torch.randn(BATCH, SIDE, k, device="cuda", dtype=torch.float16)
        b = torch.randn(BATCH, k, SIDE, device="cuda", dtype=torch.float16)
        good, ours, theirs = timed(_kernel(target, k)[0], a, b)
        ok &= good
        points.append((k, ours))
        print(f"| {k} | {ours:.4f} | {theirs:.4f} | {theirs / ours:.2f}x | "
              f"{2.0 * BATCH * SIDE * SIDE * k / ours / 1e9:.1f} | {'ok' if good else 'FAILED'} |")
    n = len(points)
    mean_k, mean_t = sum(k for k, _ in points) / n, sum(t for _, t in points) / n
    slope = sum((k - mean_k) * (t - mean_t) for k, t in points) / sum((k - mean_k) ** 2 for k, _ in points)
    intercept = mean_t - slope * mean_k
    waves = -(-BATCH * (SIDE // 128) * (SIDE // 256) // torch.cuda.get_device_properties(0).multi_processor_count)
    print(f"\nline: {slope * 64 / waves * 1e3:.3f} µs per K step of 64 and {intercept / waves * 1e3:.2f} µs per tile "
          f"({waves} waves)\n")

    print(f"Config A/B at {BATCH} x {SIDE}³ (128 x 256 x 64 tile)")
    print("| stages | epilogue | ours ms | torch ms | torch / ours | check |\n|---|---|---|---|---|---|")
    a = torch.randn(BATCH, SIDE, SIDE, device="cuda", dtype=torch.float16)
    b = torch.randn(BATCH, SIDE, SIDE, device="cuda", dtype=torch.float16)
    for stages, epilogue in VARIANTS:
        good, ours, theirs = timed(_kernel(target, SIDE, {"stages": stages, "epilogue": epilogue})[0], a, b)
        ok &= good
        print(f"| {stages} | {epilogue} | {ours:.4f} | {theirs:.4f} | {theirs / ours:.2f}x | "
              f"{'ok' if good else 'FAILED'} |")
    return 0 if ok else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry", action="store_true", help="compile every kernel for cuda/sm_90a, run nothing")
    args = parser.parse_args(argv)
    from tilelang_core.plugin import get_plugin_manager

    target = get_plugin_manager().parse_target("cuda/sm_90a")
    if args.dry:
        for k in SWEEP:
            print("K", k, _kernel(target, k)[1])
        for stages, epilogue in VARIANTS:
            print("variant", _kernel(target, SIDE, {"stages": stages, "epilogue": epilogue})[1])
        return 0
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        print("no GPU: run this on the GPU machine (or --dry to compile only)")
        return 2
    return _run(target)


if __name__ == "__main__":
    raise SystemExit(main())
