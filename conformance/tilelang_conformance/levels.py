"""Which evidence level a target can give here, from the backends' own detections."""
from __future__ import annotations

from typing import Any

from .result import LEVELS, level_rank

__all__ = ["LevelError", "available_level", "resolve_level"]


class LevelError(RuntimeError):
    """A level was asked for that this machine cannot give for a target."""


def _detection(target: Any):
    from tilelang_core import get_plugin_manager

    for det in get_plugin_manager().detections():
        if det.kind == target.kind and det.arch == target.arch:
            return det
    return None


def available_level(target: Any) -> tuple[str, str]:
    """(highest level, why): run when a device was found, compile when the toolchain was,
    codegen otherwise. The reason is the backend's own detection text."""
    det = _detection(target)
    if det is None:
        return "codegen", "the backend reported nothing for this arch"
    if det.device:
        return "run", det.reason
    if det.toolchain:
        return "compile", det.reason
    return "codegen", det.reason


def resolve_level(requested: str, target: Any) -> tuple[str, str]:
    """The level to evaluate `target` at: `auto` takes the highest available; an explicit
    level must be available (a lower one is always allowed)."""
    best, why = available_level(target)
    if requested == "auto":
        return best, why
    if requested not in LEVELS:
        raise LevelError(f"unknown level {requested!r}; valid: auto, {', '.join(LEVELS)}")
    if level_rank(requested) > level_rank(best):
        hint = {"run": "use --level compile here, or --export DIR and --from DIR on a machine with the device",
                "compile": "install the backend's toolchain, or use --level codegen"}[requested]
        raise LevelError(f"{target}: --level {requested} is not available here (best: {best}; {why}); {hint}")
    return requested, why
