"""attention_decode variants (kernel configs) at the bench size, beside torch's SDPA, on the
GPU. Compile here, run there:

    # here (no GPU needed): compile each variant for sm_90a, export it (~0.25 MB each)
    .venv/bin/python bench/decode_variants.py --export build/decode_variants [--arch sm_90a] [--only a,b]

    # on the GPU machine (torch + cuda-python; TVM not needed)
    python bench/decode_variants.py --run build/decode_variants [--rounds 5] [--rep 30] [--only a,b]

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

import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/: the shared half, variants.py

import variants  # noqa: E402
from attention import _time  # noqa: E402  (bench/attention.py: CUDA events, median of `rep` calls)

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
    variants.check_only(only, VARIANTS)
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
    variants.write_manifest(out, {"target": str(target), "problem": problem, "variants": entries})
    return entries


# ---------------------------------------------------------------------------- run


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
    o = torch.empty_like(q)
    return variants.check(torch, lambda: kernel(q, k, v, o), o, ref, entry["workspaces"], DEVICE, ATOL, RTOL)


def run(out: Path, rounds: int = 5, only: list[str] | None = None, warmup: int = 10, rep: int = 30) -> int:
    """Check every variant exported to `out` (`only`: those names) against SDPA and time it
    beside SDPA in `rounds` alternating rounds (each the median of `rep` calls after `warmup`).
    :returns: the exit status."""
    torch, manifest = variants.begin(out, DEVICE)
    if torch is None:
        return 2
    problem = manifest["problem"]
    time_one = variants.timer(DEVICE, lambda fn: _time(fn, warmup, rep))
    ok, rows = True, []
    for entry, kernel in variants.exports(out, manifest["variants"], only):
        good, err = _check(torch, kernel, entry, problem)
        ok &= good
        q, k, v = _inputs(torch, problem)
        o = torch.empty_like(q)
        fns = {"ours": lambda: kernel(q, k, v, o), "sdpa": lambda: _sdpa(q, k, v, problem["scale"])}
        if "split_alone" in entry:  # the split launch alone, on workspaces allocated once
            alone = variants.load(out / entry["split_alone"])
            spaces = variants.allocate(torch, entry["workspaces"], DEVICE)
            fns["split launch"] = lambda: alone(q, k, v, o, *spaces)
        med, paired = variants.alternate(fns, rounds, time_one, "sdpa")
        gbs = k.numel() * k.element_size() * 2 / med["ours"] / 1e6  # K + V bytes / time
        split = med.get("split launch")
        alone_text = f"  split launch alone {split:.4f} ms" if split else ""
        print(f"{entry['name']:<14} ours {med['ours']:.4f} ms {gbs:7.1f} GB/s  SDPA {med['sdpa']:.4f} ms  "
              f"SDPA/ours {paired:.3f}  max err {err:.1e} {'ok' if good else 'MISMATCH'}{alone_text}", flush=True)
        rows.append([entry["name"], variants.describe(entry["changes"]), f"{entry['splits']} x {entry['chunk']}",
                     entry["threads"], entry["shared_memory"] // 1024, f"{med['ours']:.4f}", f"{gbs:.1f}",
                     f"{med['sdpa']:.4f}", f"**{paired:.2f}**", f"{split:.4f}" if split else "-",
                     f"{err:.1e}{'' if good else ' MISMATCH'}"])
        del q, k, v, o, fns
    variants.print_table(["variant", "changes", "splits x keys", "threads", "shared KB", "ours ms", "GB/s", "SDPA ms",
                          "SDPA/ours (paired)", "split launch alone ms", "max abs err"], rows)
    print(variants.device_line(torch, DEVICE, "memory-bound floor 0.9x"))
    return 0 if ok else 1


def main(argv=None) -> int:
    return variants.main(__doc__, VARIANTS, export, run, argv, warmup=10, rep=30)


if __name__ == "__main__":
    sys.exit(main())
