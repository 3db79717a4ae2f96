"""TileLang's `tilelang.testing`: `main()`, `set_random_seed`, `torch_assert_close`, the performance
regression entry points (`regression`, `process_func`: see `regression.py`), and
decorators that skip a test, with the reason, when what it needs is absent.

What a machine has is read from the installed backends' detection (`tilelang backends`
shows the same), so the core names no backend. TileLang's named decorators are resolved from
their names, for every installed backend alike:

- `requires_<name>` (`requires_cuda`, `requires_rocm`, `requires_metal`, `requires_llvm`,
  `requires_cpu`, ...): `requires_target(name)`: a device is detected for the target kind (or
  a spelling of it that its backend accepts), arch or capability called `name`.
- `requires_<a>_or_<b>`: either one (`requires_target(a, b)`).
- `requires_<kind>_compute_version(major, minor=0, mode="ge")` and its `_ge`, `_gt`, `_le`,
  `_lt`, `_eq` forms: `requires_compute_version(kind, major, minor, mode)`.

A name nobody declares skips with a reason saying so (a test for a backend that is not
installed is skipped, not an import error). Each decorator is a `Requirement`: apply it to a
test function or class, or take its `marks()`.
"""
from __future__ import annotations

import importlib.util
import inspect
import random
import re
import sys
from typing import Any, Callable

import numpy as np
import pytest

from ..utils.tensor import torch_assert_close
from .regression import process_func, regression

__all__ = [
    "Requirement",
    "main",
    "set_random_seed",
    "torch_assert_close",
    "requires_package",
    "requires_target",
    "requires_target_kind",
    "requires_compute_version",
    "process_func",
    "regression",
]

_MODES = {
    "ge": lambda have, want: have >= want,
    "gt": lambda have, want: have > want,
    "le": lambda have, want: have <= want,
    "lt": lambda have, want: have < want,
    "eq": lambda have, want: have == want,
}


class Requirement:
    """A condition a test needs: as a decorator it adds `pytest.mark.skipif(not met, reason)`."""

    def __init__(self, met: bool, reason: str) -> None:
        self.met = bool(met)
        self.reason = reason

    def marks(self) -> list[Any]:
        return [pytest.mark.skipif(not self.met, reason=self.reason)]

    def __call__(self, func: Callable) -> Callable:
        for mark in self.marks():
            func = mark(func)
        return func

    def __repr__(self) -> str:
        return f"Requirement(met={self.met}, reason={self.reason!r})"


def main() -> None:
    """Run pytest on the calling file (with this process's command-line arguments) and exit."""
    test_file = inspect.getsourcefile(sys._getframe(1))
    sys.exit(pytest.main([test_file] + sys.argv[1:]))


def set_random_seed(seed: int = 42) -> None:
    """Seed Python's, NumPy's and (when installed) torch's generators; the tensor supply
    draws from NumPy's."""
    random.seed(seed)
    np.random.seed(seed)
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.manual_seed(seed)  # every device's generator too


def requires_package(*packages: str) -> Requirement:
    """Skip unless every one of `packages` is importable."""
    missing = [p for p in packages if importlib.util.find_spec(p) is None]
    return Requirement(not missing, f"requires package(s) {', '.join(missing)}: not installed")


# -- what the backends detect --------------------------------------------------------------


def _manager() -> Any:
    from ..plugin.manager import get_plugin_manager

    return get_plugin_manager()


def _kind_of(name: str) -> str | None:
    """The target kind `name` spells: a declared kind, or a spelling its backend parses."""
    from ..plugin.target import TargetError

    manager = _manager()
    if name in manager.registry.kinds:
        return name
    if name == "auto":
        return None
    try:
        return manager.parse_target(name).kind
    except (TargetError, ValueError):
        return None


def _devices(kind: str) -> list[Any]:
    """Detections of `kind` with a device present, best first."""
    found = [d for d in _manager().detections_of(kind) if d.device]
    return sorted(found, key=lambda d: -d.priority)


def _absent(kind: str) -> str:
    reasons = "; ".join(sorted({d.reason for d in _manager().detections_of(kind) if d.reason}))
    return f"no {kind} device detected" + (f" ({reasons})" if reasons else "")


def _capabilities(detection: Any) -> Any:
    if detection.capabilities is not None:
        return detection.capabilities
    return _manager().registry.kinds[detection.kind].archs[detection.arch]


def _check(name: str) -> tuple[bool, str]:
    """(met, why) for one name: a target kind (or spelling), an arch, or a capability."""
    manager = _manager()
    kind = _kind_of(name)
    if kind is not None:
        return (True, f"{kind} device detected") if _devices(kind) else (False, _absent(kind))
    for kind_name, kind_decl in sorted(manager.registry.kinds.items()):
        if name in kind_decl.archs or name in kind_decl.aliases:
            arch = kind_decl.aliases.get(name, name)
            if any(d.arch == arch for d in _devices(kind_name)):
                return True, f"{kind_name}/{arch} device detected"
            have = ", ".join(f"{d.kind}/{d.arch}" for d in _devices(kind_name)) or "none"
            return False, f"requires a {kind_name}/{arch} device; detected: {have}"
    devices = [d for d in manager.detections() if d.device and d.kind in manager.registry.kinds]
    if any(_capabilities(d).has(name) for d in devices):
        return True, f"a detected device has {name!r}"
    declared = any(caps.has(name) for k in manager.registry.kinds.values() for caps in k.archs.values())
    if declared:
        have = ", ".join(f"{d.kind}/{d.arch}" for d in devices) or "none"
        return False, f"requires a device with capability {name!r}; detected devices: {have}"
    kinds = ", ".join(sorted(manager.registry.kinds)) or "none"
    return False, (f"no installed backend declares a target kind, arch or capability named {name!r} "
                   f"(installed kinds: {kinds})")


def requires_target(*names: str) -> Requirement:
    """Skip unless a device is detected for one of `names`: each a target kind or a spelling
    its backend accepts (TileLang's target names), an arch (as `tilelang info` lists them) or
    a capability of the detected device (a name `Capabilities.has` knows)."""
    if not names:
        raise ValueError("requires_target needs at least one target kind, arch or capability name")
    reasons = []
    for name in names:
        met, why = _check(str(name))
        if met:
            return Requirement(True, why)
        reasons.append(why)
    return Requirement(False, "; ".join(reasons))


def requires_target_kind(kind: str) -> Requirement:
    """Skip unless a device of target kind `kind` (or a spelling of it) is detected."""
    found = _kind_of(str(kind))
    if found is None:
        kinds = ", ".join(sorted(_manager().registry.kinds)) or "none"
        return Requirement(False, f"no installed backend provides target kind {kind!r} (installed kinds: {kinds})")
    devices = _devices(found)
    return Requirement(bool(devices), f"{found} device detected" if devices else _absent(found))


def _compute_version(detection: Any) -> tuple[int, int] | None:
    """The device's (major, minor): `capabilities.extra["compute_version"]` when the backend
    states it, else read from the arch name's last number, its last digit the minor (the
    "sm_90a" -> (9, 0) convention)."""
    stated = _capabilities(detection).extra.get("compute_version")
    if stated is not None:
        return int(stated[0]), int(stated[1])
    numbers = re.findall(r"\d+", detection.arch)
    if not numbers:
        return None
    digits = numbers[-1]
    return (int(digits[:-1]), int(digits[-1])) if len(digits) > 1 else (int(digits), 0)


def requires_compute_version(kind: str, major_version: int, minor_version: int = 0,
                             mode: str = "ge") -> Requirement:
    """Skip unless a device of `kind` is detected whose compute version compares to
    (major_version, minor_version) as `mode` says: "ge", "gt", "le", "lt" or "eq"."""
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {', '.join(_MODES)}, got {mode!r}")
    want = (int(major_version), int(minor_version))
    device = requires_target_kind(kind)
    if not device.met:
        return device
    best = _devices(_kind_of(str(kind)))[0]
    have = _compute_version(best)
    wanted = f"requires {kind} compute version {mode} {want[0]}.{want[1]}"
    if have is None:
        return Requirement(False, f"{wanted}, but {best.kind}/{best.arch} states none")
    met = _MODES[mode](have, want)
    return Requirement(met, f"{wanted}; {'' if met else 'but '}have {have[0]}.{have[1]} ({best.kind}/{best.arch})")


_COMPUTE_NAME = re.compile(r"requires_(\w+?)_compute_version(?:_(ge|gt|le|lt|eq))?")


def __getattr__(name: str) -> Any:
    """TileLang's named decorators (see the module docstring), resolved from the name."""
    match = _COMPUTE_NAME.fullmatch(name)
    if match:
        kind, fixed = match.group(1), match.group(2)
        if fixed:
            def factory(major_version: int, minor_version: int = 0) -> Requirement:
                return requires_compute_version(kind, major_version, minor_version, fixed)
        else:
            def factory(major_version: int, minor_version: int = 0, mode: str = "ge") -> Requirement:
                return requires_compute_version(kind, major_version, minor_version, mode)
        factory.__name__ = name
        return factory
    if name.startswith("requires_") and len(name) > len("requires_"):
        return requires_target(*name[len("requires_"):].split("_or_"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
