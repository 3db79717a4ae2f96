"""TileLang's `tilelang.contrib`: `cc` (host C/C++ compiler helpers) here; the device
compilers' modules (`nvcc`, `hipcc`, ...) belong to the backend of that target, which claims
their paths (`tilelang_compat_modules`)."""
from __future__ import annotations

from . import cc

__all__ = ["cc"]
