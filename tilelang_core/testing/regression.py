"""TileLang's performance-regression entry points (`tilelang.testing.regression`,
`tilelang.testing.process_func`), as its `regression_*.py` example scripts call them.

A script defines functions named `regression_<case>`, each calling
`process_func(run, **kwargs)` with a function that returns a latency; `regression()` at the
bottom of the script runs every such function of the calling module in name order and prints
one `case: latency` line per recorded result. An exception in a case propagates (the script
fails); a latency that is not positive after a few retries is a warning, not a result.

`TL_PERF_REGRESSION_ONLY` (a comma-separated list or a JSON list of name patterns) runs only the
matching cases; `TL_PERF_REGRESSION_FORMAT=json` prints the results as one JSON line after the
marker `__TILELANG_PERF_RESULTS_JSON__=`, for a parent process that collects them. Both are read
through `tilelang_core.env`.
"""
from __future__ import annotations

import fnmatch
import inspect
import json
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["PerfResult", "process_func", "regression", "results"]

_RETRIES = 5
_JSON_MARKER = "__TILELANG_PERF_RESULTS_JSON__="


@dataclass(frozen=True)
class PerfResult:
    """One recorded latency: the result's name, its value and the case that recorded it."""

    name: str
    latency: float
    case: str | None = None


_results: list[PerfResult] = []
_case: list[str | None] = [None]


def results() -> list[PerfResult]:
    """The latencies recorded since the last `regression()` started."""
    return list(_results)


def process_func(func: Callable[..., Any], name: str | None = None, /, **kwargs: Any) -> None:
    """Call `func(**kwargs)` and record the latency it returns (retried while not positive)."""
    label = name if name is not None else getattr(func, "__module__", "<unknown>")
    label = label[len("regression_"):] if label.startswith("regression_") else label
    latency = float(func(**kwargs))
    for _ in range(_RETRIES):
        if latency > 0.0:
            break
        latency = float(func(**kwargs))
    if latency <= 0.0:
        warnings.warn(f"{label}: latency {latency} is not positive; check the profiling", RuntimeWarning, stacklevel=2)
        return
    _results.append(PerfResult(label, latency, _case[0]))


def _patterns() -> list[str]:
    from .. import env

    text = env.perf_regression_only()
    if not text:
        return []
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        parsed = text.split(",")
    parsed = [parsed] if isinstance(parsed, str) else parsed
    return [str(p).strip().lower() for p in parsed if str(p).strip()] if isinstance(parsed, list) else []


def regression(prefixes: tuple[str, ...] = ("regression_",), verbose: bool = True) -> None:
    """Run every `regression_*` function of the calling module, in name order, and print
    the recorded latencies."""
    from .. import env

    caller = inspect.currentframe().f_back.f_globals  # type: ignore[union-attr]
    cases = sorted((name, fn) for name, fn in caller.items()
                   if callable(fn) and any(name.startswith(p) for p in prefixes))
    patterns = _patterns()

    def short(name: str) -> str:
        return name[len("regression_"):] if name.startswith("regression_") else name

    if patterns:
        cases = [(n, f) for n, f in cases if any(fnmatch.fnmatch(c.lower(), p) or p in c.lower()
                                                 for p in patterns for c in (n, short(n)))]
    _results.clear()
    for index, (name, fn) in enumerate(cases, 1):
        _case[0] = short(name)
        start = time.perf_counter()
        if verbose:
            print(f"  [{index}/{len(cases)}] {short(name)}", end="", flush=True)
        try:
            fn()
        finally:
            _case[0] = None
        if verbose:
            print(f" ({time.perf_counter() - start:.2f}s)", flush=True)
    if env.perf_regression_format() == "json":
        print(_JSON_MARKER + json.dumps([{"name": r.name, "latency": r.latency, **({"case": r.case} if r.case else {})}
                                         for r in _results], separators=(",", ":")))
    else:
        for r in _results:
            print(f"{r.name}: {r.latency}")
