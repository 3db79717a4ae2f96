"""Run TileLang's own example programs, unchanged, on tilelang-core, and record what happened.

    python scripts/tilelang_examples.py --examples PATH/TO/tilelang/examples --json out.json
    python scripts/tilelang_examples.py --examples ... --only gemm/example_gemm.py quickstart.py
    python scripts/tilelang_examples.py --merge part1.json part2.json --json all.json

Each example runs in its own process through `tilelang run` (so `import tilelang` resolves to
tilelang-core for that process only), from its own folder, with a time limit. An example passes
when its process exits with status 0: every listed example checks its own results (asserts,
`torch.testing.assert_close`, `profiler.assert_allclose`) and fails on a mismatch. The JSON
holds, per example: outcome (pass / fail / timeout), exit status, seconds, and the last line of
the error, so `scripts/compat_doc.py` can print the table with its date.

The examples are TileLang's (tile-ai/tilelang, `examples/`): test material read from a checkout,
never stored in this repository.
"""
from __future__ import annotations

import argparse
import ast
import concurrent.futures
import datetime
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

# The acceptance list of the compatibility issue, in its order.
EXAMPLES = [
    "quickstart.py",
    "gemm/example_gemm.py",
    "gemm/example_gemm_persistent.py",
    "gemm/example_gemm_intrinsics.py",
    "elementwise/example_elementwise_add.py",
    "norm/rms_norm.py",
    "norm/layernorm.py",
    "online_softmax/online_softmax.py",
    "flash_attention/example_mha_fwd_bhsd.py",
    "flash_attention/example_mha_fwd_bshd.py",
    "flash_attention/example_gqa_fwd_bshd.py",
    "flash_attention/example_mha_bwd_bhsd.py",
    "flash_decoding/example_gqa_decode.py",
    "flash_decoding/example_mha_inference.py",
    "gemv/example_gemv.py",
    "cast/example_per_token_cast_to_fp8.py",
    "cast/example_group_per_split_token_cast_to_fp8.py",
    "convolution/example_convolution.py",
    "gemm_splitk/example_tilelang_gemm_splitk.py",
    "gemm_splitk/example_tilelang_gemm_splitk_vectorize_atomicadd.py",
    "gemm_streamk/example_tilelang_gemm_streamk.py",
    "dynamic_shape/example_dynamic.py",
    "deepseek_mla/example_mla_decode.py",
    "linear_attention/example_retention_fwd.py",
    "linear_attention/example_mamba_chunk_state.py",
    "gemm_fp8/example_tilelang_gemm_fp8.py",
    "topk/example_topk.py",
    "hadamard_transform/example_hadamard.py",
    "grouped_gemm/example_grouped_gemm_fwd.py",
    "warp_specialize/example_warp_specialize_gemm_copy_1_gemm_0.py",
    "blocksparse_gemm/example_blocksparse_gemm.py",
    "fusedmoe/example_fusedmoe_tilelang.py",
    "dequantize_gemm/example_dequant_gemv_fp16xint4.py",
]


# Folders and file names of examples written for hardware other than Hopper and older NVIDIA
# GPUs (Blackwell's tcgen05/TMEM and block-scaled MMA, the RTX 50 series' sm_120, AMD's
# CDNA), matched against the path's parts and its file name.
OTHER_HARDWARE = (
    (re.compile(r"(^|/)amd(/|$)|_amd(_|\.|$)|cdna|aiter"), "AMD (ROCm) only"),
    (re.compile(r"sm100|tcgen05|tcgen5"), "Blackwell (sm_100) only"),
    (re.compile(r"sm120"), "RTX 50 series (sm_120) only"),
)

# Names only Blackwell has (tensor memory, its MMA): a script using them targets sm_100
# wherever it lives.
BLACKWELL_NAMES = re.compile(r"\bT\.alloc_tmem\b|\btcgen05|\btcgen5mma")

# Python packages the lent GPU machine's image holds besides the standard library (its
# KINDS.md list), under their import names; an example importing anything else is left out
# with that package named.
IMAGE_PACKAGES = {
    "torch", "numpy", "triton", "einops", "scipy", "pandas", "matplotlib", "transformers",
    "safetensors", "tqdm", "yaml", "pytest", "tabulate", "cuda", "cupy", "ml_dtypes", "jax",
    "huggingface_hub", "tokenizers", "sentencepiece", "accelerate", "psutil", "packaging",
    "requests", "sympy", "networkx", "PIL", "seaborn", "rich", "typer", "click", "filelock",
    "jinja2", "pluggy", "cloudpickle", "tilelang", "tvm", "tvm_ffi",
}


def _imports(source: str) -> set[str]:
    """Top-level names of the modules a file imports (absolute imports only), less those
    imported inside a `try` (optional: the example runs without them) or a function (needed
    only if it is called; a run that calls it fails with the module's name)."""
    tree = ast.parse(source)
    optional = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try) for s in t.body for n in ast.walk(s)}
    optional |= {id(n) for t in ast.walk(tree) if isinstance(t, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for n in ast.walk(t)}
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _needed_optional_imports(source: str) -> set[str]:
    """Packages a file imports inside a `try` (so the import cannot fail it) but whose imported
    names it uses elsewhere anyway (TileLang's gdn examples: `try: from fla... import f` and
    then `f(...)` to compute the reference): without the package such a file fails."""
    tree = ast.parse(source)
    imported: dict[str, str] = {}  # name bound -> top-level package
    inside: set[int] = set()
    for t in ast.walk(tree):
        if isinstance(t, ast.Try):
            for stmt in t.body:
                for node in ast.walk(stmt):
                    inside.add(id(node))
                    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                        imported.update({(a.asname or a.name): node.module.split(".")[0] for a in node.names})
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in inside}
    return {package for name, package in imported.items() if name in used}


def _has_main_guard(source: str) -> bool:
    return re.search(r"^if\s+__name__\s*==\s*['\"]__main__['\"]", source, re.M) is not None


def discover(examples: Path) -> tuple[list[str], dict[str, str]]:
    """Every example script of the folder, and those left out with the reason.

    A script is a `.py` file that imports `tilelang` and either has a `__main__` guard or is
    imported by no other example (it runs at its top level, as `quickstart.py` does); pytest
    modules (`test_*.py`, `conftest.py`) are TileLang's test suite, not examples. Left out:
    scripts for other hardware (OTHER_HARDWARE) and scripts that import a package the GPU
    machine's image lacks (IMAGE_PACKAGES), each with its reason."""
    files = sorted(p.relative_to(examples).as_posix() for p in examples.rglob("*.py"))
    sources = {rel: (examples / rel).read_text(errors="replace") for rel in files}
    stdlib = set(getattr(sys, "stdlib_module_names", ()))
    imported_by_others: set[str] = set()
    for rel, src in sources.items():
        if Path(rel).name.startswith("test_"):
            continue
        try:
            imported_by_others.update(_imports(src))
        except SyntaxError:
            pass
    # modules the examples define (they reach each other's folders through sys.path)
    local = {Path(rel).stem for rel in files} | {p.name for p in examples.rglob("*") if p.is_dir()}
    run: list[str] = []
    left_out: dict[str, str] = {}
    for rel, src in sources.items():
        name = Path(rel).name
        if name.startswith("test_") or name == "conftest.py" or name == "__init__.py":
            continue
        try:
            mods = _imports(src)
        except SyntaxError as exc:
            left_out[rel] = f"not Python this interpreter parses ({exc.msg})"
            continue
        if "tilelang" not in mods:
            continue
        if not _has_main_guard(src) and Path(rel).stem in imported_by_others:
            continue  # a helper module of other examples
        reason = next((why for pattern, why in OTHER_HARDWARE if pattern.search(rel)), None)
        if reason is None and BLACKWELL_NAMES.search(src):
            reason = "Blackwell (sm_100) only: it uses tensor memory (T.alloc_tmem) or tcgen05"
        if reason is None:
            missing = sorted(m for m in mods | _needed_optional_imports(src) if m not in stdlib
                             and m not in IMAGE_PACKAGES and m not in local and m != "__future__")
            if missing:
                reason = f"needs {', '.join(missing)}, absent from the GPU machine's image"
            broken = sorted(m for m in mods if m.startswith("example_") and m not in local)
            if broken:
                reason = f"imports {', '.join(broken)}, which no file of the examples folder defines"
        if reason is None:
            run.append(rel)
        else:
            left_out[rel] = reason
    return run, left_out


def _error_line(output: str) -> str:
    """The line that says why a program failed: the last exception line of its traceback, or
    the last non-empty line."""
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        head = line.split(":", 1)[0].strip()
        if head.endswith(("Error", "Exception", "Exit", "Interrupt")) or head == "AssertionError":
            return line.strip()[:400]
    return lines[-1].strip()[:400] if lines else ""


# Examples written to fail, with the error their own text says they raise: passing means
# failing with it. (AutoDD's input: a program with a deliberate T.gemm shape bug.)
EXPECTED_ERRORS = {
    "autodd/tilelang_buggy.py": re.compile(r"T\.gemm.*K", re.S),
}
_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([A-Za-z0-9_]+)[.']")


def classify(record: dict, output: str) -> dict:
    """A failure that is a package missing from the machine (imported where the static scan
    could not see it) is `left out` with that reason, as the scan would have done; an example
    written to fail passes when it fails with its documented error."""
    expected = EXPECTED_ERRORS.get(record["example"])
    if expected is not None:
        ok = record["status"] not in (0, None) and expected.search(output) is not None
        return {**record, "outcome": "pass" if ok else "fail",
                "error": "" if ok else f"expected an error matching {expected.pattern!r}: {record['error']}"}
    missing = _MISSING_MODULE.search(record["error"] or "")
    if record["outcome"] == "fail" and missing and missing.group(1) not in ("tilelang", "tilelang_core", "tvm") \
            and not missing.group(1).startswith("tilelang_"):
        return {**record, "outcome": "left out",
                "error": f"needs {missing.group(1)}, absent from the GPU machine's image"}
    return record


def _stack_dump(output: str) -> str:
    """What an example printed before it was stopped, and where each thread was (faulthandler's
    dump, without its list of extension modules)."""
    start = output.find("Fatal Python error: Aborted")
    if start < 0:
        return output[-3000:]
    end = output.find("\nExtension modules:", start)
    return (output[max(0, start - 1000):start] + output[start:end if end > 0 else None])[-4000:]


def run_one(examples: Path, rel: str, timeout: float, runner: list[str]) -> dict:
    path = examples / rel
    start = time.perf_counter()
    # faulthandler: an example stopped at its time limit (SIGABRT first) prints where it was
    proc = subprocess.Popen([*runner, path.name], cwd=path.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        try:
            output, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
        return {"example": rel, "outcome": "timeout", "status": None,
                "seconds": round(time.perf_counter() - start, 1),
                "error": f"no result within {timeout:.0f} s", "tail": _stack_dump(output or "")}
    return classify({"example": rel, "outcome": "pass" if proc.returncode == 0 else "fail",
                     "status": proc.returncode, "seconds": round(time.perf_counter() - start, 1),
                     "error": "" if proc.returncode == 0 else _error_line(output),
                     "tail": output[-3000:]}, output)


def _contended(record: dict) -> bool:
    """A failure that may be the other examples' doing: a timeout, or device memory taken."""
    return record["outcome"] == "timeout" or "out of memory" in (record["error"] or "").lower()


def _retry_alone(records: list[dict], args, runner: list[str], device: str, left_out: dict) -> list[dict]:
    """Run the contended failures again one at a time (the machine to themselves), within
    `args.retry_alone` seconds; each keeps its last record, marked `retried`."""
    deadline = time.perf_counter() + args.retry_alone
    by_name = {r["example"]: r for r in records}
    for record in sorted((r for r in records if _contended(r)), key=lambda r: r["seconds"]):
        left = deadline - time.perf_counter()
        if left < 30:
            break
        again = {**run_one(args.examples, record["example"], min(args.timeout * 2, left), runner), "retried": True}
        by_name[record["example"]] = again
        print(f"{again['outcome']:8s} {again['seconds']:7.1f}s  {again['example']}  (alone) {again['error']}", flush=True)
        if args.json:
            args.json.write_text(json.dumps({
                "date": datetime.date.today().isoformat(), "device": device, "tilelang_revision": args.revision,
                "left_out": left_out, "records": sorted(by_name.values(), key=lambda r: r["example"])}, indent=1))
    return sorted(by_name.values(), key=lambda r: r["example"])


def _device() -> str:
    try:
        import torch
        if torch.cuda.is_available():
            return torch.cuda.get_device_name()
    except Exception:  # noqa: BLE001 - torch absent or broken: say so in the record
        pass
    return f"no GPU ({platform.machine()})"


def merge(paths: list[Path]) -> dict:
    """One record file from several runs (e.g. split over device calls): the newest record of
    each example, in the acceptance order, each keeping the device it ran on; the file's date
    and device are those of the most records."""
    runs = [json.loads(p.read_text()) for p in paths]
    latest: dict[str, dict] = {}
    for run in runs:
        for record in run.get("records", []):
            latest[record["example"]] = {**record, "device": record.get("device") or run.get("device", "")}
    order = [e for e in EXAMPLES if e in latest] + [e for e in latest if e not in EXAMPLES]
    records = [latest[e] for e in order]

    def most(key: str) -> str:
        values = [r.get(key) or "" for r in records] if key == "device" else [run.get(key, "") for run in runs]
        return max(set(values), key=values.count) if values else ""

    return {"date": max(run.get("date", "") for run in runs), "device": most("device"),
            "tilelang_revision": most("tilelang_revision"), "records": records}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--merge", nargs="+", type=Path, help="combine these record files into --json; run nothing")
    parser.add_argument("--examples", type=Path, help="TileLang's examples/ folder")
    parser.add_argument("--only", nargs="*", help="run these (paths relative to --examples)")
    parser.add_argument("--all", action="store_true",
                        help="every example script of the folder (see discover()), not the acceptance list")
    parser.add_argument("--list", action="store_true", help="print what would run and what is left out; run nothing")
    parser.add_argument("--jobs", type=int, default=1, help="examples run at once")
    parser.add_argument("--shard", default="", help="K/N: run the K-th of N interleaved parts (K from 1)")
    parser.add_argument("--retry-alone", type=float, default=0.0, metavar="SECONDS",
                        help="then run again, one at a time, the examples that timed out or ran out of device "
                             "memory beside the others, for at most this many seconds in all")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per example")
    parser.add_argument("--json", type=Path, help="write the records here")
    parser.add_argument("--revision", default="", help="the TileLang commit the examples are from")
    args = parser.parse_args(argv)
    if args.merge:
        if not args.json:
            parser.error("--merge writes its result to --json")
        merged = merge(args.merge)
        if args.revision:
            merged["tilelang_revision"] = args.revision
        args.json.write_text(json.dumps(merged, indent=1))
        passed = sum(r["outcome"] == "pass" for r in merged["records"])
        print(f"{passed} of {len(merged['records'])} records pass")
        return 0
    if args.examples is None:
        parser.error("--examples is required (TileLang's examples/ folder)")
    left_out: dict[str, str] = {}
    if args.all:
        chosen, left_out = discover(args.examples)
    else:
        chosen = args.only or EXAMPLES
    if args.shard:
        k, n = (int(x) for x in args.shard.split("/"))
        chosen = chosen[k - 1::n]
    if args.list:
        for rel in chosen:
            print(f"run       {rel}")
        for rel, why in sorted(left_out.items()):
            print(f"left out  {rel}  ({why})")
        print(f"{len(chosen)} to run, {len(left_out)} left out")
        return 0
    unknown = [rel for rel in chosen if not (args.examples / rel).is_file()]
    if unknown:
        parser.error(f"not found under {args.examples}: {', '.join(unknown)}")
    runner = [sys.executable, "-m", "tilelang_core.compat.run"]
    records = []
    device = _device()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = [pool.submit(run_one, args.examples, rel, args.timeout, runner) for rel in chosen]
        for future in concurrent.futures.as_completed(futures):
            record = future.result()
            records.append(record)
            print(f"{record['outcome']:8s} {record['seconds']:7.1f}s  {record['example']}  {record['error']}",
                  flush=True)
            if args.json:  # written after each example: a run cut short keeps what it saw
                args.json.parent.mkdir(parents=True, exist_ok=True)
                args.json.write_text(json.dumps({
                    "date": datetime.date.today().isoformat(), "device": device,
                    "tilelang_revision": args.revision, "left_out": left_out,
                    "records": sorted(records, key=lambda r: r["example"])}, indent=1))
    if args.retry_alone > 0:
        records = _retry_alone(records, args, runner, device, left_out)
    ran = [r for r in records if r["outcome"] != "left out"]
    passed = sum(r["outcome"] == "pass" for r in ran)
    print(f"{passed} of {len(ran)} ran and passed their own checks ({len(records) - len(ran)} more left out "
          f"at run time, {len(left_out)} before)")
    return 0 if passed == len(ran) else 1


if __name__ == "__main__":
    sys.exit(main())
