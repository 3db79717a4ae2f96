"""Evaluating one case on one target at one level, into a `Result`."""
from __future__ import annotations

import time
import zlib
from typing import Any, Mapping

from .build import StageError, check_source, compile_binary, compile_kernel, render
from .case import Case, NotApplicable, Spec
from .result import FAIL, NA, PASS, Result, apply_expectation, level_rank
from .runs import RunFailure, execute, make_runs

__all__ = ["case_seed", "evaluate", "missing_capabilities", "not_applicable"]


def case_seed(base_seed: int, name: str) -> int:
    """The seed of one case's inputs: the run's seed mixed with the case name."""
    return (int(base_seed) ^ zlib.crc32(name.encode())) & 0xFFFFFFFF


def missing_capabilities(case: Case, caps: Any) -> list[str]:
    return [n for n in case.needs if not caps.has(n)]


def not_applicable(case: Case, target: Any, level: str, configs: Mapping[str, Any] | None = None) -> str:
    """Why `case` is N/A on `target` at `level` with these pass configs ("" when it applies):
    a capability it needs is not declared, the level is too weak, or a config switches off a
    capability it probes (`configs.switched_off`)."""
    from .configs import disabled_claims, switched_off

    missing = missing_capabilities(case, target.capabilities)
    if missing:
        return f"{target} does not declare {', '.join(missing)}"
    if level_rank(level) < level_rank(case.min_level):
        return f"needs evidence level {case.min_level}; this target is evaluated at {level}"
    off = disabled_claims(case.claims, switched_off(target.capabilities, configs))
    if off:
        return f"the pass configs switch off what this case probes: {', '.join(off)}"
    if level == "run":
        from .data import BITS_DTYPES, numpy_dtype

        unmade = [n for n in case.needs if n in BITS_DTYPES and numpy_dtype(n) is None]
        if unmade:
            return f"no {', '.join(unmade)} host arrays here to run it with: pip install ml_dtypes"
    return ""


def evaluate(case: Case, target: Any, level: str, base_seed: int,
             expectations: Mapping[str, str] | None = None, configs: Mapping[str, Any] | None = None) -> Result:
    """Evaluate `case` with the pass configs `configs`; the backend's expectations turn FAIL
    into XFAIL and PASS into XPASS."""
    start = time.perf_counter()
    seed = case_seed(base_seed, case.name)
    result = Result(case.name, case.feature, case.needs, NA, None, seed=seed, claims=case.claims)
    why = not_applicable(case, target, level, configs)
    if why:
        result.detail = why
    else:
        _evaluate(case, target, level, seed, result, configs)
    result.seconds = time.perf_counter() - start
    return apply_expectation(result, expectations or {})


def _evaluate(case: Case, target: Any, level: str, seed: int, result: Result,
              configs: Mapping[str, Any] | None) -> None:
    try:
        spec = case.spec(target)
    except NotApplicable as exc:
        result.detail = str(exc)
        return
    except Exception as exc:  # noqa: BLE001 - a case that cannot build its spec fails
        _fail(result, level, "build", f"{type(exc).__name__}: {exc}")
        return
    try:
        if spec.raises is not None and spec.raises.stage != "call":
            _expect_build_error(spec, target, level, result, configs)
        else:
            _check(spec, target, level, seed, result, configs)
    except StageError as exc:
        _fail(result, level, exc.stage, f"{type(exc.cause).__name__}: {exc.cause}")
    except RunFailure as exc:
        _fail(result, level, exc.stage, str(exc))


def _fail(result: Result, level: str, stage: str, detail: str) -> None:
    result.outcome, result.level, result.stage, result.detail = FAIL, level, stage, detail


def _pass(result: Result, level: str, detail: str = "") -> None:
    result.outcome, result.level, result.detail = PASS, level, detail


def _program(spec: Spec) -> Any:
    try:
        return spec.build_program()
    except Exception as exc:  # noqa: BLE001
        raise StageError("parse", exc) from exc


def _build_to(program: Any, target: Any, level: str, configs: Mapping[str, Any] | None) -> tuple[Any, str]:
    """Take `program` as far as `level` asks: source, binary, or a callable kernel; with what
    checked the source at the codegen level (the backend's `tilelang_check_source`, which
    runs at the compile level too, before the vendor's compiler)."""
    if level == "run":
        return compile_kernel(program, target, configs), ""
    source = render(program, target, configs)
    checked = check_source(source, target)
    if level == "compile":
        compile_binary(source, target, configs)
        return source, ""
    return source, checked


def _check(spec: Spec, target: Any, level: str, seed: int, result: Result, configs: Mapping[str, Any] | None) -> None:
    program = _program(spec)
    built, checked = _build_to(program, target, level, configs)
    if level != "run":
        _pass(result, level, checked)
        return
    from .devices import arrays_for

    arrays = arrays_for(built.runtime)
    runs = make_runs(spec, seed)
    for run in runs:
        execute(built, run, arrays)
    _pass(result, level, f"{len(runs)} run(s), every element checked" if spec.raises is None else "raised as expected")


def _expect_build_error(spec: Spec, target: Any, level: str, result: Result,
                        configs: Mapping[str, Any] | None) -> None:
    """A bad-input case: the error must come at parse time or in the compile path, with
    the expected type and message. The evidence is where it came from: the core (parse,
    lower, codegen: "codegen") or the toolchain ("compile")."""
    expect = spec.raises
    try:
        program = spec.build_program()
    except Exception as exc:  # noqa: BLE001
        return _judge(exc, expect, "parse", "codegen", result)
    if expect.stage == "parse":
        return _fail(result, "codegen", "parse", f"parsing raised nothing; expected {expect.describe()}")
    # never further than the toolchain: the error must come before any kernel runs
    reach = "compile" if level_rank(level) >= level_rank("compile") else "codegen"
    try:
        _build_to(program, target, reach, configs)
    except StageError as exc:
        return _judge(exc.cause, expect, exc.stage, "compile" if exc.stage == "compile" else "codegen", result)
    _fail(result, reach, "compile", f"the compile path raised nothing up to level {reach}; "
          f"expected {expect.describe()}")


def _judge(exc: BaseException, expect: Any, stage: str, level: str, result: Result) -> None:
    text = f"{type(exc).__name__}: {exc}"
    if expect.matches(exc):
        _pass(result, level, f"raised at {stage}: {text[:300]}")
    else:
        _fail(result, level, stage, f"raised the wrong error at {stage}: {text[:600]} "
              f"(expected {expect.describe()})")
