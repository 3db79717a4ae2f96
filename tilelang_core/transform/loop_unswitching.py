"""Loop-invariant conditions hoisted out of their loops: TileLang's `LoopUnswitching`.

Before: a loop whose body holds `if cond: then` (optionally `else: other`) at its top level,
where `cond` does not depend on the loop. After: `if cond: for ...: <body with each such if
replaced by its then case>` and, as the else branch, the loop with each replaced by its else
case (`T.evaluate(0)` when there is none), so the test runs once instead of once per
iteration; every top-level `if` of the same condition is taken at once. Applied from the
innermost loop out, so a condition invariant to a whole nest leaves all of it (an else loop
that is only no-ops counts as no else).

A condition stays where it is when it reads the loop variable, a thread index (`threadIdx.*`:
each thread must still reach the loop's barriers), or a buffer the loop writes; and when the else
loop would do real work (an else case, or other statements of the body), unless the entered
`PassContext` sets `tl.loop_unswitching_allow_non_trivial_else` (then both loops are kept,
one per branch). `tl.disable_loop_unswitching` turns the pass off. The core's own pipeline
does not run it (its lowering emits no such loops); a kernel author applies it to IR.
"""
from __future__ import annotations

import tvm_ffi
from tvm import ir, tirx

from .irutil import map_stmts, mentions, substitute, walk

__all__ = ["LoopUnswitching", "unswitch_loops"]


def _is_noop(stmt) -> bool:
    if stmt is None:
        return True
    if isinstance(stmt, tirx.Evaluate):
        return isinstance(stmt.value, tirx.IntImm)
    if isinstance(stmt, tirx.SeqStmt):
        return all(_is_noop(s) for s in stmt.seq)
    if isinstance(stmt, tirx.For):
        return _is_noop(stmt.body)
    return False


def _thread_vars(func) -> set[int]:
    found: set[int] = set()

    def visit(attr):
        if attr.attr_key == "thread_extent":
            var = attr.node.var if hasattr(attr.node, "var") else attr.node
            if str(getattr(attr.node, "thread_tag", getattr(var, "name", ""))).startswith("threadIdx"):
                found.add(var.__chandle__())

    def visit_loop(loop):
        binding = loop.thread_binding
        if binding is not None and str(binding.thread_tag).startswith("threadIdx"):
            found.add(loop.loop_var.__chandle__())

    walk(func.body, visit, (tirx.AttrStmt,))
    walk(func.body, visit_loop, (tirx.For,))
    return found


def _written(stmt) -> set[int]:
    found: set[int] = set()
    walk(stmt, lambda s: found.add(s.buffer.__chandle__()), (tirx.BufferStore,))
    return found


def _read(expr) -> set[int]:
    found: set[int] = set()
    walk(expr, lambda load: found.add(load.source.__chandle__()), (ir.TensorLoad,))
    return found


def _copy_loop(loop, body, var):
    return tirx.For(var, loop.min, loop.extent, loop.kind, body, loop.thread_binding, loop.annotations, loop.step)


def _top_level(body) -> list:
    return list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]


def unswitch_loops(func, allow_non_trivial_else: bool = False):
    """`func` with its loop-invariant `if`s hoisted (see the module doc)."""
    threads = _thread_vars(func)

    def invariant(cond, loop) -> bool:
        return not mentions(cond, threads | {loop.loop_var.__chandle__()}) and not _read(cond) & _written(loop.body)

    def rewrite(loop):
        stmts = _top_level(loop.body)
        cond = next((s.condition for s in stmts if isinstance(s, tirx.IfThenElse) and invariant(s.condition, loop)),
                    None)
        if cond is None:
            return loop
        taken, skipped = [], []
        for stmt in stmts:
            if isinstance(stmt, tirx.IfThenElse) and tvm_ffi.structural_equal(stmt.condition, cond):
                taken.append(stmt.then_case)
                skipped.append(stmt.else_case if stmt.else_case is not None
                               else tirx.Evaluate(tirx.IntImm("int32", 0)))
            else:
                taken.append(stmt)
                skipped.append(stmt)
        if not allow_non_trivial_else and not all(_is_noop(s) for s in skipped):
            return loop
        one = (lambda parts: parts[0] if len(parts) == 1 else tirx.SeqStmt(parts))
        then_loop = _copy_loop(loop, one(taken), loop.loop_var)
        fresh = tirx.Var("_" + loop.loop_var.name, loop.loop_var.ty.dtype)
        else_loop = _copy_loop(loop, substitute(one(skipped), {loop.loop_var: fresh}), fresh)
        return tirx.IfThenElse(cond, then_loop, else_loop)

    return func.with_body(map_stmts(func.body, (tirx.For,), rewrite, order="post"))


def LoopUnswitching():  # noqa: N802 - TileLang's pass name
    """`unswitch_loops` as a TVM pass over every PrimFunc of a module, reading
    `tl.disable_loop_unswitching` and `tl.loop_unswitching_allow_non_trivial_else` from the
    entered `PassContext`."""
    from .pass_context import ambient_configs

    def run(func, _mod, _ctx):
        configs = ambient_configs()
        if configs.get("tl.disable_loop_unswitching", False):
            return func
        return unswitch_loops(func, bool(configs.get("tl.loop_unswitching_allow_non_trivial_else", False)))

    return tirx.transform.prim_func_pass(run, opt_level=0, name="tl.LoopUnswitching")
