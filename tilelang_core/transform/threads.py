"""lower_threads: explicit thread indices on block-serial targets.

Before: the kernel has `threadIdx.*` launch attributes; the body may name the thread
variables directly (code written per thread, outside tile ops).
After, on block-serial targets: the thread attributes are gone. A body that names a thread
variable runs inside a serial loop over the thread ids, which `check` allowed only when the
kernel has no tile ops and no barriers (so thread order cannot matter). SIMT targets keep
the attributes.
"""
from __future__ import annotations

from tvm import tirx as tir

from .irutil import const, map_stmts, mentions

__all__ = ["lower_threads", "uses_var"]


def uses_var(node, var: tir.Var) -> bool:
    return mentions(node, {var.__chandle__()})


def lower_threads(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    if not ctx.block_serial:
        return func

    def on_attr(attr: tir.AttrStmt):
        if attr.attr_key != "thread_extent" or not attr.node.thread_tag.startswith("threadIdx"):
            return attr
        var = attr.node.var
        if uses_var(attr.body, var):
            return tir.For(var, const(0), attr.value, tir.ForKind.SERIAL, attr.body)
        return attr.body

    return func.with_body(map_stmts(func.body, (tir.AttrStmt,), on_attr))
