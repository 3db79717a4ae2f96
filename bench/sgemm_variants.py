"""float32 GEMM at precision "highest" (FMA loops, no TF32) beside cuBLAS SGEMM on the GPU:
the gemm operator's FMA kernel (`tilelang_core.ops.gemm._gemm_fma_kernel`) in config variants.
Compile here, run there:

    # here (no GPU needed): compile each variant for sm_90a and export it (~0.1 MB each)
    .venv/bin/python bench/sgemm_variants.py --export build/sgemm_variants [--arch sm_90a] [--only a,b]

    # on the GPU machine (torch + cuda-python; TVM not needed)
    python bench/sgemm_variants.py --run build/sgemm_variants [--rounds 3] [--only a,b]

The problem is C = A @ B, float32, A (M, K), B (K, N), square: every variant at 4096^3, the
ones in `AT_8192` at 8192^3 too (with `--only`, the named variants at both sizes). `table` is
the config `ops.gemm` runs at precision "highest" on the target today; `before` is the one it
ran before this bench (0.41x cuBLAS at 4096^3 on the H100, 2026-11-26: 16-wide K slabs in 2
stages, warps of 2 x 16 threads, A's tile unskewed, C stored a float at a time). The others change one or two keys of
`table`: the warp's arrangement (`fma_lanes_n` threads along N), how A's K-minor tile avoids
bank conflicts (16-byte skew every 4 rows, XOR swizzle, neither), stages, the K slab, the
per-thread tile (8 x 16 and 16 x 8: 128 threads for 128 x 128), the block tile, block
rasterization, and `a_kmajor`: A handed over as (K, M) (`trans_a=True`, beside cuBLAS on the
same layout), what a transposing load of A would give the plain `a @ b`. `b_kminor` and
`b_kminor_before` are the other problem `a @ b.T` (B as (N, K), `trans_b=True`) with the
table's config and the one before.

Variants named `*_lb2` are probes, not what the language emits: their CUDA source is rebuilt
with `__launch_bounds__(threads, 2)` (two blocks per SM: ptxas keeps 128 registers), to
measure what a backend option for that cap would bring to configs ptxas otherwise gives
more than 128 registers (one block per SM).

The manifest records each export's threads, shared memory, registers, and the instruction
mix of its main loop (FFMA, LDS.128, other LDS, SASS bytes; local memory) where cuobjdump is
found.

`--run` loads every export with `tilelang_core.load`, checks it on fresh random inputs (C
poisoned with NaN first; every element within the float32 bound 2 (K + 2) 2^-24 (|A| @ |B|)
of the float64 product), then times it beside `torch.matmul` with TF32 off
(`allow_tf32 = False`, precision "highest": cuBLAS SGEMM) in `--rounds` alternating rounds
(CUDA events) and prints TFLOP/s and cuBLAS time / ours (the median of per-round ratios).
Exit status: 0 when every variant matched, 1 otherwise, 2 without a GPU.
"""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/: the shared half, variants.py

import variants  # noqa: E402

SIZES = (4096, 8192)
# name -> (config changes over the table's config for the target, problem changes, probe:
# blocks per SM asked of ptxas through `__launch_bounds__(threads, blocks)`, or 0)
BEFORE = {"fma_lanes_n": 16, "fma_skew": False, "fma_swizzle_a": False, "fma_stages": 2, "fma_block_K": 16,
          "fma_thread_M": 8, "fma_thread_N": 8, "fma_block_M": 128, "fma_block_N": 128, "fma_panel": 0,
          "fma_vector_store": False}
VARIANTS = {
    "table": ({}, {}, 0),
    "before": (BEFORE, {}, 0),
    "lanes16": ({"fma_lanes_n": 16}, {}, 0),  # warps of 2 x 16 threads: a 16 x 128 warp tile
    "lanes4": ({"fma_lanes_n": 4}, {}, 0),  # warps of 8 x 4 threads: 64 x 32
    "k16_s2": ({"fma_block_K": 16, "fma_stages": 2}, {}, 0),
    "k16_s3": ({"fma_block_K": 16, "fma_stages": 3}, {}, 0),
    "k16_s3_lb2": ({"fma_block_K": 16, "fma_stages": 3}, {}, 2),
    "k32_s2": ({"fma_block_K": 32, "fma_stages": 2}, {}, 0),
    "s3": ({"fma_stages": 3}, {}, 0),
    "s6": ({"fma_stages": 6}, {}, 0),
    "no_skew": ({"fma_skew": False}, {}, 0),
    "swizzle": ({"fma_skew": False, "fma_swizzle_a": True}, {}, 0),
    "swizzle_lb2": ({"fma_skew": False, "fma_swizzle_a": True}, {}, 2),
    "t8x16": ({"fma_thread_N": 16}, {}, 0),  # 128 threads
    "t16x8": ({"fma_thread_M": 16}, {}, 0),
    "b128x256_t8x16": ({"fma_block_N": 256, "fma_thread_N": 16}, {}, 0),  # 256 threads
    "b256x128_t16x8": ({"fma_block_M": 256, "fma_thread_M": 16}, {}, 0),
    "panel8": ({"fma_panel": 8}, {}, 0),
    "panel8_lb2": ({"fma_panel": 8}, {}, 2),
    "scalar_store": ({"fma_vector_store": False}, {}, 0),
    "a_kmajor": ({}, {"trans_a": True}, 0),
    "b_kminor": ({}, {"trans_b": True}, 0),  # a @ b.T with b (N, K): another problem
    "b_kminor_before": (BEFORE, {"trans_b": True}, 0),
}
AT_8192 = ("table", "before", "k16_s3_lb2", "t8x16", "panel8_lb2")
ROUNDS = 3
DEVICE = "cuda"  # where the inputs live (a CPU smoke test of this script sets "cpu")


def _time(torch, fn) -> float:
    from gemm import _time_ms  # bench/gemm.py: CUDA events, the median of 7 trials of 20 calls

    return _time_ms(torch, fn)


# ---------------------------------------------------------------------------- export


def problem_of(size: int, changes: dict | None = None) -> dict:
    return {"batch": 1, "M": size, "N": size, "K": size, "dtype": "float32", "trans_a": False, "trans_b": False,
            "bias": False, "activation": "none", "fma": True, **(changes or {})}


def variant_config(target, problem: dict, changes: dict) -> dict:
    """The table's config for `problem` on `target` (as `ops.gemm` resolves it) with `changes`."""
    from tilelang_core import ops
    from tilelang_core.ops.registry import resolve_config

    config, _ = resolve_config(ops.get("gemm"), target, problem)
    return {**config, **changes}


def sass_summary(binary: bytes) -> dict:
    """Registers, local memory and the instruction mix of the longest loop of a cubin (empty
    where cuobjdump is not found)."""
    import subprocess

    from tilelang_cuda import compile as cuda_compile

    try:
        sass = cuda_compile.disassemble(binary)
    except RuntimeError:
        return {}
    summary = {"registers": None}
    tool = cuda_compile._find_tool("cuobjdump")
    if tool:
        import tempfile

        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(binary)
            f.flush()
            usage = subprocess.run([tool, "-res-usage", f.name], capture_output=True, text=True).stdout
        found = re.search(r"REG:(\d+) STACK:(\d+)", usage)
        if found:
            summary.update(registers=int(found.group(1)), stack=int(found.group(2)))
    lines = [(int(m.group(1), 16), m.group(2)) for m in
             (re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", line) for line in sass.splitlines()) if m]
    loops = []  # (start, end) of each backward branch
    for at, text in lines:
        target = re.search(r"BRA (0x[0-9a-f]+)", text)
        if target and int(target.group(1), 16) < at and text.startswith("@"):
            loops.append((int(target.group(1), 16), at))
    if loops:
        start, end = max(loops, key=lambda span: span[1] - span[0])
        body = [re.sub(r"^@!?U?P\w+\s+", "", text).split()[0] for at, text in lines
                if start <= at <= end and not text.startswith("@!PT")]  # @!PT: never executed (padding)
        summary["loop"] = {"instructions": len(body), "FFMA": body.count("FFMA"), "LDS.128": body.count("LDS.128"),
                           "LDS other": sum(op.startswith("LDS") and op != "LDS.128" for op in body),
                           "bytes": (end - start + 16)}
    summary["local_memory_ops"] = sum(text.split()[0].startswith(("LDL", "STL")) for _, text in lines)
    return summary


def probe(kernel, out: Path, blocks: int, arch: str) -> None:
    """Rebuild the export in `out` from the kernel's source with `__launch_bounds__(threads,
    blocks)`: what a backend option for a register cap would give (the language has none)."""
    from tilelang_cuda.compile import compile_cuda

    source, count = re.subn(r"__launch_bounds__\((\d+)(?:, \d+)?\)", lambda m: f"__launch_bounds__({m.group(1)}, {blocks})",
                            kernel.get_kernel_source(), count=1)
    if count != 1:
        raise SystemExit("probe: the kernel source has no __launch_bounds__(threads) to extend")
    (out / kernel.meta.binary_name).write_bytes(compile_cuda(source, arch))
    (out / "kernel.src").write_text(source)


def export(out: Path, target: str, only: list[str] | None = None, sizes: tuple = SIZES) -> list[dict]:
    """Compile the variants (`only`: those names) for `target` (e.g. "cuda/sm_90a") and export
    each to out/NAME_SIZE; write the manifest. :returns: the manifest's entries."""
    import tilelang_core
    from tilelang_core import ops
    from tilelang_core.plugin import get_plugin_manager

    variants.check_only(only, VARIANTS)
    target = get_plugin_manager().parse_target(target)
    build = ops.get("gemm").kernels["tiled"]
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for size in sizes:
        for name, (changes, problem_changes, blocks) in VARIANTS.items():
            if (only and name not in only) or (size != sizes[0] and name not in AT_8192 and not only):
                continue
            start = time.perf_counter()
            problem = problem_of(size, problem_changes)
            config = variant_config(target, problem, changes)
            kernel = tilelang_core.compile(build(problem, config), target=target)  # C passed in: poisoned
            label = f"{name}_{size}"
            kernel.export(out / label)
            if blocks:
                probe(kernel, out / label, blocks, target.arch)
            binary = (out / label / kernel.meta.binary_name).read_bytes()
            entry = {"name": label, "variant": name, "size": size, "changes": changes, "problem": problem,
                     "config": {k: v for k, v in config.items() if k.startswith("fma_") and k != "fma_warps"},
                     "threads": kernel.meta.block[0], "grid": list(kernel.meta.grid),
                     "shared_memory": kernel.meta.shared_memory,
                     "probe_blocks_per_sm": blocks, "sass": sass_summary(binary) if target.kind == "cuda" else {}}
            entries.append(entry)
            sass = entry["sass"]
            print(f"exported {label}: {entry['threads']} threads, {entry['shared_memory'] // 1024} KB shared, "
                  f"{sass.get('registers')} registers, loop {sass.get('loop')} in {time.perf_counter() - start:.1f} s",
                  flush=True)
    variants.write_manifest(out, {"target": str(target), "variants": entries})
    variants.report_size(out, len(entries))
    return entries


# ---------------------------------------------------------------------------- run


def _inputs(torch, entry: dict, generator):
    """A and B as the kernel takes them ((K, M) for trans_a, (N, K) for trans_b), and as
    (M, K) and (K, N) views for torch."""
    n, ta, tb = entry["size"], entry["problem"]["trans_a"], entry["problem"]["trans_b"]
    a_in = torch.randn(n, n, device=DEVICE, generator=generator)
    b_in = torch.randn(n, n, device=DEVICE, generator=generator)
    return a_in, b_in, (a_in.t() if ta else a_in), (b_in.t() if tb else b_in)


def check(torch, kernel, entry: dict, generator) -> tuple[bool, float]:
    """One call on fresh inputs with C poisoned: (every element within the float32 bound of the
    float64 product, the worst error / bound)."""
    n = entry["size"]
    a_in, b_in, a, b = _inputs(torch, entry, generator)
    c = torch.full((n, n), float("nan"), device=DEVICE)
    kernel(a_in.view(1, n, n), b_in.view(1, n, n), torch.zeros(1, device=DEVICE), c.view(1, n, n))
    variants.sync(torch, DEVICE)
    a64, b64 = a.double(), b.double()
    bound = 2.0 * (n + 2) * 2.0 ** -24 * (a64.abs() @ b64.abs())
    worst = float(((c.double() - a64 @ b64).abs() / bound).max())
    return bool(torch.isfinite(c).all()) and worst <= 1.0, worst


def run(root: Path, rounds: int = ROUNDS, only: list[str] | None = None) -> int:
    """Check and time every variant exported to `root`. :returns: the exit status."""
    torch, manifest = variants.begin(root, DEVICE)
    if torch is None:
        return 2
    if DEVICE == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False  # cuBLAS SGEMM: float32 products, as ours
        torch.set_float32_matmul_precision("highest")
    time_one = variants.timer(DEVICE, lambda fn: _time(torch, fn))
    generator = torch.Generator(device=DEVICE).manual_seed(0)
    ok, rows = True, []
    for entry, kernel in variants.exports(root, manifest["variants"], only, key="variant"):
        n = entry["size"]
        good, worst = check(torch, kernel, entry, generator)
        ok &= good
        a_in, b_in, a, b = _inputs(torch, entry, generator)
        bias = torch.zeros(1, device=DEVICE)
        c, c_ref = torch.empty(n, n, device=DEVICE), torch.empty(n, n, device=DEVICE)
        fns = {"ours": lambda: kernel(a_in.view(1, n, n), b_in.view(1, n, n), bias, c.view(1, n, n)),
               "cublas": lambda: torch.matmul(a, b, out=c_ref)}
        med, paired = variants.alternate(fns, rounds, time_one, "cublas")
        flops = 2.0 * n ** 3
        row = {"entry": entry, "ours_ms": med["ours"], "cublas_ms": med["cublas"], "ratio": paired,
               "tflops": flops / med["ours"] / 1e9, "cublas_tflops": flops / med["cublas"] / 1e9, "worst": worst,
               "ok": good}
        rows.append(row)
        print(f"{entry['name']:<22} ours {row['ours_ms']:.3f} ms {row['tflops']:5.1f} TFLOP/s  cuBLAS "
              f"{row['cublas_ms']:.3f} ms {row['cublas_tflops']:5.1f}  cuBLAS ms / ours ms {paired:.3f}  err/bound "
              f"{worst:.2f} {'ok' if good else 'MISMATCH'}", flush=True)
        del a_in, b_in, a, b, c, c_ref, fns
    table = []
    for r in rows:
        e = r["entry"]
        changes = "the config before" if e["variant"] == "before" else variants.describe(e["changes"])
        if e["problem"]["trans_a"]:
            changes += " A as (K, M)"
        if e["problem"]["trans_b"]:
            changes += " B as (N, K)"
        if e["probe_blocks_per_sm"]:
            changes += f" (probe: __launch_bounds__(T, {e['probe_blocks_per_sm']}))"
        loop = e["sass"].get("loop") or {}
        mix = f"{loop.get('FFMA')} / {loop.get('LDS.128')} / {loop.get('instructions')}" if loop else "-"
        table.append([e["variant"], e["size"], changes, e["threads"], e["shared_memory"] // 1024,
                      e["sass"].get("registers", "-"), mix, f"{r['tflops']:.1f}", f"{r['cublas_tflops']:.1f}",
                      f"**{r['ratio']:.2f}**", f"{r['worst']:.2f}{'' if r['ok'] else ' MISMATCH'}"])
    variants.print_table(["variant", "size", "changes", "threads", "shared KB", "registers",
                          "loop FFMA / LDS.128 / instructions", "ours TFLOP/s", "cuBLAS TFLOP/s",
                          "cuBLAS ms / ours ms (paired)", "err / bound"], table)
    for size in sorted({r["entry"]["size"] for r in rows}):
        good = [r for r in rows if r["entry"]["size"] == size and r["ok"]
                and not (r["entry"]["problem"]["trans_a"] or r["entry"]["problem"]["trans_b"])]
        if good:
            best = max(good, key=lambda r: r["ratio"])
            print(f"best at {size}^3: {best['entry']['variant']} {best['ratio']:.2f}x cuBLAS "
                  f"(config {best['entry']['config']})")
    print(variants.device_line(torch, DEVICE, "floor 0.9x cuBLAS SGEMM"))
    return 0 if ok else 1


def main(argv=None) -> int:
    return variants.main(__doc__, VARIANTS, export, run, argv, rounds=ROUNDS)


if __name__ == "__main__":
    sys.exit(main())
