"""scope_thread_branches: tile ops under a branch on the thread index run on that branch's threads.

TileLang programs split a block by thread index and use tile ops in each part:

    if T.get_thread_binding() < 32:
        ...  T.reduce_max(cm, row_max, dim=1) ...      # warp 0
    else:
        for i in T.Pipelined(...): T.copy(...) ...     # warps 1 and 2

A tile op is a block-wide operation: partitioned over the whole block, its share for threads
0..31 would never run inside the `else`. TileLang restricts each branch's tile ops to the
branch's threads; so do we.

Before: tile IR; an `if` whose condition compares the (one-dimensional) thread index with a
constant (`tx < C`, `tx >= C`, `C > tx`, `C <= tx`), with a tile op or a `T.Parallel` loop in a
branch.
After, on SIMT targets: the `if` is replaced by its branches, each under an
`ATTR_THREAD_RANGE` attribute naming its threads ([0, C) and [C, block)); the passes then
partition, lay out and synchronize each branch over its own threads, as in a `T.ws` scope.
Branches without tile ops, other conditions and block-serial targets are left alone.
"""
from __future__ import annotations

from tvm import tirx as tir

from ..ir import is_tile_op
from ..ir.constants import ATTR_THREAD_RANGE
from .irutil import const, map_stmts, walk
from .kernel_info import launch_info

__all__ = ["scope_thread_branches"]


def _thread_var(func):
    """The threadIdx.x var and the block's thread count, for one-dimensional blocks."""
    found = []

    def visit(node):
        if node.attr_key == "thread_extent" and str(node.node.thread_tag).startswith("threadIdx"):
            found.append((node.node.var, node.node.thread_tag, node.value))

    walk(func.body, visit, (tir.AttrStmt,))
    if len(found) != 1 or found[0][1] != "threadIdx.x" or not isinstance(found[0][2], tir.IntImm):
        return None, 0
    return found[0][0], int(found[0][2])


def _split(cond, tx) -> int | None:
    """C when `cond` is `tx < C` (true below C) as a positive split; -C for `tx >= C` (true
    from C); None otherwise."""
    def is_tx(e):
        return isinstance(e, tir.Var) and e.same_as(tx)

    if isinstance(cond, tir.LT) and is_tx(cond.a) and isinstance(cond.b, tir.IntImm):
        return int(cond.b.value)
    if isinstance(cond, tir.GT) and is_tx(cond.b) and isinstance(cond.a, tir.IntImm):
        return int(cond.a.value)
    if isinstance(cond, tir.GE) and is_tx(cond.a) and isinstance(cond.b, tir.IntImm):
        return -int(cond.b.value)
    if isinstance(cond, tir.LE) and is_tx(cond.b) and isinstance(cond.a, tir.IntImm):
        return -int(cond.a.value)
    return None


def _has_block_wide(stmt) -> bool:
    found = []

    def visit(node):
        if (isinstance(node, tir.Evaluate) and is_tile_op(node)) or (
                isinstance(node, tir.For) and node.kind == tir.ForKind.PARALLEL):
            found.append(node)

    walk(stmt, visit, (tir.Evaluate, tir.For))
    return bool(found)


def scope_thread_branches(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    if ctx is not None and ctx.block_serial:
        return func
    tx, threads = _thread_var(func)
    if tx is None:
        return func

    def scoped(body, begin: int, end: int):
        if body is None or end <= begin:
            return None
        return tir.AttrStmt(const(end - begin), ATTR_THREAD_RANGE, const(begin), body, span=body.span)

    def on_if(stmt: tir.IfThenElse):
        split = _split(stmt.condition, tx)
        if split is None or not (_has_block_wide(stmt.then_case) or
                                 (stmt.else_case is not None and _has_block_wide(stmt.else_case))):
            return stmt
        c = abs(split)
        if not 0 < c < threads:
            return stmt
        low, high = (stmt.then_case, stmt.else_case) if split > 0 else (stmt.else_case, stmt.then_case)
        parts = [p for p in (scoped(low, 0, c), scoped(high, c, threads)) if p is not None]
        return parts[0] if len(parts) == 1 else tir.SeqStmt(parts)

    return func.with_body(map_stmts(func.body, (tir.IfThenElse,), on_if))
