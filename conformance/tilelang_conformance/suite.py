"""Running the suite on targets: which targets, in which order, with which header facts."""
from __future__ import annotations

import datetime
import platform
import secrets
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from . import __version__
from .case import Case, registry, select
from .levels import resolve_level
from .probes import Claim, cases_for, claims_for
from .result import FAILING, Result

__all__ = ["TargetReport", "new_seed", "resolve_targets", "header_facts", "add_switched_off", "order", "run_target"]


@dataclass
class TargetReport:
    """Everything reported for one target: the header facts, the results, the claims, and the
    pass configs every case was compiled with, with the capabilities they switch off."""

    target: str
    level: str
    level_reason: str
    seed: int
    header: dict[str, Any]
    capabilities: list[tuple[str, str]]
    results: list[Result] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    pass_configs: dict[str, Any] = field(default_factory=dict)
    switched_off: dict[str, str] = field(default_factory=dict)

    @property
    def failing(self) -> list[Result]:
        return [r for r in self.results if r.outcome in FAILING]


def new_seed() -> int:
    """A fresh seed for a run's inputs (recorded in every report)."""
    return secrets.randbits(32)


def resolve_targets(backends: Sequence[str] = (), targets: Sequence[str] = ()) -> list[Any]:
    """Every target the named backends declare, plus the named targets, parsed (in order,
    without repeats). Raises ValueError naming the installed backends for an unknown one."""
    from tilelang_core import get_plugin_manager

    manager = get_plugin_manager()
    specs: list[str] = []
    for name in backends:
        info = manager.backends.get(name)
        if info is None:
            installed = ", ".join(sorted(manager.backends)) or "none"
            raise ValueError(f"no backend named {name!r} is installed (installed: {installed}); "
                             f"pip install tilelang-{name}")
        if info.broken:
            raise ValueError(f"backend {name!r} is installed but broken: {info.error}")
        for kind in info.kinds:
            specs += [f"{kind}/{arch}" for arch in manager.registry.kinds[kind].archs]
    specs += list(targets)
    return [manager.parse_target(s) for s in dict.fromkeys(specs)]


def header_facts(target: Any, pass_configs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Versions of the core, the target's backend and its toolchain (the backend's
    `tilelang_cache_key` strings for these pass configs), and of this suite; the host; the
    date; the pass configs."""
    import numpy

    import tilelang_core
    from tilelang_core import get_plugin_manager
    from tilelang_core.plugin import hooks_for

    manager = get_plugin_manager()
    owner = manager.registry.owner_names.get(target.kind, "?")
    info = manager.backends.get(owner)
    from .configs import compile_options, describe

    try:
        toolchain = "; ".join(hooks_for(target).cache_key(compile_options(pass_configs))) or "not reported"
    except Exception as exc:  # noqa: BLE001 - a missing toolchain is a fact to report
        toolchain = f"unavailable ({type(exc).__name__}: {exc})"
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "tilelang-core": tilelang_core.__version__,
        "backend": f"{owner} ({info.distribution} {info.version})" if info else owner,
        "toolchain": toolchain,
        "tilelang-conformance": __version__,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "host": f"{platform.system()} {platform.machine()}",
        "pass configs": describe(pass_configs),
    }


def add_switched_off(report: TargetReport) -> None:
    """Name in the header what the pass configs switch off (when they switch off anything)."""
    if report.switched_off:
        report.header["switched off by the pass configs"] = "; ".join(
            f"{cap} ({why})" for cap, why in report.switched_off.items())


def order(cases: Iterable[Case]) -> list[Case]:
    """Cases by name, isolated ones last (a failed device assertion may end a GPU context)."""
    return sorted(cases, key=lambda c: (c.isolate, c.name))


def run_target(target: Any, level: str = "auto", patterns: Sequence[str] | None = None,
               seed: int | None = None, on_result: Callable[[Result], None] | None = None,
               expectations: dict[str, str] | None = None,
               pass_configs: Mapping[str, Any] | None = None) -> TargetReport:
    """Evaluate the selected cases (and the target's generated probes) on one target, each
    compiled with `pass_configs` (checked by `configs.parse_pass_configs`). `expectations`
    defaults to the backend's `tilelang_conformance_expectations`."""
    from tilelang_core.plugin import hooks_for

    from .configs import switched_off
    from .evaluate import evaluate

    chosen, why = resolve_level(level, target)
    seed = new_seed() if seed is None else int(seed)
    if expectations is None:
        expectations = hooks_for(target).conformance_expectations()
    every = cases_for(target, registry().values())
    configs = dict(pass_configs or {})
    report = TargetReport(str(target), chosen, why, seed, header_facts(target, configs), target.capabilities.rows(),
                          claims=claims_for(target.capabilities, every), pass_configs=configs,
                          switched_off=switched_off(target.capabilities, configs))
    report.header["expected failures (backend)"] = "; ".join(f"{k}: {v}" for k, v in sorted(expectations.items())) or "none"
    add_switched_off(report)
    for case in order(select(every, patterns)):
        result = evaluate(case, target, chosen, seed, expectations, configs)
        report.results.append(result)
        if on_result is not None:
            on_result(result)
    return report
