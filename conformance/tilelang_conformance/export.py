"""Compile here, run there: `--export DIR` compiles every case for a target and writes each
kernel (`kernel.export`) with its inputs, seeds and expected outputs; `--from DIR` runs them
on a machine with the device, through the TVM-free runtime.

Layout of DIR: `manifest.json` (target, seed, the pass configs every kernel was compiled with
and the capabilities they switch off, export-side header facts, capability table, claims,
and per case either its result — cases decided at export, such as N/A, bad-input
checks, or a failed compile — or its runs), and `cases/<name>/kernel/` + `data.npz`.
Arrays travel as raw bits (see `data.to_bits`); expected outputs as float64.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .case import Raises, select
from .data import to_bits
from .result import FAIL, NA, PASS, Result, apply_expectation
from .runs import Run, RunArg, RunFailure, execute

__all__ = ["FORMAT", "export_suite", "run_from", "block_tvm"]

FORMAT = "tilelang-conformance-export/1"
MANIFEST = "manifest.json"


def block_tvm() -> bool:
    """Make any import of TVM fail from here on (the `--from` path must not need it).
    Returns False when TVM was already imported in this process (then it cannot be undone)."""
    if "tvm" in sys.modules and sys.modules["tvm"] is not None:
        return False
    sys.modules["tvm"] = None  # type: ignore[assignment]
    return True


# -- export --------------------------------------------------------------------------------


def _save_runs(runs: Sequence[Run], folder: Path) -> list[dict[str, Any]]:
    arrays: dict[str, np.ndarray] = {}
    described = []
    for i, run in enumerate(runs):
        args = []
        for a in run.args:
            item = {"name": a.name, "kind": a.kind, "dtype": a.dtype, "role": a.role, "shape": list(a.shape)}
            if a.kind == "scalar":
                item["value"] = a.value
            elif a.value is not None:
                item["key"] = f"in{i}_{a.name}"
                arrays[item["key"]] = to_bits(a.value, a.dtype)
            args.append(item)
        expected = {}
        for name, value in run.expected.items():
            expected[name] = f"ref{i}_{name}"
            arrays[expected[name]] = value
        raises = None if run.raises is None else {
            "types": list(run.raises.types), "pattern": run.raises.pattern, "stage": run.raises.stage,
            "names_line": run.raises.names_line}
        described.append({"binding": run.binding, "seed": run.seed, "args": args, "expected": expected,
                          "tolerance": {k: list(v) for k, v in run.tolerance.items()},
                          "stdout": run.stdout, "raises": raises})
    np.savez_compressed(folder / "data.npz", **arrays)
    return described


def _export_case(case: Any, target: Any, root: Path, base_seed: int, configs: dict[str, Any]) -> dict[str, Any]:
    """Compile and write one case with the pass configs `configs`; return its manifest entry."""
    from .build import StageError, compile_kernel
    from .evaluate import case_seed, evaluate, not_applicable
    from .runs import make_runs

    entry = {"name": case.name, "feature": case.feature, "needs": list(case.needs),
             "claims": list(case.claims), "isolate": case.isolate, "result": None}
    seed = case_seed(base_seed, case.name)
    spec = None
    if not not_applicable(case, target, "run", configs):
        try:
            spec = case.spec(target)
        except Exception:  # noqa: BLE001 - evaluate() reports it (N/A or a build failure)
            spec = None
    if spec is None or (spec.raises is not None and spec.raises.stage != "call"):
        # decided here, without the device: N/A, a build failure, a bad-input check
        entry["result"] = evaluate(case, target, "compile", base_seed, {}, configs).to_dict()
        return entry
    folder = root / "cases" / case.name
    folder.mkdir(parents=True, exist_ok=True)
    try:
        program = spec.build_program()
        kernel = compile_kernel(program, target, configs)
        runs = make_runs(spec, seed)
    except Exception as exc:  # noqa: BLE001 - recorded as this case's failure
        stage = exc.stage if isinstance(exc, StageError) else "build"
        cause = exc.cause if isinstance(exc, StageError) else exc
        entry["result"] = Result(case.name, case.feature, case.needs, FAIL, "compile", f"{type(cause).__name__}: {cause}",
                                 stage, seed, claims=case.claims).to_dict()
        return entry
    kernel.export(folder / "kernel")
    entry["kernel"] = f"cases/{case.name}/kernel"
    entry["data"] = f"cases/{case.name}/data.npz"
    entry["runs"] = _save_runs(runs, folder)
    return entry


def export_suite(target: Any, directory: str | Path, patterns: Sequence[str] | None = None,
                 seed: int | None = None, on_case: Callable[[str], None] | None = None,
                 pass_configs: Mapping[str, Any] | None = None) -> Path:
    """Compile every selected case for `target` with `pass_configs` and write DIR (see the
    module docstring); `--from DIR` reports the same configs."""
    from .case import registry
    from .configs import switched_off
    from .probes import cases_for, claims_for
    from .suite import header_facts, new_seed, order

    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    seed = new_seed() if seed is None else int(seed)
    configs = dict(pass_configs or {})
    every = cases_for(target, registry().values())
    entries = []
    for case in order(select(every, patterns)):
        if on_case is not None:
            on_case(case.name)
        entries.append(_export_case(case, target, root, seed, configs))
    from tilelang_core import get_plugin_manager

    manager = get_plugin_manager()
    owner = manager.registry.owner_names.get(target.kind, "")
    manifest = {
        "format": FORMAT, "target": str(target), "seed": seed, "pass_configs": configs,
        "switched_off": switched_off(target.capabilities, configs), "header": header_facts(target, configs),
        "backend": {"name": owner, "module": getattr(manager.backends.get(owner), "module", "")},
        "capabilities": [list(row) for row in target.capabilities.rows()],
        "claims": [[c.capability, list(c.cases)] for c in claims_for(target.capabilities, every)],
        "cases": entries,
    }
    (root / MANIFEST).write_text(json.dumps(manifest, indent=1, default=str))
    return root


# -- run from an export ----------------------------------------------------------------------


def _load_runs(entry: dict[str, Any], root: Path) -> list[Run]:
    with np.load(root / entry["data"]) as data:
        stored = {k: data[k] for k in data.files}
    runs = []
    for item in entry["runs"]:
        args = [RunArg(a["name"], a["kind"], a["dtype"], a["role"], tuple(a["shape"]),
                       a.get("value") if a["kind"] == "scalar" else stored.get(a.get("key", ""))) for a in item["args"]]
        raises = None if item["raises"] is None else Raises(tuple(item["raises"]["types"]), item["raises"]["pattern"],
                                                            item["raises"]["stage"], item["raises"]["names_line"])
        runs.append(Run(dict(item["binding"]), int(item["seed"]), args,
                        {k: stored[v] for k, v in item["expected"].items()},
                        {k: tuple(v) for k, v in item["tolerance"].items()}, item["stdout"], raises))
    return runs


def _run_entry(entry: dict[str, Any], root: Path) -> Result:
    import time

    import tilelang_core

    from .devices import arrays_for

    start = time.perf_counter()
    runs = _load_runs(entry, root)
    result = Result(entry["name"], entry["feature"], tuple(entry["needs"]), PASS, "run",
                    seed=runs[0].seed if runs else None, claims=tuple(entry["claims"]))
    try:
        kernel = tilelang_core.load(root / entry["kernel"])
        arrays = arrays_for(kernel.runtime)
        for run in runs:
            execute(kernel, run, arrays)
        result.detail = f"{len(runs)} run(s), every element checked" if not runs or runs[0].raises is None \
            else "raised as expected"
    except RunFailure as exc:
        result.outcome, result.stage, result.detail = FAIL, exc.stage, str(exc)
    except Exception as exc:  # noqa: BLE001 - loading failed
        result.outcome, result.stage, result.detail = FAIL, "load", f"{type(exc).__name__}: {exc}"
    result.seconds = time.perf_counter() - start
    return result


def run_from(directory: str | Path, patterns: Sequence[str] | None = None,
             on_result: Callable[[Result], None] | None = None,
             pass_configs: Mapping[str, Any] | None = None) -> Any:
    """Run an export directory here: a `TargetReport` at level run (cases decided at export
    keep their result and evidence level), with the pass configs the kernels were compiled
    with. `pass_configs`, when given, must be those (a compiled kernel cannot take others)."""
    from tilelang_core import get_plugin_manager
    from tilelang_core.plugin import hooks_for

    from .configs import describe
    from .probes import Claim
    from .suite import TargetReport, add_switched_off, header_facts

    root = Path(directory)
    manifest = json.loads((root / MANIFEST).read_text())
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{root / MANIFEST}: format {manifest.get('format')!r}, expected {FORMAT!r}")
    configs = dict(manifest.get("pass_configs") or {})
    if pass_configs is not None and dict(pass_configs) != configs:
        raise ValueError(f"the export was compiled with pass configs {describe(configs)}, not {describe(pass_configs)}: "
                         f"its kernels cannot change; export again with the configs you want, or drop --pass-config")
    _ensure_backend(manifest)
    target = get_plugin_manager().parse_target(manifest["target"])
    expectations = hooks_for(target).conformance_expectations()
    header = {f"compiled with {k}" if k in ("tilelang-core", "backend", "toolchain", "date", "host") else k: v
              for k, v in manifest["header"].items()}
    header.update({f"run with {k}": v for k, v in header_facts(target).items() if k not in ("toolchain", "pass configs")})
    header["expected failures (backend)"] = "; ".join(f"{k}: {v}" for k, v in sorted(expectations.items())) or "none"
    report = TargetReport(manifest["target"], "run", f"--from {root}", int(manifest["seed"]), header,
                          [tuple(row) for row in manifest["capabilities"]],
                          claims=[Claim(c, tuple(cases)) for c, cases in manifest["claims"]],
                          pass_configs=configs, switched_off=dict(manifest.get("switched_off") or {}))
    add_switched_off(report)
    names = {e["name"]: e for e in manifest["cases"]}
    chosen = [n for n in names if n in {c.name for c in select(_Named.of(names), patterns)}]
    for name in chosen:
        entry = names[name]
        if entry["result"] is not None:
            result = Result.from_dict(entry["result"])
            if result.outcome != NA:
                result.detail = f"(decided at export) {result.detail}"
        else:
            result = _run_entry(entry, root)
        result = apply_expectation(result, expectations)
        report.results.append(result)
        if on_result is not None:
            on_result(result)
    return report


def _ensure_backend(manifest: dict[str, Any]) -> None:
    """Where the backend is importable but not installed (a repository copy on PYTHONPATH, as
    on a lent GPU machine), register its plugin module from the manifest by hand."""
    from tilelang_core import get_plugin_manager

    manager = get_plugin_manager()
    kind = manifest["target"].partition("/")[0]
    backend = manifest.get("backend") or {}
    if kind in manager.registry.kinds or not backend.get("module"):
        return
    manager.register_module(backend["name"] or kind, backend["module"])


class _Named:
    """Just enough of a `Case` for `select` (name matching) without importing the cases."""

    def __init__(self, name: str) -> None:
        self.name = name

    @staticmethod
    def of(names: Sequence[str]) -> list["_Named"]:
        return [_Named(n) for n in names]
