"""What a conformance case is: a kernel in the public language, its arguments, a NumPy
reference, and the capabilities it needs.

A case is declared with `@case(name, feature=, needs=)` on a function that returns a `Spec`.
The function runs only when the case is evaluated (building a program imports TVM), so
listing cases is cheap and a case whose program fails to build is reported, not fatal.
"""
from __future__ import annotations

import fnmatch
import inspect
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

__all__ = [
    "Arg",
    "Scalar",
    "Raises",
    "Spec",
    "Case",
    "case",
    "add",
    "registry",
    "select",
    "STAGES",
    "NotApplicable",
]

# Where a bad-input case expects its error: at `@T.prim_func` (parse), anywhere in the compile
# path (compile), or when the compiled kernel is called (call: needs the run level).
STAGES = ("parse", "compile", "call")


class NotApplicable(Exception):
    """Raised by a case's spec builder when the case means nothing on this target (e.g. a
    check for an undeclared dtype on a target that declares them all)."""


@dataclass(frozen=True)
class Arg:
    """One tensor parameter of a case's kernel, in parameter order.

    `role`: "in" (random input), "out" (poisoned with NaN, or a sentinel for integers, before
    the run, so an element the kernel never writes fails the check), "inout" (random initial
    value the kernel updates; the reference receives it). A str in `shape` names a symbolic
    dimension bound by the spec's `bindings`. Random values have magnitudes in [low, high] and
    a random sign; integers (and floats with `integral=True`) are nonzero in
    [-int_high, int_high]; `signed=False` keeps values positive.
    """

    name: str
    shape: tuple[int | str, ...]
    dtype: str
    role: str = "in"
    low: float = 0.25
    high: float = 1.0
    signed: bool = True
    int_high: int = 8
    integral: bool = False

    def __post_init__(self) -> None:
        if self.role not in ("in", "out", "inout"):
            raise ValueError(f"Arg {self.name!r}: role must be in/out/inout, got {self.role!r}")


@dataclass(frozen=True)
class Scalar:
    """A scalar parameter passed by value."""

    name: str
    value: int | float
    dtype: str = "float32"


@dataclass(frozen=True)
class Raises:
    """A bad-input case's expectation: an exception of one of `types` (class names, matched
    against the exception's classes and those of its causes, so the check needs no import of
    where they live) whose message matches `pattern` (a regular expression, case-insensitive,
    `.` spanning lines), raised at `stage`. `names_line`: the message must also point at the
    kernel's source (`file.py:LINE`)."""

    types: tuple[str, ...]
    pattern: str
    stage: str = "parse"
    names_line: bool = False

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"Raises.stage must be one of {STAGES}, got {self.stage!r}")

    def matches(self, exc: BaseException) -> bool:
        names: set[str] = set()
        seen: BaseException | None = exc
        while seen is not None and len(names) < 64:
            names |= {k.__name__ for k in type(seen).__mro__}
            seen = seen.__cause__ or seen.__context__
        text = str(exc)
        if self.names_line and re.search(r"\.py:\d+", text) is None:
            return False
        return bool(names & set(self.types)) and re.search(self.pattern, text, re.I | re.S) is not None

    def describe(self) -> str:
        line = " naming the kernel's source line" if self.names_line else ""
        return f"{'/'.join(self.types)} matching {self.pattern!r}{line}, at {self.stage}"


@dataclass
class Spec:
    """What evaluating a case needs.

    `program` is a `T.prim_func` or a zero-argument callable building one (a bad-input case
    whose error comes at parse time raises from it). `reference(**arrays)` gets every tensor
    (in and inout, as float64) and scalar by name and returns the expected float64 value of
    every out/inout tensor. `tolerance` maps an output name to (rtol, atol) where the dtype's
    default is not right (e.g. a long float16 reduction). `bindings` lists values of symbolic
    dimensions, one run each. `stdout` is text the run must print (`T.print`).
    `bad_call` turns good arguments into bad ones for a call-stage `raises`.
    """

    program: Any
    args: Sequence[Arg | Scalar] = ()
    reference: Callable[..., Mapping[str, Any]] | None = None
    tolerance: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    bindings: Sequence[Mapping[str, int]] = ({},)
    stdout: str | None = None
    raises: Raises | None = None
    bad_call: Callable[[list], list] | None = None

    def build_program(self):
        return self.program() if callable(self.program) and not _is_prim_func(self.program) else self.program


def _is_prim_func(obj: Any) -> bool:
    return type(obj).__name__ == "PrimFunc"


@dataclass(frozen=True)
class Case:
    """A named conformance case. `feature` is its row in the table; `needs` are capability
    names as in the target's table (`Capabilities.has`): a target that lacks one gets N/A.
    `make(target)` builds the `Spec`. `isolate` puts the case last in a run (a failed device
    assertion leaves a GPU context unusable). `claims` are the capabilities it probes: when
    the target declares one, this case is that capability's evidence. `min_level` is the
    lowest evidence level at which the case means something (a call-time check needs "run")."""

    name: str
    feature: str
    needs: tuple[str, ...]
    make: Callable[[Any], Spec]
    description: str = ""
    isolate: bool = False
    claims: tuple[str, ...] = ()
    min_level: str = "codegen"

    def __post_init__(self) -> None:
        if self.min_level not in ("codegen", "compile", "run"):
            raise ValueError(f"case {self.name!r}: min_level must be codegen, compile or run, got {self.min_level!r}")

    def spec(self, target: Any) -> Spec:
        """Build the spec for a target (most cases ignore it)."""
        return self.make(target)


_REGISTRY: dict[str, Case] = {}


def case(name: str, *, feature: str, needs: Iterable[str] = (), isolate: bool = False,
         claims: Iterable[str] = (), min_level: str = "codegen"):
    """Register the decorated function as a case. It takes no argument, or the `Target`."""

    def register(fn: Callable[..., Spec]) -> Callable[..., Spec]:
        if name in _REGISTRY:
            raise ValueError(f"conformance case {name!r} is declared twice")
        takes_target = len(inspect.signature(fn).parameters) == 1

        def make(target: Any) -> Spec:
            return fn(target) if takes_target else fn()

        summary = " ".join((fn.__doc__ or "").strip().split("\n\n")[0].split())
        _REGISTRY[name] = Case(name, feature, tuple(needs), make, summary, isolate, tuple(claims), min_level)
        return fn

    return register


def add(item: Case) -> Case:
    """Register a case built without the decorator (generated families)."""
    if item.name in _REGISTRY:
        raise ValueError(f"conformance case {item.name!r} is declared twice")
    _REGISTRY[item.name] = item
    return item


def registry() -> dict[str, Case]:
    """Every registered case by name (importing the case modules registers them)."""
    from . import cases  # noqa: F401 - registration side effect

    return dict(_REGISTRY)


def select(cases: Iterable[Case], patterns: Sequence[str] | None) -> list[Case]:
    """Cases whose name matches one of the glob patterns (all when there are none)."""
    items = list(cases)
    if not patterns:
        return items
    return [c for c in items if any(fnmatch.fnmatchcase(c.name, p) for p in patterns)]
