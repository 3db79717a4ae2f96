"""attention_decode variants (kernel configs) at the bench size, beside torch's SDPA, on the
GPU. Compile here, run there:

    # here (no GPU needed): compile each variant for sm_90a, export it (~0.25 MB each)
    .venv/bin/python bench/decode_variants.py --export build/decode_variants [--arch sm_90a] [--only a,b]

    # on the GPU machine (torch + cuda-python; TVM not needed)
    python bench/decode_variants.py --run build/decode_variants [--rounds 5] [--rep 30]

The problem is bench/ops.py's `attention_decode` row: batch 16, 32 query heads over 8 KV heads
(GQA group 4), 8192 keys, dim 128, float16 (K + V: 537 MB). Each variant is the operator's
own kernel builder (`tilelang_core.ops.attention`) with a config: `table` is what
`ops.attention_decode` runs on the target today, `before` the config it ran with before
(0.55x SDPA on the H100, 2026-11-26), the others change one thing at a time (warps per block,
keys per tile, pipeline stages, blocks per SM behind the split count, fast math). Both
launches are exported (the split kernel, then the combine); for `table` and `before` the split
launch is also exported alone (`<name>.split`), so the run shows what the combine costs.

`--run` loads every export with `tilelang_core.load`, checks its output against SDPA in
float32 on fresh random inputs (output and workspaces poisoned with NaN first, every element
within 5e-4 + 1e-2 |ref|), then times it beside SDPA (float16, enable_gqa) in `--rounds`
alternating rounds with CUDA events (median of `--rep` calls per round) and prints GB/s
(K + V bytes / time) and SDPA time / our time (the median of the per-round ratios).
Exit status: 0 when every variant matched, 1 otherwise, 2 without a GPU.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
for _path in (REPO, Path(__file__).resolve().parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from attention import _time  # noqa: E402  (bench/attention.py: CUDA events, median of `rep` calls)

MANIFEST = "manifest.json"
PROBLEM = {"batch": 16, "heads": 32, "kv_heads": 8, "seq_kv": 8192, "dim": 128, "dtype": "float16",
           "scale": 1 / math.sqrt(128), "splits": 0}
# name -> config changes over the table's config for the target (threads, not warps)
VARIANTS = {
    "table": {},
    "before": {"block_N": 128, "stages": 3, "threads": 128, "fast_math": False, "blocks_per_processor": 4},
    "warps4": {"threads": 128},  # the table's tiles with the reductions through shared memory
    "no_fast_math": {"fast_math": False},
    "n32_s2": {"block_N": 32, "stages": 2},
    "n32_s4": {"block_N": 32, "stages": 4},
    "n64_s2": {"block_N": 64, "stages": 2},
    "n64_s3": {"block_N": 64, "stages": 3},
    "n16_s4": {"block_N": 16, "stages": 4},
    "per_sm4": {"blocks_per_processor": 4},
    "per_sm16": {"blocks_per_processor": 16},
    "per_sm32": {"blocks_per_processor": 32},
}
SPLIT_ALONE = ("table", "before")  # also exported as the split launch alone
ATOL, RTOL = 5e-4, 1e-2
DEVICE = "cuda"  # where the inputs live (a CPU smoke test of this script sets "cpu")


# ---------------------------------------------------------------------------- export


def variant_config(target, changes: dict) -> dict:
    """The table's config for `target` (as `ops.attention_decode` resolves it) with `changes`."""
    from tilelang_core import ops
    from tilelang_core.ops.registry import resolve_config

    config, _ = resolve_config(ops.get("attention_decode"), target, PROBLEM)
    return {**config, **changes}


def export(out: Path, target: str, only: list[str] | None = None) -> list[dict]:
    """Compile the variants (`only`: those names) for `target` (e.g. "cuda/sm_90a") and
    export each to out/NAME; write the manifest. :returns: the manifest's entries."""
    import tilelang_core
    from tilelang_core import ops
    from tilelang_core.ops.attention import _fit, decode_chunk, decode_splits
    from tilelang_core.ops.launch import pass_configs
    from tilelang_core.plugin import get_plugin_manager
    from tilelang_core.transform.launches import split_launches

    target = get_plugin_manager().parse_target(target)
    problem = {**PROBLEM, "processors": target.capabilities.processor_count or 0}
    build = ops.get("attention_decode").kernels["online_softmax"]
    unknown = sorted(set(only or ()) - set(VARIANTS))
    if unknown:
        raise SystemExit(f"--only names unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, changes in VARIANTS.items():
        if only and name not in only:
            continue
        start = time.perf_counter()
        config = variant_config(target, changes)
        func = build(dict(problem), config)
        # O is passed in (poisoned before the checked call); lse_part and o_part are workspaces
        kernel = tilelang_core.compile(func, target=target, pass_configs=pass_configs(config))
        kernel.export(out / name)
        block_n = _fit(config["block_N"], problem["seq_kv"])
        requested = decode_splits(problem["batch"] * problem["kv_heads"], problem["seq_kv"], problem["processors"],
                                  None, config.get("blocks_per_processor", 4))
        chunk, splits = decode_chunk(problem["seq_kv"], requested, block_n)
        split_launch = kernel.meta.launches[0]
        entry = {"name": name, "changes": changes, "config": {k: v for k, v in config.items() if k != "kernel"},
                 "splits": splits, "chunk": chunk, "grid": list(split_launch.grid),
                 "threads": split_launch.block[0], "shared_memory": split_launch.shared_memory,
                 "workspaces": [[list(w.shape), w.dtype] for w in kernel.meta.workspaces]}
        if name in SPLIT_ALONE:
            alone = tilelang_core.compile(split_launches(func).launches[0], target=target,
                                          pass_configs=pass_configs(config))
            alone.export(out / f"{name}.split")
            entry["split_alone"] = f"{name}.split"
        entries.append(entry)
        print(f"exported {name}: {splits} splits of {chunk} keys, {entry['threads']} threads, "
              f"{split_launch.shared_memory // 1024} KB shared, in {time.perf_counter() - start:.1f} s", flush=True)
    (out / MANIFEST).write_text(json.dumps({"target": str(target), "problem": problem, "variants": entries}, indent=1))
    return entries


# ---------------------------------------------------------------------------- run


def _sync(torch) -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def _poisoned(torch, shapes) -> None:
    """Fill freed allocator blocks of these (shape, dtype name) sizes with NaN, so the
    workspaces the next call allocates start poisoned."""
    blocks = [torch.full(shape, float("nan"), dtype=getattr(torch, dtype), device=DEVICE) for shape, dtype in shapes]
    _sync(torch)
    del blocks


def _inputs(torch, problem: dict):
    b, h, g, s, d = (problem[k] for k in ("batch", "heads", "kv_heads", "seq_kv", "dim"))
    q = torch.randn(b, h, d, device=DEVICE, dtype=torch.float16)
    k, v = (torch.randn(b, g, s, d, device=DEVICE, dtype=torch.float16) for _ in range(2))
    return q, k, v


def _sdpa(q, k, v, scale):
    import torch.nn.functional as F

    return F.scaled_dot_product_attention(q[:, :, None], k, v, enable_gqa=True, scale=scale)[:, :, 0]


def _check(torch, kernel, entry: dict, problem: dict) -> tuple[bool, float]:
    """One call on fresh inputs, output and workspaces poisoned: (every element within
    ATOL + RTOL |ref| of SDPA in float32, the largest error)."""
    q, k, v = _inputs(torch, problem)
    ref = _sdpa(q.float(), k.float(), v.float(), problem["scale"])
    o = torch.full_like(q, float("nan"))
    _poisoned(torch, entry["workspaces"])
    kernel(q, k, v, o)
    _sync(torch)
    err = (o.float() - ref).abs()
    good = bool(torch.isfinite(o).all()) and bool((err <= ATOL + RTOL * ref.abs()).all())
    return good, float(err.max())


def run(out: Path, warmup: int, rep: int, rounds: int) -> int:
    """Check and time every variant exported to `out`. :returns: the exit status."""
    import torch

    import tilelang_core
    from tilelang_core.plugin import get_plugin_manager

    manager = get_plugin_manager()
    if "cuda" not in manager.registry.kinds:  # a bare machine: the backend from this checkout
        sys.path.insert(0, str(REPO / "backends" / "cuda"))
        manager.register_module("cuda", "tilelang_cuda.plugin")
    if DEVICE == "cuda" and not torch.cuda.is_available():
        print("no CUDA device here")
        return 2
    manifest = json.loads((out / MANIFEST).read_text())
    problem = manifest["problem"]
    torch.manual_seed(0)
    ok = True
    rows = []
    for entry in manifest["variants"]:
        kernel = tilelang_core.load(out / entry["name"])
        good, err = _check(torch, kernel, entry, problem)
        ok &= good
        q, k, v = _inputs(torch, problem)
        o = torch.empty_like(q)
        fns = {"ours": lambda: kernel(q, k, v, o), "sdpa": lambda: _sdpa(q, k, v, problem["scale"])}
        if "split_alone" in entry:  # the split launch alone, on workspaces allocated once
            alone = tilelang_core.load(out / entry["split_alone"])
            spaces = [torch.empty(shape, dtype=getattr(torch, dtype), device=DEVICE)
                      for shape, dtype in entry["workspaces"]]
            fns["split launch"] = lambda: alone(q, k, v, o, *spaces)
        samples = {name: [] for name in fns}
        for _ in range(rounds):
            for name, fn in fns.items():
                samples[name].append(_time(fn, warmup, rep))
        med = {name: sorted(t)[rounds // 2] for name, t in samples.items()}
        paired = sorted(s / u for u, s in zip(samples["ours"], samples["sdpa"]))[rounds // 2]
        nbytes = k.numel() * k.element_size() * 2
        row = {"name": entry["name"], "ours_ms": med["ours"], "sdpa_ms": med["sdpa"], "ratio": paired,
               "gbs": nbytes / med["ours"] / 1e6, "sdpa_gbs": nbytes / med["sdpa"] / 1e6, "err": err, "ok": good,
               "split_ms": med.get("split launch"), "entry": entry}
        rows.append(row)
        split = f"  split launch alone {row['split_ms']:.4f} ms" if row["split_ms"] else ""
        print(f"{entry['name']:<14} ours {row['ours_ms']:.4f} ms {row['gbs']:7.1f} GB/s  SDPA {row['sdpa_ms']:.4f} ms  "
              f"SDPA/ours {paired:.3f}  max err {err:.1e} {'ok' if good else 'MISMATCH'}{split}", flush=True)
        del q, k, v, o, fns
    print("\n| variant | changes | splits x keys | threads | shared KB | ours ms | GB/s | SDPA ms | SDPA/ours (paired) "
          "| split launch alone ms | max abs err |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        e = r["entry"]
        changes = ", ".join(f"{k}={v}" for k, v in e["changes"].items()) or "-"
        split = f"{r['split_ms']:.4f}" if r["split_ms"] else "-"
        print(f"| {r['name']} | {changes} | {e['splits']} x {e['chunk']} | {e['threads']} | {e['shared_memory'] // 1024} "
              f"| {r['ours_ms']:.4f} | {r['gbs']:.1f} | {r['sdpa_ms']:.4f} | **{r['ratio']:.2f}** | {split} "
              f"| {r['err']:.1e}{'' if r['ok'] else ' MISMATCH'} |")
    device = torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE
    print(f"device: {device}, torch {torch.__version__}; memory-bound floor 0.9x")
    return 0 if ok else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export", type=Path, metavar="DIR", help="compile and export the variants to DIR")
    parser.add_argument("--run", type=Path, metavar="DIR", help="run the variants exported to DIR on the GPU")
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("--only", default="", help=f"comma-separated variants to export (of {', '.join(VARIANTS)})")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--rep", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    if not (args.export or args.run):
        parser.error("give --export DIR and/or --run DIR")
    if args.export:
        export(args.export, f"cuda/{args.arch}", [n for n in args.only.split(",") if n] or None)
    if args.run:
        sys.modules["tvm"] = None  # the runtime half must not need the compiler
        return run(args.run, args.warmup, args.rep, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
