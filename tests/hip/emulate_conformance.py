"""Run the conformance suite's cases for a HIP target on the host emulation (hip_emulator.py).

    .venv/bin/python tests/hip/emulate_conformance.py --arch gfx942 [-k 'gemm.*'] [--seed N]

Each case is compiled for the arch (clang must accept it), then its generated source runs on
the emulator with the suite's own inputs, references and tolerances. Not a test (a few
minutes per arch): a check of numbers before a real AMD GPU is at hand. Exit status 1 when a
case mismatched or its emulator build failed; cases the arch cannot compile (N/A dtypes) are
listed, not counted.
"""
from __future__ import annotations

import argparse
import fnmatch
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hip_emulator import emulate  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    import tilelang_core
    from tilelang_conformance.case import registry
    from tilelang_conformance.data import compare, numpy_dtype, poison_value
    from tilelang_conformance.runs import make_runs

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="gfx942", choices=("gfx90a", "gfx942"))
    parser.add_argument("-k", action="append", default=[], help="glob over case names")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args(argv)
    target = tilelang_core.get_plugin_manager().parse_target(f"hip/{args.arch}")
    workdir = Path(tempfile.mkdtemp(prefix="tilelang-hip-emu-"))
    counts = {"pass": 0, "fail": 0, "not compiled": 0}
    for name, case in sorted(registry().items()):
        if args.k and not any(fnmatch.fnmatchcase(name, p) for p in args.k):
            continue
        try:
            spec = case.spec(target)
            if spec.raises is not None:
                continue
            program = spec.program() if callable(spec.program) and not hasattr(spec.program, "params") \
                else spec.program
            kernel = tilelang_core.compile(program, target=target)
        except Exception as exc:  # noqa: BLE001 - N/A dtypes, capability errors: listed
            counts["not compiled"] += 1
            print(f"-    {name}: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
            continue
        problems = []
        try:
            emulated = emulate(kernel, workdir)
            for run in make_runs(spec, args.seed):
                arrays = [a.value if a.kind == "scalar" else
                          np.full(a.shape, poison_value(a.dtype), numpy_dtype(a.dtype)) if a.value is None else
                          np.ascontiguousarray(np.asarray(a.value).astype(numpy_dtype(a.dtype)))
                          for a in run.args]
                emulated(*arrays)
                for a, array in zip(run.args, arrays):
                    if a.kind == "tensor" and a.name in run.expected:
                        bad = compare(a.name, array.astype(np.float64), run.expected[a.name], a.dtype,
                                      run.tolerance[a.name], poison_value(a.dtype))
                        if bad is not None:
                            problems.append(f"{run.binding}: {bad}")
        except Exception as exc:  # noqa: BLE001 - an emulator build failure is a finding
            problems.append(f"{type(exc).__name__}: {exc}")
        counts["fail" if problems else "pass"] += 1
        print(f"{'FAIL' if problems else 'ok  '} {name}" + "".join(f"\n       {p}" for p in problems), flush=True)
    print(", ".join(f"{v} {k}" for k, v in counts.items()))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
