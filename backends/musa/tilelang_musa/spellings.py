"""TileLang's and TVM's names for Moore Threads targets, read as this backend's targets.

`"musa"` with no arch means the GPU at hand (the core picks the detected device, else mp_31).
TileLang's MUSA port writes `{"kind": "musa", "arch": "mp_31"}` or `"musa -arch=mp_31"`.
"""
from __future__ import annotations

from typing import Any, Mapping

from tilelang_core.plugin import TargetError

from .target import MUSA_ARCHS

__all__ = ["SPELLINGS", "resolve"]

SPELLINGS = ("musa",)


def resolve(attrs: Mapping[str, Any]) -> str:
    """Our target for a MUSA spelling's attributes (`arch`, or TVM's `mcpu`)."""
    key = "arch" if attrs.get("arch") is not None else "mcpu"
    value = attrs.get(key)
    if value is None:
        return "musa"
    if not isinstance(value, str) or value not in MUSA_ARCHS:
        raise TargetError(f"MUSA arch {value!r} (attribute {key!r}) is not one tilelang-musa builds for; "
                          f"name one of {', '.join(MUSA_ARCHS)} (e.g. {{'kind': 'musa', 'arch': 'mp_31'}})")
    return f"musa/{value}"
