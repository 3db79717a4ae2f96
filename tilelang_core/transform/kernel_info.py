"""Facts about a kernel's launch frame: its block and thread variables and extents."""
from __future__ import annotations

from dataclasses import dataclass, field

from tvm import tirx as tir

from .irutil import walk

__all__ = ["LaunchInfo", "launch_info"]


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
