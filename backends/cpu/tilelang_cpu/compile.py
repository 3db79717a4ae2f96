"""The host C compiler that turns generated C into a shared library."""
from __future__ import annotations

import shutil

from tilelang_core import env

__all__ = ["find_compiler"]


def find_compiler() -> str | None:
    explicit = env.host_c_compiler()
    if explicit:
        return shutil.which(explicit) or None
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    return None
