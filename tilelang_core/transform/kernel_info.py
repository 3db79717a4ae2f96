"""Facts about a kernel's launch frame: its block and thread variables and extents."""
from __future__ import annotations

from dataclasses import dataclass, field

from tvm import tirx as tir

from .irutil import walk

__all__ = ["LaunchInfo", "launch_info", "kernel_hints"]


@dataclass
class LaunchInfo:
    """The `thread_extent` attributes of a kernel, by thread tag ("blockIdx.x", "threadIdx.x")."""

    extents: dict[str, tir.Expr] = field(default_factory=dict)
    vars: dict[str, tir.Var] = field(default_factory=dict)

    @property
    def threads(self) -> int:
        total = 1
        for tag in ("threadIdx.x", "threadIdx.y", "threadIdx.z"):
            if tag in self.extents:
                total *= int(self.extents[tag])
        return total

    def thread_vars(self) -> list[tir.Var]:
        return [v for t, v in self.vars.items() if t.startswith("threadIdx")]


def launch_info(func: tir.PrimFunc) -> LaunchInfo:
    """The launch of `func`: the extent and variable of each `thread_extent` tag it binds."""
    info = LaunchInfo()

    def visit(node):
        if isinstance(node, tir.AttrStmt) and node.attr_key == "thread_extent":
            iv = node.node
            info.extents[iv.thread_tag] = node.value
            info.vars[iv.thread_tag] = iv.var

    walk(func.body, visit, (tir.AttrStmt,))
    return info


def kernel_hints(func: tir.PrimFunc) -> dict:
    """The keywords installed backends add to `T.Kernel` that the kernel passed
    (`tilelang_language_keywords`, recorded as `ATTR_KERNEL_HINTS`), as a dict; {} when none.
    A backend reads only its own keywords."""
    import json

    from ..ir.constants import ATTR_KERNEL_HINTS

    found: list = []
    walk(func.body, lambda a: found.append(a) if a.attr_key == ATTR_KERNEL_HINTS else None, (tir.AttrStmt,))
    return json.loads(str(found[0].value.value)) if found else {}
