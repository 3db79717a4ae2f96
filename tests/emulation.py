"""Running the conformance suite's cases on a host emulation of a GPU (tests/hip,
tests/metal): each case compiles for the target, then its generated source runs on the
emulator with the suite's own inputs, references and tolerances."""
from __future__ import annotations

import fnmatch
from typing import Callable

import numpy as np


def run_cases(target, emulate: Callable, patterns: list[str], seed: int) -> dict[str, int]:
    """Evaluate every case matching `patterns` (all when empty) on `emulate(kernel)`; print one
    line per case; return the counts of pass, fail and not compiled (N/A dtypes, capability
    errors: listed, not counted as failures)."""
    import tilelang_core
    from tilelang_conformance.case import registry
    from tilelang_conformance.data import compare, numpy_dtype, poison_value
    from tilelang_conformance.runs import make_runs

    counts = {"pass": 0, "fail": 0, "not compiled": 0}
    for name, case in sorted(registry().items()):
        if patterns and not any(fnmatch.fnmatchcase(name, p) for p in patterns):
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
            emulated = emulate(kernel)
            for run in make_runs(spec, seed):
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
    return counts
