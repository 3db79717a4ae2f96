"""float32 GEMM at precision "high" (TF32 tensor cores) on the H100: the gemm operator's own
kernels beside cuBLAS (`torch.matmul` with `torch.backends.cuda.matmul.allow_tf32 = True`),
as ratios. Compile here, run there:

    # on a machine with the compiler (no GPU needed): cubins + launch metadata
    .venv/bin/python bench/gemm_tf32.py --export /tmp/gemm_tf32 [--sizes 4096,8192] [--tiles 256x128x32x4,...]

    # on the GPU machine (torch + cuda-python + numpy; TVM not needed)
    python bench/gemm_tf32.py --run /tmp/gemm_tf32 [--rounds 3] [--only nn-mma,nt]

Exported per size, each a kernel of `tilelang_core.ops.gemm` built from its config table
(`GEMM_TABLE`'s wgmma row) for a float32 problem at precision "high":

- `nn`: C = A @ B with B as (K, N), the plain `a @ b`: wgmma tf32 swapped, C^T = B^T A^T
  with B^T read into registers (the table's transposed tile), and each `--tiles` variant
  (BMxBNxBKxSTAGES, the tile as run: block_M x block_N, block_K in float32 elements);
- `nn-mma`: the same problem on mma.sync TF32 (`tl.disable_wgmma`), what it ran on before;
- `nt`: C = A @ B^T with B as (N, K) (`trans_b=True`), wgmma tf32 with both operands read by
  descriptors.

`--run` loads every kernel with `tilelang_core.load`, poisons C with NaN, and checks every
element against the float64 product of the operands rounded to TF32 (to nearest) within the
bound of tests/ops/cases.py `float32_bound(K, |A| @ |B|, tf32=True)` (which also admits
units that truncate the operands). It then times ours and cuBLAS in alternating rounds (CUDA
events, the median of the per-round ratios). Exit status: 0 when every kernel matched, 1
otherwise, 2 without a GPU.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/: the shared half, variants.py

import variants  # noqa: E402
from gemm import _time_ms  # noqa: E402  (bench/gemm.py: CUDA events, the median of 7 trials of 20 calls)

SIZES = (4096, 8192)
ROUNDS = 3  # alternating rounds of ours and cuBLAS per kernel
DEVICE = "cuda"  # where the inputs live (a CPU smoke test of this script sets "cpu")
# tile variants beside the table's (block_M x block_N x block_K x stages, as run)
TILES = ("128x256x32x4", "256x128x32x3", "256x128x64x2", "128x128x32x4")


# ---------------------------------------------------------------------------- export


def _problem(size: int, trans_b: bool) -> dict:
    return {"batch": 1, "M": size, "N": size, "K": size, "dtype": "float32", "trans_a": False,
            "trans_b": trans_b, "bias": False, "activation": "none"}


def _engine_of(source: str) -> str:
    if "rs_f32_tf32(" in source:
        return "wgmma-swapped"
    if "_f32_tf32(" in source:
        return "wgmma"
    return "mma"


def export(out: Path, arch: str, sizes: tuple, tiles: tuple) -> None:
    import tilelang_core
    from tilelang_core import ops
    from tilelang_core.ops.registry import resolve_config

    target = tilelang_core.plugin.get_plugin_manager().parse_target(f"cuda/{arch}")
    op = ops.get("gemm")
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for size in sizes:
        table, _ = resolve_config(op, target, _problem(size, False))
        builds = [("nn", False, table, None), ("nn-mma", False, table, {"tl.disable_wgmma": True}),
                  ("nt", True, table, None)]
        for tile in tiles:
            bm, bn, bk, stages = (int(x) for x in tile.split("x"))
            # block_K in the table counts 16-bit elements: a float32 tile takes half of it
            config = {**table, "block_M": bm, "block_N": bn, "block_K": 2 * bk, "stages": stages,
                      "tf32_nn_transposed_tile": False}
            builds.append((f"nn-{tile}", False, config, None))
        for label, trans_b, config, pass_configs in builds:
            start = time.perf_counter()
            func = op.kernels[config["kernel"]](_problem(size, trans_b), config)
            kernel = tilelang_core.compile(func, target=target, pass_configs=pass_configs)  # C passed in: poisoned
            name = f"gemm_f32_{label}_{size}"
            kernel.export(out / name)
            source = kernel.get_kernel_source()
            entries.append({"name": name, "label": label, "size": size, "trans_b": trans_b,
                            "engine": _engine_of(source), "block": list(kernel.meta.block),
                            "grid": list(kernel.meta.grid), "shared_memory": kernel.meta.shared_memory})
            print(f"exported {name} ({entries[-1]['engine']}, block {kernel.meta.block}, "
                  f"{kernel.meta.shared_memory // 1024} KB shared) in {time.perf_counter() - start:.1f} s", flush=True)
    variants.write_manifest(out, {"arch": arch, "kernels": entries})
    variants.report_size(out, len(entries))


# ---------------------------------------------------------------------------- run


def _tf32_round(torch, x):
    """float32 rounded to TF32 (10-bit mantissa) to nearest, ties away from zero."""
    bits = x.contiguous().view(torch.int32).to(torch.int64)
    return ((bits + 0x1000) & 0xFFFFE000).to(torch.int32).view(torch.float32)


def _check(torch, a, b_kn, c) -> tuple[bool, float]:
    """Every element of C within the TF32 bound of the float64 product; (ok, worst ratio of
    the error to the bound)."""
    k = a.shape[1]
    ar, br = _tf32_round(torch, a).double(), _tf32_round(torch, b_kn).double()
    want = ar @ br
    bound = (2.0 * (k + 2) * 2.0 ** -24 + 1.01 * 2.0 ** -9) * (ar.abs() @ br.abs())
    err = (c.double() - want).abs()
    worst = float((err / bound).max())
    return bool(torch.isfinite(c).all()) and worst <= 1.0, worst


def run(root: Path, only: list[str] | None = None, rounds: int = ROUNDS) -> int:
    """Check and time every kernel exported to `root` (`only`: those whose name contains one of
    these). :returns: the exit status."""
    torch, manifest = variants.begin(root, DEVICE)
    if torch is None:
        return 2
    if DEVICE == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True  # cuBLAS at TF32: what precision "high" allows
    device = torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE
    print(f"device: {device} (kernels built for {manifest['arch']}), torch {torch.__version__}")
    print(f"{'kernel':<34} {'engine':<14} {'err/bound':>9} {'ours':>8} {'cuBLAS':>8} {'ours/cuBLAS':>11}"
          f"   (TFLOP/s; paired over {rounds} rounds)")
    time_one = variants.timer(DEVICE, lambda fn: _time_ms(torch, fn))
    failures, best = 0, {}
    chosen = [e for e in manifest["kernels"] if not only or any(part in e["name"] for part in only)]
    for entry, kernel in variants.exports(root, chosen):
        n = entry["size"]
        gen = torch.Generator(device=DEVICE).manual_seed(0)
        a = torch.randn(n, n, device=DEVICE, generator=gen)
        b = torch.randn(n, n, device=DEVICE, generator=gen)  # (K, N), or (N, K) for "nt"
        bias = torch.zeros(1, device=DEVICE)
        c = torch.full((n, n), float("nan"), device=DEVICE)  # poisoned: every element must be written
        kernel(a.view(1, n, n), b.view(1, n, n), bias, c.view(1, n, n))
        variants.sync(torch, DEVICE)
        b_kn = b.t() if entry["trans_b"] else b
        ok, worst = _check(torch, a, b_kn, c)
        failures += not ok
        c_ref = torch.empty_like(c)
        fns = {"ours": lambda: kernel(a.view(1, n, n), b.view(1, n, n), bias, c.view(1, n, n)),
               "cublas": lambda: torch.matmul(a, b_kn, out=c_ref)}
        med, paired = variants.alternate(fns, rounds, time_one, "cublas")
        flops = 2.0 * n ** 3
        print(f"{entry['name']:<34} {entry['engine']:<14} {worst:9.2f} {flops / med['ours'] / 1e9:8.1f} "
              f"{flops / med['cublas'] / 1e9:8.1f} {paired:11.2f}{'' if ok else '   WRONG RESULT'}", flush=True)
        key = (n, "nt" if entry["trans_b"] else "nn")
        if ok and paired > best.get(key, ("", 0.0))[1]:
            best[key] = (entry["label"], paired)
    print("\nbest per problem (ours/cuBLAS, paired):")
    for (n, layout), (label, paired) in sorted(best.items()):
        print(f"  float32 {layout} {n}^3: {paired:.2f}x ({label})")
    print("all results within the TF32 bound" if not failures else f"{failures} kernel(s) gave wrong results")
    return 1 if failures else 0


def main(argv=None) -> int:
    parser = variants.parser(__doc__, None, rounds=ROUNDS,
                             only_help="parts of kernel names: run only the kernels whose name contains one")
    parser.add_argument("--sizes", default="4096,8192", help="square problem sizes (default 4096,8192)")
    parser.add_argument("--tiles", default=",".join(TILES),
                        help="tile variants of the nn kernel, BMxBNxBKxSTAGES comma-separated ('' for none)")

    def export_kernels(args):
        export(args.export, args.arch, tuple(int(x) for x in args.sizes.split(",")),
               tuple(t for t in args.tiles.split(",") if t))

    return variants.dispatch(parser, export_kernels, lambda args: run(args.run, args.only, args.rounds), argv)


if __name__ == "__main__":
    sys.exit(main())
