"""The names TileLang's tests read from `tvm.testing` that apache-tvm 0.27's lacks: the
`requires_<target>` decorators (`tvm.testing.requires_cuda`, `requires_gpu`, ...), which are
tilelang-core's own (`tilelang_core.testing`: skipped with the reason when no device of that
kind is detected). Set on `tvm.testing` when it loads in a process that runs the aliasing."""
from __future__ import annotations

from typing import Any

__all__: list[str] = []


def module_getattr(name: str) -> Any:
    """`tvm.testing.requires_<name>`: `tilelang_core.testing.requires_<name>`."""
    if name.startswith("requires_"):
        from ... import testing

        return getattr(testing, name)
    raise AttributeError(f"module 'tvm.testing' has no attribute {name!r}")
