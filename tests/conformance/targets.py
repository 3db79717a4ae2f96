"""The CI matrix of the conformance suite, and one test id per (target, case).

cpu runs for real (the host's arch); cuda compiles for sm_80 and sm_90a; hip compiles for
gfx90a and gfx942; metal generates MSL for apple-m2 (checked by clang against the backend's MSL
declarations); opencl runs every case for real on PoCL's CPU device. A target whose toolchain (or
device) is missing is skipped with the backend's own reason.
"""
from __future__ import annotations

import pytest

from tilelang_conformance.case import registry
from tilelang_conformance.result import FAILING, NA, level_rank

# (target, level CI evaluates it at)
CI_MATRIX = (("cpu", "run"), ("cuda/sm_80", "compile"), ("cuda/sm_90a", "compile"),
             ("hip/gfx90a", "compile"), ("hip/gfx942", "compile"),
             ("metal/apple-m2", "codegen"), ("opencl/pocl-cpu", "run"))

# Targets CI evaluates on a sample of the cases, to bound its time: the first case of every
# feature, plus the named ones, e.g. {"opencl/pocl-cpu": ("flash_attention.fwd",)}. None today:
# OpenCL on PoCL runs the whole suite (each kernel costs a PoCL build, about 2.5 s a case on 2
# busy cores: a few minutes of CI), so the SIMT lowering of every case runs for real in CI.
CI_SAMPLES: dict[str, tuple[str, ...]] = {}


def _sample(spec: str, cases: list) -> list:
    if spec not in CI_SAMPLES:
        return cases
    firsts = {}
    for case in cases:
        firsts.setdefault(case.feature, case.name)
    keep = set(firsts.values()) | set(CI_SAMPLES[spec])
    return [c for c in cases if c.name in keep]


def _target(spec: str):
    from tilelang_core import get_plugin_manager
    from tilelang_core.plugin import TargetError

    try:
        return get_plugin_manager().parse_target(spec)
    except TargetError:
        return None


def params(specs: tuple[tuple[str, str], ...] = CI_MATRIX) -> list:
    """pytest params: (target spec, level, case name), with the target's generated probes."""
    from tilelang_conformance.probes import cases_for

    out = []
    for spec, level in specs:
        target = _target(spec)
        cases = cases_for(target, registry().values()) if target is not None else registry().values()
        for case in _sample(spec, sorted(cases, key=lambda c: c.name)):
            out.append(pytest.param(spec, level, case.name, id=f"{spec}::{case.name}"))
    return out


def evaluate_for_ci(spec: str, level: str, name: str, seed: int):
    """Evaluate one case as CI does; skip when the target or the level is unavailable here
    or the case is N/A; fail with the result's detail and a command that reproduces it."""
    from tilelang_core.plugin import hooks_for

    from tilelang_conformance.evaluate import evaluate
    from tilelang_conformance.levels import available_level
    from tilelang_conformance.probes import cases_for

    target = _target(spec)
    if target is None:
        pytest.skip(f"no installed backend declares {spec}")
    best, why = available_level(target)
    if level_rank(best) < level_rank(level):
        pytest.skip(f"{target} gives only level {best} here ({why}); CI evaluates it at {level}")
    case = {c.name: c for c in cases_for(target, registry().values())}[name]
    result = evaluate(case, target, level, seed, hooks_for(target).conformance_expectations())
    if result.outcome == NA:
        pytest.skip(f"N/A: {result.detail}")
    assert result.outcome not in FAILING, (
        f"{result.outcome} at {result.level} (stage {result.stage or '-'}): {result.detail}\n"
        f"reproduce: tilelang conformance --target {target} --level {level} -k '{name}' --seed {seed} -v")
    return result
