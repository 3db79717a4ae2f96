"""Source compatibility with TileLang: run TileLang programs with no edit at all.

- `install()` / `uninstall()`: resolve `import tilelang[.x]` to tilelang-core in this
  process (a `sys.meta_path` finder; see `finder` and `aliases`); `tilelang run` does it for
  a program (`run`).
- The small top-level names TileLang has and the core re-exports: `cdiv`,
  `next_power_of_2`, `DataType`, `tvm` (`names`), and the cache switch `disable_cache`,
  `enable_cache`, `is_cache_enabled` (`cache_switch`).

Importing this package imports neither TVM nor a backend.
"""
from __future__ import annotations

import importlib
from typing import Any

from .cache_switch import disable_cache, enable_cache, is_cache_enabled
from .finder import TileLangFinder, install, installed_finder, uninstall
from .names import cdiv, next_power_of_2

__all__ = [
    "DataType",
    "TileLangFinder",
    "cdiv",
    "disable_cache",
    "enable_cache",
    "install",
    "installed_finder",
    "is_cache_enabled",
    "next_power_of_2",
    "tvm",
    "uninstall",
]


def __getattr__(name: str) -> Any:
    if name in ("DataType", "tvm"):
        return getattr(importlib.import_module(".names", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
