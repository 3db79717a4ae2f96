"""Outcomes, evidence levels, one case's result, and the backend's expected failures.

Every outcome but N/A carries the evidence level it was reached at, and the two are never
merged: "PASS at compile" says the toolchain accepted the code, not that it computes right.
"""
from __future__ import annotations

import fnmatch
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

__all__ = [
    "LEVELS",
    "OUTCOMES",
    "PASS",
    "FAIL",
    "NA",
    "XFAIL",
    "XPASS",
    "level_rank",
    "Result",
    "expected_failure",
    "apply_expectation",
]

LEVELS = ("codegen", "compile", "run")  # weakest to strongest evidence

PASS, FAIL, NA, XFAIL, XPASS = "PASS", "FAIL", "N/A", "XFAIL", "XPASS"
OUTCOMES = (PASS, FAIL, XFAIL, XPASS, NA)
# outcomes that make a conformance run fail (XPASS: an expected gap that is gone is news)
FAILING = (FAIL, XPASS)


def level_rank(level: str) -> int:
    if level not in LEVELS:
        raise ValueError(f"unknown evidence level {level!r}; valid: {', '.join(LEVELS)}")
    return LEVELS.index(level)


@dataclass
class Result:
    """One case on one target. `level` is the evidence level (None for N/A); `stage` is
    where a failure happened (build, parse, lower, codegen, compile, load, call, check);
    `seed` reproduces the inputs (`--seed` of the run plus the case name)."""

    case: str
    feature: str
    needs: tuple[str, ...]
    outcome: str
    level: str | None
    detail: str = ""
    stage: str = ""
    seed: int | None = None
    seconds: float = 0.0
    claims: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def failing(self) -> bool:
        return self.outcome in FAILING

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["needs"] = list(self.needs)
        data["claims"] = list(self.claims)
        return data

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> "Result":
        values = dict(data)
        values["needs"] = tuple(values.get("needs", ()))
        values["claims"] = tuple(values.get("claims", ()))
        return Result(**values)


def expected_failure(expectations: Mapping[str, str], case: str, level: str | None) -> str | None:
    """The reason a backend gives for `case` failing, if any. Keys are case names or glob
    patterns (`gemm.dtype.*`), optionally limited to one level: `name@run`."""
    for key, reason in expectations.items():
        pattern, _, only_level = key.partition("@")
        if only_level and only_level != level:
            continue
        if fnmatch.fnmatchcase(case, pattern):
            return reason or "expected failure (no reason given)"
    return None


def apply_expectation(result: Result, expectations: Mapping[str, str]) -> Result:
    """Strict xfail: an expected failure that fails is XFAIL; one that passes is XPASS."""
    if result.outcome == NA:
        return result
    reason = expected_failure(expectations, result.case, result.level)
    if reason is None:
        return result
    if result.outcome == FAIL:
        result.outcome = XFAIL
        result.detail = f"expected: {reason} | {result.detail}"
    elif result.outcome == PASS:
        result.outcome = XPASS
        result.detail = f"passed, but the backend expects it to fail ({reason}): remove the expectation"
    return result
