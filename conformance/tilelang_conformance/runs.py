"""One concrete run of a kernel: host arguments, expected outputs, and the check.

A `Run` is plain data (shapes bound, inputs drawn, references computed), so the same check
runs in-process after compiling and, from an `--export` directory, on a machine with
neither TVM nor this package's case modules.
"""
from __future__ import annotations

import ctypes
import os
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from .data import Mismatch, compare, poison_value, random_array, tolerance

__all__ = ["RunArg", "Run", "make_runs", "execute", "RunFailure"]


class RunFailure(Exception):
    """A run that did not match: `stage` is "call" (the kernel raised) or "check"."""

    def __init__(self, stage: str, message: str) -> None:
        self.stage = stage
        super().__init__(message)


@dataclass
class RunArg:
    """One argument with its concrete shape; `value` is the host array (None for an output,
    which is poisoned on the device) or the scalar's value."""

    name: str
    kind: str  # "tensor" or "scalar"
    dtype: str
    role: str = "in"
    shape: tuple[int, ...] = ()
    value: Any = None


@dataclass
class Run:
    """Arguments, expected outputs (float64) and tolerances of one call of a kernel."""

    binding: dict[str, int]
    seed: int
    args: list[RunArg]
    expected: dict[str, np.ndarray] = field(default_factory=dict)
    tolerance: dict[str, tuple[float, float]] = field(default_factory=dict)
    stdout: str | None = None
    raises: Any = None  # a `Raises` for call-stage bad-input cases


def _shape(shape, binding: dict[str, int]) -> tuple[int, ...]:
    return tuple(int(binding[d]) if isinstance(d, str) else int(d) for d in shape)


def make_runs(spec: Any, seed: int) -> list[Run]:
    """Draw inputs for every binding of `spec` and compute its references in float64."""
    from .case import Arg

    runs = []
    for index, binding in enumerate(spec.bindings):
        rng = np.random.default_rng([seed, index])
        args: list[RunArg] = []
        for a in spec.args:
            if not isinstance(a, Arg):
                args.append(RunArg(a.name, "scalar", a.dtype, value=a.value))
                continue
            shape = _shape(a.shape, dict(binding))
            value = None if a.role == "out" else random_array(
                rng, shape, a.dtype, a.low, a.high, a.signed, a.int_high, a.integral)
            args.append(RunArg(a.name, "tensor", a.dtype, a.role, shape, value))
        run = Run(dict(binding), seed, args, stdout=spec.stdout, raises=spec.raises)
        if spec.reference is not None:
            inputs = {r.name: (r.value.astype(np.float64) if r.kind == "tensor" else r.value)
                      for r in args if r.role != "out"}
            produced = spec.reference(**inputs)
            for r in args:
                if r.kind == "tensor" and r.role != "in":
                    if r.name not in produced:
                        raise KeyError(f"the reference returned no value for output {r.name!r}")
                    run.expected[r.name] = np.asarray(produced[r.name], dtype=np.float64)
                    run.tolerance[r.name] = tuple(spec.tolerance.get(r.name, tolerance(r.dtype)))
        if spec.bad_call is not None:
            values = spec.bad_call([r.value for r in args])
            run.args = [RunArg(r.name, r.kind, str(v.dtype) if isinstance(v, np.ndarray) else r.dtype, r.role,
                               tuple(np.shape(v)), v) for r, v in zip(args, values)]
        runs.append(run)
    return runs


@contextmanager
def captured_stdout() -> Iterator[list[str]]:
    """Capture what C code and devices print to file descriptor 1 (not only sys.stdout)."""
    box: list[str] = []
    sys.stdout.flush()
    libc = ctypes.CDLL(None)
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 1)
        try:
            yield box
        finally:
            libc.fflush(None)
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
            sink.seek(0)
            box.append(sink.read().decode(errors="replace"))


def _device_args(run: Run, arrays: Any) -> list[Any]:
    values = []
    for r in run.args:
        if r.kind == "scalar":
            values.append(r.value)
        elif r.role == "out" and r.value is None:
            values.append(arrays.poisoned(r.shape, r.dtype))
        else:
            values.append(arrays.tensor(r.value, r.dtype))
    return values


def execute(kernel: Any, run: Run, arrays: Any) -> None:
    """Call `kernel` on the run's arguments (outputs poisoned) and check every element of
    every output; raises `RunFailure` with what went wrong."""
    device = _device_args(run, arrays)
    if run.raises is not None:
        _expect_error(kernel, device, run, arrays)
        return
    printed = ""
    try:
        if run.stdout is not None:
            with captured_stdout() as box:
                kernel(*device)
                arrays.synchronize()
            printed = box[0]
        else:
            kernel(*device)
            arrays.synchronize()
    except Exception as exc:  # noqa: BLE001 - the kernel's failure is the finding
        raise RunFailure("call", f"{type(exc).__name__}: {exc}") from exc
    problems: list[Mismatch | str] = []
    for r, value in zip(run.args, device):
        if r.name in run.expected:
            mismatch = compare(r.name, arrays.float64(value), run.expected[r.name], r.dtype,
                               run.tolerance.get(r.name), poison_value(r.dtype) if r.role == "out" else None)
            if mismatch is not None:
                problems.append(mismatch)
    if run.stdout is not None and run.stdout not in printed:
        problems.append(f"stdout lacks {run.stdout!r}; it was {printed[-300:]!r}")
    if problems:
        where = f" (with {run.binding})" if run.binding else ""
        raise RunFailure("check", "; ".join(str(p) for p in problems) + where)


def _expect_error(kernel: Any, device: list[Any], run: Run, arrays: Any) -> None:
    try:
        kernel(*device)
        arrays.synchronize()
    except Exception as exc:  # noqa: BLE001
        if not run.raises.matches(exc):
            raise RunFailure("call", f"raised {type(exc).__name__}: {exc}; expected {run.raises.describe()}") from exc
        return
    raise RunFailure("call", f"the call raised nothing; expected {run.raises.describe()}")
