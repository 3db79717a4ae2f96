"""`tilelang.backend.target.determine_target(target="auto", return_object=False)`.

Resolves a target the way `tilelang.compile` does: "auto" (the detected device, or an
enclosing `with tvm.target.Target(...)`), a target kind an installed backend declares, "kind/arch",
TileLang's TVM-style strings and dicts, as far as an installed backend accepts them. Returns
its spelling ("kind/arch") or, with `return_object=True`, the core's `Target`. A target no
installed backend declares is a `TargetError` that lists the ones that are.
"""
from __future__ import annotations

from typing import Any

__all__ = ["determine_target"]


def determine_target(target: Any = "auto", return_object: bool = False) -> Any:
    from ....plugin import get_plugin_manager

    resolved = get_plugin_manager().parse_target(target)
    return resolved if return_object else f"{resolved.kind}/{resolved.arch}"
