"""TileLang's `tilelang.language.fp8`: which float8 dtype names the default target uses.

Two float8 families exist: the OCP formats (`float8_e4m3fn`, `float8_e5m2`) and the "fnuz"
formats (`float8_e4m3fnuz`, `float8_e5m2fnuz`). The answer comes from the default target's
capability table (`TILELANG_TARGET`, else the device found here), never from its name; with
no target that declares either family, the OCP names.
"""
from __future__ import annotations

from typing import Any, Literal

__all__ = ["determine_fp8_type", "determine_torch_fp8_type"]

_FAMILIES = {"e4m3": ("float8_e4m3fn", "float8_e4m3fnuz"), "e5m2": ("float8_e5m2", "float8_e5m2fnuz")}


def _default_target_dtypes() -> tuple[str, ...]:
    from ..plugin import get_plugin_manager
    from ..plugin.target import TargetError

    try:
        return tuple(get_plugin_manager().parse_target(None).capabilities.dtypes)
    except TargetError:
        return ()


def determine_fp8_type(fp8_format: Literal["e4m3", "e5m2"] = "e4m3") -> str:
    """The float8 dtype name for `fp8_format` ("e4m3" or "e5m2") on the default target: the
    OCP name when the target declares it, else the fnuz name when it declares that, else the
    OCP name."""
    if fp8_format not in _FAMILIES:
        raise ValueError(f"determine_fp8_type: fp8_format must be 'e4m3' or 'e5m2', got {fp8_format!r}")
    ocp, fnuz = _FAMILIES[fp8_format]
    declared = _default_target_dtypes()
    if ocp not in declared and fnuz in declared:
        return fnuz
    return ocp


def determine_torch_fp8_type(fp8_format: Literal["e4m3", "e5m2"] = "e4m3") -> Any:
    """The torch dtype of `determine_fp8_type(fp8_format)`."""
    import torch

    name = determine_fp8_type(fp8_format)
    found = getattr(torch, name, None)
    if found is None:
        raise RuntimeError(f"torch {torch.__version__} has no dtype {name}; upgrade torch")
    return found
