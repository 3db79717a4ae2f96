"""Run the kernels `export_programs.py` exported, on a GPU, without TVM; compare every element.

    python tests/cuda/run_exported.py OUT_DIR [--only NAME ...]

Needs torch (CUDA), cuda-python, numpy, pluggy, rich, filelock and this repository (found
from this file's location, or on PYTHONPATH); TVM is blocked from importing, to prove the
runtime half does without it. Each program folder is loaded with `tilelang_core.load`, its
inputs become torch CUDA tensors, outputs passed in are poisoned with NaN (or the integer
dtype's minimum) first, and every element of every checked output is compared with the
float64 reference (|out - ref| <= atol + rtol |ref|, tolerances by dtype from case.json).

Cases run in child processes, several per child; a kernel that faults takes its child's
CUDA context with it, so the parent marks that case failed and goes on in a fresh child.
Cases that check printed output or an expected device-side failure run alone.

Exit status: 0 every case passed; 1 a case failed (or an export did not load); 2 no GPU
here (every export was loaded first, so the load path is still checked).
"""
from __future__ import annotations

import sys

sys.modules["tvm"] = None  # the runtime half must not need the compiler

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

__test__ = False

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
for _path in (HERE, REPO, REPO / "backends" / "cuda"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import numpy as np  # noqa: E402

from export_programs import compare  # noqa: E402  (TVM-free: numpy only at import)

CHILD_TIMEOUT_S = 600


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


def ensure_cuda_backend() -> None:
    """Register the CUDA backend from this checkout when no installed entry point provides it
    (a bare machine with only the repository on PYTHONPATH)."""
    from tilelang_core.plugin import get_plugin_manager

    manager = get_plugin_manager()
    if "cuda" not in manager.registry.kinds:
        manager.register_module("cuda", "tilelang_cuda.plugin")


def case_dirs(root: Path, only: list[str] | None) -> list[Path]:
    found = sorted(p.parent for p in root.glob("*/case.json"))
    if only:
        found = [p for p in found if p.name in only]
    return found


def load_case(folder: Path):
    import tilelang_core

    case = json.loads((folder / "case.json").read_text())
    return case, tilelang_core.load(folder)


# ---------------------------------------------------------------------------------------------
# Running one case (in a child)
# ---------------------------------------------------------------------------------------------


def _torch_dtype(torch, dtype: str):
    return getattr(torch, dtype)


def _to_device(torch, folder: Path, arg: dict):
    if arg["kind"] == "scalar":
        return arg["value"]
    if arg["kind"] == "output":
        dtype = _torch_dtype(torch, arg["dtype"])
        poison = float("nan") if dtype.is_floating_point else torch.iinfo(dtype).min
        return torch.full(arg["shape"], poison, dtype=dtype, device="cuda")
    array = np.load(folder / arg["file"])
    if arg["dtype"] == "bfloat16":  # stored as uint16 bit patterns
        return torch.from_numpy(array.view(np.int16)).cuda().view(torch.bfloat16)
    return torch.from_numpy(array).cuda()


def _to_host(tensor) -> np.ndarray:
    import torch

    if tensor.dtype in (torch.bfloat16, torch.float16):
        tensor = tensor.float()
    return tensor.cpu().numpy().astype(np.float64)


def run_case(folder: Path) -> dict:
    """Load, run and check one case; returns {"name", "status", "detail", "seconds"}."""
    import torch

    start = time.perf_counter()
    case, kernel = load_case(folder)
    args = [_to_device(torch, folder, a) for a in case["args"]]
    result = kernel(*args)
    torch.cuda.synchronize()
    returned = result if isinstance(result, tuple) else (result,)
    if case["unchecked"]:
        return {"status": "RAN", "detail": f"not compared: {case['unchecked']}"}
    details, passed = [], True
    for check in case["checks"]:
        key = check["output"]
        tensor = args[key] if isinstance(key, int) else returned[int(key[3:])]
        ok, detail = compare(_to_host(tensor), np.load(folder / check["file"]), check["rtol"], check["atol"])
        passed &= ok
        details.append(f"{check['output']}: {detail}" if len(case["checks"]) > 1 or not ok else detail)
    return {"status": "PASS" if passed else "FAIL", "detail": "; ".join(details),
            "seconds": time.perf_counter() - start}


def child_main(results: Path, folders: list[Path]) -> int:
    """Run `folders` in order, appending one JSON line per finished case to `results`."""
    ensure_cuda_backend()
    for folder in folders:
        try:
            record = run_case(folder)
        except Exception as exc:  # noqa: BLE001 - reported per case
            record = {"status": "ERROR", "detail": f"{type(exc).__name__}: {exc}"}
        record["name"] = folder.name
        with results.open("a") as out:
            out.write(json.dumps(record) + "\n")
        sys.stdout.flush()
        if record["status"] == "ERROR":
            return 3  # the context may be gone: the parent runs the rest in a fresh child
    return 0


# ---------------------------------------------------------------------------------------------
# The parent: children, isolation, the table
# ---------------------------------------------------------------------------------------------


def _spawn(folders: list[Path]) -> tuple[list[dict], str, int]:
    with tempfile.TemporaryDirectory(prefix="tl_run_exported_") as tmp:
        results = Path(tmp) / "results.jsonl"
        results.touch()
        command = [sys.executable, str(Path(__file__).resolve()), "--child", str(results), *map(str, folders)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S,
                                  env={**os.environ, "PYTHONUNBUFFERED": "1"})
            output, code = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as exc:
            output, code = f"{exc.stdout or ''}{exc.stderr or ''}\n(timed out after {CHILD_TIMEOUT_S} s)", -1
        records = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    return records, output, code


def run_batch(folders: list[Path]) -> dict[str, dict]:
    """Run plain cases in as few children as faults allow."""
    out: dict[str, dict] = {}
    pending = list(folders)
    while pending:
        records, output, code = _spawn(pending)
        for record in records:
            out[record["name"]] = record
        finished = {r["name"] for r in records}
        pending = [f for f in pending if f.name not in finished]
        if pending and not records:  # the first case took the child down
            tail = " | ".join(output.strip().splitlines()[-3:])
            out[pending[0].name] = {"name": pending[0].name, "status": "FAIL",
                                    "detail": f"child exited with {code}: {tail}"}
            pending = pending[1:]
        elif pending and code == 0:
            raise RuntimeError("a child finished without reporting every case")
    return out


def run_isolated(folder: Path, case: dict) -> dict:
    """A case that checks printed output or an expected failure, alone in a child."""
    records, output, code = _spawn([folder])
    record = records[0] if records else {"status": "ERROR", "detail": f"child exited with {code}"}
    record["name"] = folder.name
    if case.get("expect_error"):
        # the kernel must stop with an error; its printf (flushed by the driver when the
        # context dies) usually shows the message too
        failed = record["status"] == "ERROR"
        shown = case["expect_error"] in output or case["expect_error"] in record.get("detail", "")
        detail = record.get("detail", "")
        record["status"] = "PASS" if failed else "FAIL"
        record["detail"] = (f"failed as expected ({'message shown' if shown else 'message not shown'}): {detail[:120]}"
                            if failed else f"expected a failure, got {record['status']}: {detail[:200]}")
        return record
    missing = [s for s in case.get("stdout", ()) if s not in output]
    if missing and record["status"] == "PASS":
        record["status"] = "FAIL"
        record["detail"] = f"stdout lacks {missing!r}; " + record.get("detail", "")
    return record


def print_table(rows: list[dict]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        for row in rows:
            print(f"{row['status']:5s} {row['name']:40s} {row.get('detail', '')}")
        return
    colors = {"PASS": "green", "RAN": "yellow", "FAIL": "red", "ERROR": "red"}
    table = Table(title="CUDA programs, exported and run")
    for column in ("program", "result", "detail"):
        table.add_column(column)
    for row in rows:
        color = colors.get(row["status"], "white")
        table.add_row(row["name"], f"[{color}]{row['status']}[/{color}]", row.get("detail", ""))
    Console(width=160).print(table)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return child_main(Path(argv[1]), [Path(p) for p in argv[2:]])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--only", nargs="*", help="run only these programs")
    args = parser.parse_args(argv)

    ensure_cuda_backend()
    folders = case_dirs(args.out_dir, args.only)
    if not folders:
        print(f"no exported programs under {args.out_dir} (expected <name>/case.json)")
        return 1
    cases, load_errors = {}, []
    for folder in folders:
        try:
            cases[folder.name] = load_case(folder)[0]
        except Exception as exc:  # noqa: BLE001
            load_errors.append({"name": folder.name, "status": "FAIL", "detail": f"load: {type(exc).__name__}: {exc}"})
    print(f"loaded {len(cases)} of {len(folders)} exports from {args.out_dir}")

    from tilelang_cuda.runtime import device_available

    available, why = device_available()
    if not available:
        for row in load_errors:
            print(f"FAIL {row['name']}: {row['detail']}")
        print(f"no GPU: {why}; nothing was run")
        return 1 if load_errors else 2

    start = time.perf_counter()
    plain = [f for f in folders if f.name in cases and not (cases[f.name]["stdout"] or cases[f.name]["expect_error"])]
    results = run_batch(plain)
    for folder in folders:
        if folder.name in cases and folder not in plain:
            results[folder.name] = run_isolated(folder, cases[folder.name])
    rows = load_errors + [results[f.name] for f in folders if f.name in results]
    rows.sort(key=lambda r: r["name"])
    print_table(rows)
    failed = [r for r in rows if r["status"] in ("FAIL", "ERROR")]
    counts = {s: sum(r["status"] == s for r in rows) for s in ("PASS", "RAN", "FAIL", "ERROR")}
    print(f"{counts['PASS']} passed, {counts['RAN']} ran unchecked, {counts['FAIL'] + counts['ERROR']} failed "
          f"({device_available()[1]}, {time.perf_counter() - start:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
