"""batched_gemm, grouped_gemm and conv2d kernel variants at bench/ops.py's sizes, beside torch,
on the GPU. Compile here, run there:

    # here (no GPU needed): compile each variant for sm_90a and export it (~0.2 MB each)
    .venv/bin/python bench/gemm_class_variants.py --export build/gemm_class_variants [--only a,b]

    # on the GPU machine (torch + cuda-python; TVM not needed)
    python bench/gemm_class_variants.py --run build/gemm_class_variants [--rounds 5] [--rep 30] [--only a,b]

The problems are bench/ops.py's rows: `batched_gemm` 16 x 2048^3, `grouped_gemm` 8 groups of
64..2047 rows (a fixed split drawn with seed 0, recorded in the manifest) by 4096 x 4096,
`conv2d` 32 x 128 x 56 x 56 with 128 3 x 3 filters, padding 1; float16. Each variant is the
operator's own kernel builder with a config: `table` is what the operator runs on the target
today, `before` the config it ran with before this change (conv2d: `tile_layout`, the layout
launch through a shared tile; its epilogue before is not kept), the others change one thing.
For conv2d the layout launch and the GEMM launch are also exported alone (`<name>.layout`,
`<name>.gemm`), so the run shows what each costs.

`--run` loads every export with `tilelang_core.load`, checks its output against torch in
float32 on fresh random inputs (output and workspaces poisoned with NaN first, every element
within 2e-2 + 1e-2 |ref|), then times it beside torch (torch.bmm, a loop of matmuls per group,
F.conv2d) in `--rounds` alternating rounds with CUDA events (median of `--rep` calls per round)
and prints TFLOP/s and torch time / our time (the median of the per-round ratios).
Exit status: 0 when every variant matched, 1 otherwise, 2 without a GPU.
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/: the shared half, variants.py

import variants  # noqa: E402
from attention import _time  # noqa: E402  (bench/attention.py: CUDA events, median of `rep` calls)

_GEMM = {"trans_a": False, "trans_b": False, "bias": False, "activation": "none", "dtype": "float16"}
PROBLEMS = {
    "batched_gemm": {**_GEMM, "batch": 16, "M": 2048, "N": 2048, "K": 2048},
    # "sizes" is the split (rows per group); the kernel's problem is made from it
    "grouped_gemm": {"sizes": [random.Random(0).randrange(64, 2048) for _ in range(8)], "N": 4096, "K": 4096,
                     "dtype": "float16"},
    "conv2d": {"N": 32, "C": 128, "H": 56, "W": 56, "O": 128, "KH": 3, "KW": 3, "stride": 1, "padding": 1,
               "dtype": "float16"},
}
# name -> (operator, config changes over the table's config for the target)
VARIANTS = {
    "bmm.table": ("batched_gemm", {}),  # the gemm's row: persistent, C staged in 2 chunks, TMA stores
    "bmm.before": ("batched_gemm", {"epilogue": "shared"}),  # one 64 KB C tile: one tile per block
    "bmm.s3": ("batched_gemm", {"stages": 3}),
    "grouped.table": ("grouped_gemm", {}),  # exact tile table: constant trip count, persistent
    "grouped.before": ("grouped_gemm", {"tile_table": "padded"}),  # padded table, one tile per block
    "grouped.shared_s3": ("grouped_gemm", {"epilogue": "shared", "stages": 3}),  # 16-byte row stores
    "conv.table": ("conv2d", {}),
    "conv.tile_layout": ("conv2d", {"vector_bytes": 0}),  # the layout launch through a shared tile, as before
    "conv.m128": ("conv2d", {"block_M": 128}),  # 841 tiles (6.4 waves) instead of 421 (3.2 waves)
    "conv.m128_s6": ("conv2d", {"block_M": 128, "stages": 6}),
    "conv.s3": ("conv2d", {"stages": 3}),
}
ALONE = ("conv.table", "conv.tile_layout", "conv.m128")  # conv2d: each launch also exported alone
ATOL, RTOL = 2e-2, 1e-2
DEVICE = "cuda"  # where the inputs live (a CPU smoke test of this script sets "cpu")


def tile_table(sizes: list[int], rows: int, exact: bool) -> list[tuple[int, int, int]]:
    """grouped_gemm's tile table for `sizes` (the operator's own `_tile_table` cut)."""
    import numpy as np

    from tilelang_core.ops.gemm import _tile_table

    tiles = max(1, sum(-(-s // rows) for s in sizes)) if exact else -(-sum(sizes) // rows) + len(sizes)
    return _tile_table(sizes, rows, tiles, np.empty(0)).tolist()


# ---------------------------------------------------------------------------- export


def kernel_problem(op_name: str, target, changes: dict) -> tuple[dict, dict]:
    """(the kernel's problem, the config) of a variant: the table's config for `target` (as the
    operator resolves it) with `changes`; grouped_gemm's problem from the split."""
    from tilelang_core import ops
    from tilelang_core.ops.registry import resolve_config

    op = ops.get(op_name)
    problem = dict(PROBLEMS[op_name])
    if op_name == "grouped_gemm":
        config = {**resolve_config(op, target, {})[0], **changes}
        sizes = problem.pop("sizes")
        exact = config.get("tile_table", "padded") == "exact"
        problem = {"rows": sum(sizes), "groups": len(sizes), **problem,
                   "tiles": len(tile_table(sizes, config["block_M"], exact)), "tile_rows": config["block_M"]}
        return problem, config
    return problem, {**resolve_config(op, target, problem)[0], **changes}


def export(out: Path, target: str, only: list[str] | None = None) -> list[dict]:
    """Compile the variants (`only`: those names) for `target` (e.g. "cuda/sm_90a") and export
    each to out/NAME; write the manifest. :returns: the manifest's entries."""
    import tilelang_core
    from tilelang_core import ops
    from tilelang_core.ops.launch import pass_configs
    from tilelang_core.plugin import get_plugin_manager
    from tilelang_core.transform.launches import split_launches

    target = get_plugin_manager().parse_target(target)
    variants.check_only(only, VARIANTS)
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, (op_name, changes) in VARIANTS.items():
        if only and name not in only:
            continue
        start = time.perf_counter()
        problem, config = kernel_problem(op_name, target, changes)
        func = ops.get(op_name).kernels[config["kernel"]](problem, config)
        kernel = tilelang_core.compile(func, target=target, pass_configs=pass_configs(config))  # outputs passed in
        kernel.export(out / name)
        launches = kernel.meta.launches or []
        source = kernel.get_kernel_source()
        entry = {"name": name, "op": op_name, "changes": changes, "problem": problem,
                 "config": {k: v for k, v in config.items() if k != "kernel"},
                 "grids": [list(launch.grid) for launch in launches],
                 "shared_memory": [launch.shared_memory for launch in launches],
                 "persistent": "wave < " in source, "tma_store": "tma_store(" in source,
                 "workspaces": [[list(w.shape), w.dtype] for w in kernel.meta.workspaces]}
        if op_name == "grouped_gemm":
            entry["sizes"] = PROBLEMS["grouped_gemm"]["sizes"]
            entry["table"] = tile_table(entry["sizes"], problem["tile_rows"],
                                        config.get("tile_table", "padded") == "exact")
        if name in ALONE:
            for part, launch in zip(("layout", "gemm"), split_launches(func).launches):
                alone = tilelang_core.compile(launch, target=target, pass_configs=pass_configs(config))
                alone.export(out / f"{name}.{part}")
            entry["alone"] = [f"{name}.layout", f"{name}.gemm"]
        entries.append(entry)
        print(f"exported {name}: grids {entry['grids'] or '-'}, persistent {entry['persistent']}, "
              f"TMA store {entry['tma_store']}, in {time.perf_counter() - start:.1f} s", flush=True)
    variants.write_manifest(out, {"target": str(target), "variants": entries})
    return entries


# ---------------------------------------------------------------------------- run


def _case(torch, entry: dict):
    """Fresh inputs of a variant's problem: (our call with the output passed in, the output,
    torch's call, torch's result in float32 on the same inputs, FLOPs)."""
    import torch.nn.functional as F

    h, p = torch.float16, entry["problem"]
    if entry["op"] == "batched_gemm":
        a = torch.randn(p["batch"], p["M"], p["K"], device=DEVICE, dtype=h)
        b = torch.randn(p["batch"], p["K"], p["N"], device=DEVICE, dtype=h)
        c = torch.empty(p["batch"], p["M"], p["N"], device=DEVICE, dtype=h)
        return (lambda k: k(a, b, b.reshape(-1)[:1], c)), c, (lambda: torch.bmm(a, b)), \
            lambda: torch.bmm(a.float(), b.float()), 2.0 * p["batch"] * p["M"] * p["N"] * p["K"]
    if entry["op"] == "grouped_gemm":
        sizes = entry["sizes"]
        a = torch.randn(sum(sizes), p["K"], device=DEVICE, dtype=h)
        b = torch.randn(len(sizes), p["K"], p["N"], device=DEVICE, dtype=h)
        c = torch.empty(sum(sizes), p["N"], device=DEVICE, dtype=h)
        tiles = torch.tensor(entry["table"], dtype=torch.int32, device=DEVICE)
        starts = [sum(sizes[:g]) for g in range(len(sizes))]

        def loop(a, b):
            return torch.cat([a[s:s + m] @ b[g] for g, (s, m) in enumerate(zip(starts, sizes))])
        return (lambda k: k(a, b, tiles, c)), c, (lambda: loop(a, b)), (lambda: loop(a.float(), b.float())), \
            2.0 * sum(sizes) * p["K"] * p["N"]
    x = torch.randn(p["N"], p["C"], p["H"], p["W"], device=DEVICE, dtype=h)
    w = torch.randn(p["O"], p["C"], p["KH"], p["KW"], device=DEVICE, dtype=h) * 0.1
    oh, ow = p["H"] + 2 * p["padding"] - p["KH"] + 1, p["W"] + 2 * p["padding"] - p["KW"] + 1
    y = torch.empty(p["N"], p["O"], oh, ow, device=DEVICE, dtype=h)
    return (lambda k: k(x, w, y)), y, (lambda: F.conv2d(x, w, padding=p["padding"])), \
        (lambda: F.conv2d(x.float(), w.float(), padding=p["padding"])), \
        2.0 * p["N"] * p["O"] * oh * ow * p["C"] * p["KH"] * p["KW"]


def _check(torch, kernel, entry: dict) -> tuple[bool, float]:
    """One call on fresh inputs, output and workspaces poisoned: (every element within ATOL +
    RTOL |ref| of torch in float32, the largest error)."""
    ours, out, _, reference, _ = _case(torch, entry)
    ref = reference()
    return variants.check(torch, lambda: ours(kernel), out, ref, entry["workspaces"], DEVICE, ATOL, RTOL)


def run(out: Path, rounds: int = 5, only: list[str] | None = None, warmup: int = 10, rep: int = 30) -> int:
    """Check every variant exported to `out` (`only`: those names) against torch and time it
    beside torch (conv2d's launches alone too) in `rounds` alternating rounds (each the median
    of `rep` calls after `warmup`). :returns: the exit status."""
    torch, manifest = variants.begin(out, DEVICE)
    if torch is None:
        return 2
    time_one = variants.timer(DEVICE, lambda fn: _time(fn, warmup, rep))
    ok, rows = True, []
    for entry, kernel in variants.exports(out, manifest["variants"], only):
        good, err = _check(torch, kernel, entry)
        ok &= good
        ours, _, theirs, _, flops = _case(torch, entry)
        fns = {"ours": lambda: ours(kernel), "torch": theirs}
        for part in entry.get("alone", ()):  # a conv2d launch alone, on workspaces allocated once
            spaces = variants.allocate(torch, entry["workspaces"], DEVICE)
            launch = variants.load(out / part)
            fns[part.rsplit(".", 1)[1]] = (lambda launch=launch, spaces=spaces: ours(
                lambda *args: launch(*args, *spaces)))
        med, paired = variants.alternate(fns, rounds, time_one, "torch")
        tflops = flops / med["ours"] / 1e9
        parts = "".join(f"  {k} launch alone {med[k]:.4f} ms" for k in ("layout", "gemm") if k in med)
        print(f"{entry['name']:<18} ours {med['ours']:.4f} ms {tflops:6.1f} TFLOP/s  torch "
              f"{med['torch']:.4f} ms  torch/ours {paired:.3f}  max err {err:.1e} "
              f"{'ok' if good else 'MISMATCH'}{parts}", flush=True)
        grids = " + ".join("x".join(str(d) for d in g) for g in entry["grids"]) or "-"
        rows.append([entry["name"], variants.describe(entry["changes"]), grids, entry["persistent"],
                     f"{med['ours']:.4f}", f"{tflops:.1f}", f"{med['torch']:.4f}", f"**{paired:.2f}**",
                     *(f"{med[k]:.4f}" if med.get(k) else "-" for k in ("layout", "gemm")),
                     f"{err:.1e}{'' if good else ' MISMATCH'}"])
        del fns, ours, theirs
    variants.print_table(["variant", "changes", "grids", "persistent", "ours ms", "TFLOP/s", "torch ms",
                          "torch/ours (paired)", "layout launch ms", "GEMM launch ms", "max abs err"], rows)
    print(variants.device_line(torch, DEVICE, "GEMM floor 0.95x"))
    return 0 if ok else 1


def main(argv=None) -> int:
    return variants.main(__doc__, VARIANTS, export, run, argv, warmup=10, rep=30)


if __name__ == "__main__":
    sys.exit(main())
