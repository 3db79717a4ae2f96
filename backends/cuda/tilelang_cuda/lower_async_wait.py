"""`T.async_copy` on CUDA: the barrier that publishes a cp.async tile goes after the kernel's
own wait for it.

`lower_async_copy` lowers a `T.async_copy` (hint `async_copy`) to its cp.async nest and a
commit, without a wait, marked `ATTR_ASYNC_COPY`. The core's barrier pass puts a barrier right
after every statement that writes shared memory; for a cp.async nest that barrier comes too
early: a thread's cp.async writes land only when that thread waits for its group
(`T.ptx_wait_group(n)`, `tl::cp_async_wait<n>`), so other threads may read the tile only after
every thread waited and then met at a barrier (PTX ISA, "cp.async.wait_group": the writes
are made visible to the executing thread only).

`publish_async_copies` (after `insert_barriers`): before it, each marked copy (or a loop of
them) is followed by the core's barrier; after it, that barrier follows the next wait of the
same statement list instead, when that wait comes before any statement that touches shared
memory; otherwise it stays where it was (no wait in that list: the tile is the kernel's to
publish). The marks are removed. A kernel that reads the tile without waiting reads what
cp.async has not written yet, as in TileLang, where `T.async_copy` inserts no wait either.
"""
from __future__ import annotations

from tvm import ir as _ir
from tvm import tirx as tir

from tilelang_core.transform import map_stmts, seq, walk

__all__ = ["ATTR_ASYNC_COPY", "mark_async_copy", "publish_async_copies"]

ATTR_ASYNC_COPY = "cuda.async_copy"
_BARRIERS = ("tl.sync_threads", "tl.sync_group")


def mark_async_copy(stmt: tir.Stmt) -> tir.Stmt:
    """`stmt` (a cp.async nest and its commit) marked as waited for by the kernel itself."""
    return tir.AttrStmt(tir.const(0, "int32"), ATTR_ASYNC_COPY, tir.const(1, "int32"), stmt)


def _is_marked(stmt: tir.Stmt) -> bool:
    return isinstance(stmt, tir.AttrStmt) and stmt.attr_key == ATTR_ASYNC_COPY


def _issues_async_copies(stmt: tir.Stmt) -> bool:
    """Whether `stmt` is, or holds (a loop of them), a marked copy."""
    found = []
    walk(stmt, lambda a: found.append(a) if _is_marked(a) else None, (tir.AttrStmt,))
    return bool(found)


def _is_barrier(stmt: tir.Stmt) -> bool:
    return (isinstance(stmt, tir.Evaluate) and isinstance(stmt.value, _ir.Call)
            and getattr(stmt.value.op, "name", "") in _BARRIERS)


def _is_wait(stmt: tir.Stmt) -> bool:
    call = stmt.value if isinstance(stmt, tir.Evaluate) else None
    return (isinstance(call, _ir.Call) and getattr(call.op, "name", "") == "tirx.call_extern"
            and isinstance(call.args[0], _ir.StringImm) and str(call.args[0].value).startswith("tl::cp_async_wait"))


def _touches_shared(stmt: tir.Stmt) -> bool:
    found = False

    def visit(node):
        nonlocal found
        source = node.source if isinstance(node, _ir.TensorLoad) else node.buffer
        found = found or str(source.scope()).startswith("shared")

    walk(stmt, visit, (_ir.TensorLoad, tir.BufferStore))
    return found


def _wait_ahead(stmts: list, issues: list, start: int) -> bool:
    """Whether a wait comes from `start` on before any statement that touches shared memory
    (other than more copies and their barriers)."""
    for k in range(start, len(stmts)):
        if _is_wait(stmts[k]):
            return True
        if not issues[k] and not _is_barrier(stmts[k]) and _touches_shared(stmts[k]):
            return False
    return False


def _publish(stmts: list) -> list:
    out, held = [], None  # held: the barrier of a marked copy, waiting for the wait
    issues = [_issues_async_copies(stmt) for stmt in stmts]
    for i, stmt in enumerate(stmts):
        if held is not None and _is_barrier(stmt) and i > 0 and issues[i - 1]:
            continue  # the next marked copy's barrier: one after the wait publishes both
        if held is None and _is_barrier(stmt) and i > 0 and issues[i - 1] and _wait_ahead(stmts, issues, i + 1):
            held = stmt
            continue
        if held is not None and not issues[i] and not _is_wait(stmt) and _touches_shared(stmt):
            out.append(held)
            held = None
        out.append(stmt)
        if held is not None and _is_wait(stmt):
            out.append(held)
            held = None
    return out + ([held] if held is not None else [])


def publish_async_copies(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Move each marked cp.async copy's barrier after the kernel's wait for it (see the
    module) and drop the marks."""
    body = map_stmts(func.body, (tir.SeqStmt,), lambda s: seq(_publish(list(s.seq))))
    body = map_stmts(body, (tir.AttrStmt,), lambda a: a.body if _is_marked(a) else a)
    return func.with_body(body)
