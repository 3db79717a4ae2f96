"""Bounds guards the launch makes true are dropped.

The portable lowerings mask every global access (`if row < M: C[row, col] = ...`), because a
tile may hang over a tensor's edge. When the tensor is a whole number of tiles the guard is
always true, but only the ranges of the loop, thread and block indices prove it; a guard left
in costs a compare and a branch per element (in a GEMM epilogue, most of its instructions).

`simplify_guards` proves each conjunct of an `if` without `else`, and of the condition of a
masked load `if_then_else(cond, value, other)`, with an analyzer that knows:

- every loop variable's range (a variable used by loops of different ranges is left unknown);
- every `thread_extent` variable's range;
- the variables a pass recorded under `ctx.facts[VAR_RANGES]` as {var: extent}, meaning the
  variable's value lies in [0, extent) wherever it is bound (e.g. a block index remapped by
  rasterization, which is a bijection of the grid);
- the values of variables bound once by `Bind`.

A conjunct it cannot prove stays; a guard whose conjuncts are all proven goes (a masked load
becomes its value), and an `if_then_else` whose condition is proven false becomes its other
value (TileLang's attention writes `if_then_else(k * bN + j >= seq_len, -inf, 0)` each step). Nothing else
changes, so results never change.
"""
from __future__ import annotations

from tvm import ir as _ir
from tvm import tirx as tir
from tvm.sym import Analyzer

from .irutil import map_stmts, walk

__all__ = ["simplify_guards", "VAR_RANGES"]

VAR_RANGES = "var_ranges"  # ctx.facts key: {tir.Var: extent}, the var lies in [0, extent)


def _conjuncts(cond: tir.Expr) -> list[tir.Expr]:
    if isinstance(cond, tir.And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


def _join(conds: list[tir.Expr]) -> tir.Expr:
    out = conds[0]
    for c in conds[1:]:
        out = tir.And(out, c)
    return out


def _analyzer(func: tir.PrimFunc, known: dict | None) -> Analyzer:
    """An analyzer bound to the ranges that hold wherever each variable is used."""
    ranges: dict = {}
    values: dict = {}
    ambiguous: set = set()

    def note(table, var, item, same):
        if var in ambiguous:
            return
        if var in table and not same(table[var], item):
            ambiguous.add(var)
            del table[var]
        else:
            table[var] = item

    def same_range(a, b):
        return all(isinstance(x, tir.IntImm) and isinstance(y, tir.IntImm) and x.value == y.value
                   for x, y in ((a[0], b[0]), (a[1], b[1])))

    def visit(node):
        if isinstance(node, tir.For):
            note(ranges, node.loop_var, (node.min, node.extent), same_range)
        elif isinstance(node, tir.AttrStmt) and node.attr_key == "thread_extent":
            note(ranges, node.node.var, (tir.const(0, "int32"), node.value), same_range)
        elif isinstance(node, tir.Bind):
            note(values, node.var, node.value, lambda a, b: a.same_as(b))

    walk(func.body, visit, (tir.For, tir.AttrStmt, tir.Bind))
    ana = Analyzer()
    for var, (lo, extent) in ranges.items():
        if isinstance(lo, tir.IntImm) and isinstance(extent, tir.IntImm):
            ana.bind(var, _ir.Range.from_min_extent(lo, extent))
    known = {v: e for v, e in (known or {}).items()
             if v not in ranges and v not in ambiguous and isinstance(e, (int, tir.IntImm))}
    for var, extent in known.items():
        ana.bind(var, _ir.Range.from_min_extent(0, extent))
    for var, value in values.items():
        # a pointer value (`T.make_tensor(table[i], ...)`'s address) is no number to reason about
        if var not in known and var not in ranges and isinstance(value.ty, _ir.PrimType):
            ana.bind(var, value)
    return ana


def simplify_guards(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Drop the conjuncts of `if` guards (without `else`) that the launch proves true."""
    found = []
    walk(func.body, lambda n: found.append(n), (tir.IfThenElse, _ir.Call))
    if not any(isinstance(n, tir.IfThenElse) or _is_select_call(n) for n in found):
        return func
    ana = _analyzer(func, ctx.facts.get(VAR_RANGES) if ctx is not None else None)

    def remaining(cond):
        """`cond` less its proven conjuncts: None when all are proven, `cond` when none is."""
        parts = _conjuncts(cond)
        left = [c for c in parts if not _proven(ana, c)]
        if not left:
            return None
        return cond if len(left) == len(parts) else _join(left)

    def on_if(stmt: tir.IfThenElse):
        if stmt.else_case is not None:
            return stmt
        rest = remaining(stmt.condition)
        if rest is None:
            return stmt.then_case
        return stmt if rest.same_as(stmt.condition) else tir.IfThenElse(rest, stmt.then_case, None, span=stmt.span)

    def on_call(call: _ir.Call):
        if not _is_select_call(call):
            return call
        cond, value, other = call.args
        if _proven(ana, tir.Not(cond)):  # e.g. a mask past the sequence end that never hits
            return other
        rest = remaining(cond)
        if rest is None:
            return value
        return call if rest.same_as(cond) else tir.if_then_else(rest, value, other, span=call.span)

    return func.with_body(map_stmts(func.body, (tir.IfThenElse, _ir.Call), lambda n: on_if(n) if isinstance(
        n, tir.IfThenElse) else on_call(n)))


def _is_select_call(node) -> bool:
    return isinstance(node, _ir.Call) and str(getattr(node.op, "name", "")).endswith("if_then_else")


def _proven(ana: Analyzer, cond: tir.Expr) -> bool:
    try:
        return bool(ana.can_prove(cond))
    except Exception:  # an expression the analyzer cannot take (e.g. a float compare): keep it
        return False
