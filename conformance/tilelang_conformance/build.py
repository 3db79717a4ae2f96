"""Taking a program through the compile path stage by stage, so a failure names its stage.

codegen level: `tilelang_core.jit.api.lower` + the backend's `tilelang_codegen`, then the
source is checked without the vendor compiler. compile level: + `tilelang_compile`. run
level: `tilelang_core.compile` (the user's entry point), uncached, so the evidence is fresh.
Every stage takes the run's pass configs (`configs.py`), so each level compiles the same way.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

__all__ = ["StageError", "render", "check_source", "compile_binary", "compile_kernel"]


class StageError(Exception):
    """A failure in one stage of evaluating a case: `stage` names it, `cause` is the error."""

    def __init__(self, stage: str, cause: BaseException) -> None:
        self.stage = stage
        self.cause = cause
        super().__init__(f"{stage}: {type(cause).__name__}: {cause}")


def _options(configs: Mapping[str, Any] | None):
    from .configs import compile_options

    return compile_options(configs)


def render(program: Any, target: Any, configs: Mapping[str, Any] | None = None) -> Any:
    """Lower and generate source with the pass configs `configs`: a `KernelSource`."""
    from tilelang_core.jit.api import lower
    from tilelang_core.plugin import hooks_for

    options = _options(configs)
    try:
        lowered = lower(program, target, options)
    except Exception as exc:  # noqa: BLE001 - any failure is this stage's
        raise StageError("lower", exc) from exc
    try:
        return hooks_for(target).codegen(lowered, options)
    except Exception as exc:  # noqa: BLE001
        raise StageError("codegen", exc) from exc


# string and char literals, comments and preprocessor lines: what brace counting must skip
_STRIP = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|//[^\n]*|/\*.*?\*/|^\s*#[^\n]*', re.S | re.M)


def check_source(source: Any, target: Any = None) -> str:
    """The codegen-level check: source was produced, defines its entry, and its braces and
    parentheses balance; then the backend's own check without the vendor compiler
    (`tilelang_check_source`, e.g. a clang syntax check against its declared intrinsics) when
    `target` is given. Returns what was checked, for the result's detail."""
    text = getattr(source, "source", "") or ""
    entry = getattr(source, "entry", "") or ""
    problems = []
    if not text.strip():
        problems.append("the generated source is empty")
    if not entry or not re.search(rf"\b{re.escape(entry)}\b", text):
        problems.append(f"the entry {entry!r} does not appear in the source")
    code = _STRIP.sub(" ", text)
    for open_, close in ("{}", "()", "[]"):
        if code.count(open_) != code.count(close):
            problems.append(f"unbalanced {open_}{close}: {code.count(open_)} vs {code.count(close)}")
    if problems:
        raise StageError("codegen", AssertionError("; ".join(problems)))
    if target is None:
        return ""
    from tilelang_core.plugin import hooks_for

    try:
        checked = hooks_for(target).check_source(source)
    except Exception as exc:  # noqa: BLE001 - the backend's check failed: this stage's failure
        raise StageError("codegen", exc) from exc
    return f"checked: {checked}" if checked else ""


def compile_binary(source: Any, target: Any, configs: Mapping[str, Any] | None = None) -> bytes:
    """The backend's toolchain on generated source: a non-empty binary."""
    from tilelang_core.plugin import hooks_for

    try:
        binary = hooks_for(target).compile(source, _options(configs))
    except Exception as exc:  # noqa: BLE001
        raise StageError("compile", exc) from exc
    if not binary:
        raise StageError("compile", AssertionError("the toolchain returned an empty binary"))
    return binary


def compile_kernel(program: Any, target: Any, configs: Mapping[str, Any] | None = None) -> Any:
    """`tilelang_core.compile(program, target=..., pass_configs=configs)` without the cache:
    a callable kernel."""
    import tilelang_core

    try:
        return tilelang_core.compile(program, target=target, cache=False, pass_configs=dict(configs or {}) or None)
    except Exception as exc:  # noqa: BLE001
        raise StageError(_stage_of(exc), exc) from exc


def _stage_of(exc: BaseException) -> str:
    from tilelang_core.runtime.base import CompileError

    return "compile" if isinstance(exc, CompileError) else "lower/codegen/compile"
