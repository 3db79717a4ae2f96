"""The shared half of the variants benches (`decode_variants.py`, `gemm_class_variants.py`,
`sgemm_variants.py`, `gemm_tf32.py`). Each bench compiles kernel variants on a machine with the
compiler and exports them with a manifest (`--export DIR`); on the GPU machine (torch +
cuda-python, no TVM) it loads each export, checks every element against a reference in higher
precision with the outputs poisoned first, times it beside torch in alternating rounds and
prints a table (`--run DIR`). A bench keeps its variant data, problem builders, references and
checks; this module holds the rest, one way each:

- `main`: the command line (`--export DIR`, `--run DIR`, `--arch`, `--only a,b`: the variants
  to export and to run, `--rounds`, and `--warmup`/`--rep` where the bench's timer takes them);
  `--run` keeps TVM out of the process. A bench with options of its own builds on `parser` and
  `dispatch`. `check_only` refuses `--only` names the bench does not have.
- `write_manifest`, `read_manifest`, `report_size`: DIR/manifest.json and the export's size.
- `begin`, `exports`, `timer`: the start of a run (`torch_for`: torch for "cuda", the CUDA
  backend of this checkout registered where no installed entry point provides it, or "cpu", a
  smoke test away from the GPU; the manifest), each export loaded by `load`
  (`tilelang_core.load`: the backend's runtime, no compiler), the timer of one call.
- `check`: one call with its output and workspaces poisoned first, every element compared
  with a reference (`compare`); `allocate`, `poison_freed`, `sync`: tensors of (shape, dtype
  name) lists, workspaces that start as NaN, the device barrier.
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


def main(doc: str, names, export: Callable, run: Callable, argv=None, *, rounds: int = 5,
         warmup: int | None = None, rep: int | None = None, only_help: str = "variants") -> int:
    """The command line of a variants bench whose `export(out, target, only)` compiles for
    "cuda/ARCH" and whose `run(out, rounds, only, [warmup, rep])` checks and times: `parser`'s
    options, handed over by `dispatch`. :returns: the exit status."""
    def run_exports(args):
        timing = (args.warmup, args.rep) if warmup is not None else ()
        return run(args.run, args.rounds, args.only, *timing)

    return dispatch(parser(doc, names, rounds=rounds, warmup=warmup, rep=rep, only_help=only_help),
                    lambda args: export(args.export, f"cuda/{args.arch}", args.only), run_exports, argv)


def parser(doc: str, names, *, rounds: int = 5, warmup: int | None = None, rep: int | None = None,
           only_help: str = "variants") -> argparse.ArgumentParser:
    """The options every variants bench takes: --export DIR, --run DIR, --arch (default
    sm_90a), --only (comma-separated, `only_help` says what it picks, among `names` where
    given), --rounds (default `rounds`), and --warmup/--rep with these defaults where `warmup`
    is given. A bench with options of its own adds them to what this returns and hands it to
    `dispatch`."""
    options = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--export", type=Path, metavar="DIR", help="compile and export the variants to DIR")
    options.add_argument("--run", type=Path, metavar="DIR", help="run the variants exported to DIR on the GPU")
    options.add_argument("--arch", default="sm_90a", help="CUDA arch to compile for (default sm_90a)")
    known = f" (of {', '.join(names)})" if names else ""
    options.add_argument("--only", default="", help=f"comma-separated {only_help}{known}")
    if warmup is not None:
        options.add_argument("--warmup", type=int, default=warmup)
        options.add_argument("--rep", type=int, default=rep)
    options.add_argument("--rounds", type=int, default=rounds, help=f"alternating rounds (default {rounds})")
    return options


def dispatch(parser: argparse.ArgumentParser, export: Callable, run: Callable, argv=None) -> int:
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


def begin(out: Path, device: str) -> tuple:
    """The start of a run over the exports in `out` on `device`: (torch, the manifest), torch's
    generator seeded with 0; (None, None), after saying so, without a CUDA device."""
    torch = torch_for(device)
    if torch is None:
        return None, None
    manifest = read_manifest(out)
    torch.manual_seed(0)
    return torch, manifest


def exports(out: Path, entries: list[dict], only: list[str] | None = None, key: str = "name"):
    """(entry, the kernel loaded from out/NAME) for each manifest entry in turn; with `only`,
    for those whose `key` is one of these names."""
    for entry in entries:
        if not only or entry[key] in only:
            yield entry, load(out / entry["name"])


def timer(device: str, cuda_timer: Callable) -> Callable:
    """The timer of one call (ms) on `device`: `cuda_timer` (CUDA events) on "cuda", else
    `wall_clock_ms`."""
    return cuda_timer if device == "cuda" else wall_clock_ms


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


def check(torch, call: Callable, out, ref, workspaces, device: str, atol: float, rtol: float) -> tuple[bool, float]:
    """One checked call: `out` and the workspaces the call allocates ((shape, dtype name)
    pairs) poisoned with NaN first, then `call()`, then `compare` with `ref`."""
    out.fill_(float("nan"))
    poison_freed(torch, workspaces, device)
    call()
    sync(torch, device)
    return compare(torch, out, ref, atol, rtol)


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
