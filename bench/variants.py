"""The shared half of the variants benches (`decode_variants.py`, `gemm_class_variants.py`,
`sgemm_variants.py`, `gemm_tf32.py`). Each bench compiles kernel variants on a machine with the
compiler and exports them with a manifest (`--export DIR`); on the GPU machine (torch +
cuda-python, no TVM) it loads each export, checks every element against a reference in higher
precision with the outputs poisoned first, times it beside torch in alternating rounds and
prints a table (`--run DIR`). A bench keeps its variant data, problem builders, references and
checks; this module holds the rest, one way each:

- `parser` and `main`: the command line (`--export DIR`, `--run DIR`, `--arch`, `--only a,b`,
  `--rounds`, and `--warmup`/`--rep` where the bench's timer takes them); `--run` keeps TVM out
  of the process. `check_only` refuses `--only` names the bench does not have.
- `write_manifest`, `read_manifest`, `report_size`: DIR/manifest.json and the export's size.
- `torch_for` and `load`: torch for a run on "cuda" (the CUDA backend of this checkout
  registered where no installed entry point provides it) or "cpu" (a smoke test away from the
  GPU), and an export loaded by `tilelang_core.load` (the backend's runtime, no compiler).
- `allocate`, `poison_freed`, `sync`, `compare`: tensors of (shape, dtype name) lists,
  workspaces that start as NaN, the device barrier, the element check against a reference.
- `alternate`: every timed call once per round for `rounds` rounds; the median time of each
  and the median of the per-round ratios reference / ours. `wall_clock_ms` is the timer of a
  run on the CPU (CUDA events need the GPU).
- `print_table`, `describe`, `device_line`: the markdown table of the results.

Importing this module adds the repository, the CUDA backend's source folder and bench/ to
`sys.path` (a bare GPU machine has only the checkout) and imports neither torch nor TVM.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Callable

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
for _path in (REPO, REPO / "backends" / "cuda", BENCH):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

MANIFEST = "manifest.json"


# ---------------------------------------------------------------------------- command line


def parser(doc: str, names, *, rounds: int = 5, warmup: int | None = None, rep: int | None = None,
           only_help: str = "variants to export") -> argparse.ArgumentParser:
    """The bench's command line: --export DIR, --run DIR, --arch (default sm_90a), --only
    (comma-separated, `only_help` says what it picks, among `names` where given), --rounds (default
    `rounds`), and --warmup/--rep with these defaults where `warmup` is given. A bench adds its
    own options to what this returns, then hands it to `main`."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export", type=Path, metavar="DIR", help="compile and export the variants to DIR")
    parser.add_argument("--run", type=Path, metavar="DIR", help="run the variants exported to DIR on the GPU")
    parser.add_argument("--arch", default="sm_90a", help="CUDA arch to compile for (default sm_90a)")
    known = f" (of {', '.join(names)})" if names else ""
    parser.add_argument("--only", default="", help=f"comma-separated {only_help}{known}")
    if warmup is not None:
        parser.add_argument("--warmup", type=int, default=warmup)
        parser.add_argument("--rep", type=int, default=rep)
    parser.add_argument("--rounds", type=int, default=rounds, help=f"alternating rounds (default {rounds})")
    return parser


def main(parser: argparse.ArgumentParser, export: Callable, run: Callable, argv=None) -> int:
    """Parse `argv` (`args.only` becomes the list of --only names, or None); call `export(args)`
    for --export DIR, then `run(args)` for --run DIR with TVM kept out of the process (the
    runtime half must not need the compiler). :returns: the run's exit status, else 0."""
    args = parser.parse_args(argv)
    if not (args.export or args.run):
        parser.error("give --export DIR and/or --run DIR")
    args.only = [name for name in args.only.split(",") if name] or None
    if args.export:
        export(args)
    if args.run:
        sys.modules["tvm"] = None
        return run(args)
    return 0


def check_only(only: list[str] | None, names) -> None:
    """Refuse (SystemExit) names in `only` that are not among the bench's `names`."""
    unknown = sorted(set(only or ()) - set(names))
    if unknown:
        raise SystemExit(f"--only names unknown variants {unknown}; known: {', '.join(names)}")


# ---------------------------------------------------------------------------- manifest


def write_manifest(out: Path, manifest: dict) -> None:
    """Write `manifest` (JSON) to out/manifest.json, beside the exports it lists."""
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))


def read_manifest(out: Path) -> dict:
    """The manifest an export wrote to `out`; SystemExit saying what to do where there is none."""
    path = out / MANIFEST
    if not path.is_file():
        raise SystemExit(f"--run {out}: no {MANIFEST} there; export the variants first with --export {out}")
    return json.loads(path.read_text())


def report_size(out: Path, count: int) -> None:
    """Print how many kernels were exported to `out` and the bytes of all it holds."""
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {count} kernels to {out} ({total / 1e6:.1f} MB)")


# ---------------------------------------------------------------------------- run


def torch_for(device: str):
    """torch for a run on `device`. For "cuda": None (after saying so) without a CUDA device;
    else the CUDA backend is registered from this checkout where no installed entry point
    provides it. "cpu" is a smoke test of a bench away from the GPU."""
    import torch

    if device != "cuda":
        return torch
    if not torch.cuda.is_available():
        print("no CUDA device here")
        return None
    from tilelang_core.plugin import get_plugin_manager

    manager = get_plugin_manager()
    if "cuda" not in manager.registry.kinds:
        manager.register_module("cuda", "tilelang_cuda.plugin")
    return torch


def load(path: Path):
    """The kernel exported to `path` (`tilelang_core.load`: the backend's runtime, no TVM)."""
    import tilelang_core

    return tilelang_core.load(path)


def sync(torch, device: str) -> None:
    """Wait for the device's queued work (nothing to wait for on the CPU)."""
    if device == "cuda":
        torch.cuda.synchronize()


def allocate(torch, shapes, device: str, fill: float | None = None) -> list:
    """Tensors of these (shape, dtype name) pairs (a manifest's "workspaces"), uninitialized or
    filled with `fill`."""
    if fill is None:
        return [torch.empty(shape, dtype=getattr(torch, dtype), device=device) for shape, dtype in shapes]
    return [torch.full(shape, fill, dtype=getattr(torch, dtype), device=device) for shape, dtype in shapes]


def poison_freed(torch, shapes, device: str) -> None:
    """Fill allocator blocks of these (shape, dtype name) sizes with NaN and free them, so the
    workspaces the next call allocates start poisoned."""
    blocks = allocate(torch, shapes, device, float("nan"))
    sync(torch, device)
    del blocks


def compare(torch, out, ref, atol: float, rtol: float) -> tuple[bool, float]:
    """(every element of `out` finite and within atol + rtol |ref| of `ref`, the largest
    absolute error); `ref` is in the higher precision."""
    err = (out.float() - ref).abs()
    good = bool(torch.isfinite(out).all()) and bool((err <= atol + rtol * ref.abs()).all())
    return good, float(err.max())


def median(values) -> float:
    """The middle value (the upper one of an even count)."""
    return sorted(values)[len(values) // 2]


def alternate(fns: dict, rounds: int, time_one: Callable, reference: str) -> tuple[dict, float]:
    """Time each of `fns` (name -> call; one is "ours") once a round, in order, for `rounds`
    rounds, so drift of the clocks or of a shared host falls on each alike. :returns: (name ->
    the median time in ms, the median of the per-round ratios `reference` time / ours)."""
    samples = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].append(time_one(fn))
    ratios = [theirs / ours for ours, theirs in zip(samples["ours"], samples[reference])]
    return {name: median(times) for name, times in samples.items()}, median(ratios)


def wall_clock_ms(fn) -> float:
    """One call of `fn` timed by the host's clock (ms): the timer of a run on the CPU."""
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def describe(changes: dict) -> str:
    """A variant's config changes as `key=value, ...`, or "-" for none."""
    return ", ".join(f"{k}={v}" for k, v in changes.items()) or "-"


def print_table(header: list[str], rows: list[list]) -> None:
    """Print a markdown table, after a blank line: `header` and one line of cells per row."""
    print("\n| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for cells in rows:
        print("| " + " | ".join(str(cell) for cell in cells) + " |")


def device_line(torch, device: str, note: str) -> str:
    """`device: NAME, torch VERSION; note` (the GPU's name on "cuda")."""
    name = torch.cuda.get_device_name() if device == "cuda" else device
    return f"device: {name}, torch {torch.__version__}; {note}"
