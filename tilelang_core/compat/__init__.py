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

# resolved on first use: the autotuner's cache check reads `is_cache_enabled` on every call,
# and a fresh process must not pay for the import finder to ask it
_NAMES = {
    "disable_cache": "cache_switch", "enable_cache": "cache_switch", "is_cache_enabled": "cache_switch",
    "TileLangFinder": "finder", "install": "finder", "installed_finder": "finder", "uninstall": "finder",
    "cdiv": "names", "next_power_of_2": "names", "DataType": "names", "tvm": "names", "set_log_level": "names", "logger": "names",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
