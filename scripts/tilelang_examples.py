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
import datetime
import json
import os
import platform
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


def _error_line(output: str) -> str:
    """The line that says why a program failed: the last exception line of its traceback, or
    the last non-empty line."""
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        head = line.split(":", 1)[0].strip()
        if head.endswith(("Error", "Exception", "Exit", "Interrupt")) or head == "AssertionError":
            return line.strip()[:400]
    return lines[-1].strip()[:400] if lines else ""


def run_one(examples: Path, rel: str, timeout: float, runner: list[str]) -> dict:
    path = examples / rel
    start = time.perf_counter()
    try:
        done = subprocess.run([*runner, path.name], cwd=path.parent, capture_output=True,
                              text=True, timeout=timeout, env=os.environ.copy())
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return {"example": rel, "outcome": "timeout", "status": None,
                "seconds": round(time.perf_counter() - start, 1),
                "error": f"no result within {timeout:.0f} s", "tail": out[-3000:]}
    output = done.stdout + done.stderr
    return {"example": rel, "outcome": "pass" if done.returncode == 0 else "fail",
            "status": done.returncode, "seconds": round(time.perf_counter() - start, 1),
            "error": "" if done.returncode == 0 else _error_line(output),
            "tail": output[-3000:]}


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
    chosen = args.only or EXAMPLES
    unknown = [rel for rel in chosen if not (args.examples / rel).is_file()]
    if unknown:
        parser.error(f"not found under {args.examples}: {', '.join(unknown)}")
    runner = [sys.executable, "-m", "tilelang_core.compat.run"]
    records = []
    for rel in chosen:
        record = run_one(args.examples, rel, args.timeout, runner)
        records.append(record)
        print(f"{record['outcome']:8s} {record['seconds']:7.1f}s  {rel}  {record['error']}",
              flush=True)
        if args.json:  # written after each example: a run cut short keeps what it saw
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({
                "date": datetime.date.today().isoformat(), "device": _device(),
                "tilelang_revision": args.revision, "records": records}, indent=1))
    passed = sum(r["outcome"] == "pass" for r in records)
    print(f"{passed} of {len(records)} ran and passed their own checks")
    return 0 if passed == len(records) else 1


if __name__ == "__main__":
    sys.exit(main())
