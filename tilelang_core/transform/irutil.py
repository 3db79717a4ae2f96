"""Small builders and walkers over TIR shared by the passes (loops, regions, substitution)."""
from __future__ import annotations

from typing import Callable, Iterable, Sequence

import tvm
import tvm_ffi
from tvm import tirx as tir
from tvm.sym import Analyzer

__all__ = [
    "const",
    "seq",
    "loop_nest",
    "substitute",
    "walk",
    "mentions",
    "map_stmts",
    "in_bounds",
    "is_global",
    "squeeze_extents",
    "region_indices",
    "zero",
    "analyzer",
    "is_scalar_buffer",
    "loosely_bounded",
]

_ANALYZER = Analyzer()


def analyzer() -> Analyzer:
    """The shared arithmetic analyzer (`tvm.sym.Analyzer`) for simplifying and proving."""
    return _ANALYZER


def is_scalar_buffer(buffer) -> bool:
    """A one-element local buffer: what TVMScript makes of a name the kernel assigns
    (`x: T.int32 = ...`, `q_idx = bx * 128 + i`)."""
    shape = list(buffer.shape)
    return buffer.scope() in ("local", "local.var") and len(shape) == 1 and isinstance(shape[0], tir.IntImm) \
        and int(shape[0]) == 1


def const(value, dtype: str = "int32") -> tir.Expr:
    """A TIR constant of `dtype` (int32 unless said)."""
    return tir.const(value, dtype)


def zero(dtype: str) -> tir.Expr:
    return tir.const(0, dtype)


def seq(stmts: Iterable[tir.Stmt]) -> tir.Stmt:
    """One statement from several, flattening nested sequences and dropping empty ones."""
    flat: list[tir.Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, tir.SeqStmt):
            flat.extend(s.seq)
        else:
            flat.append(s)
    if not flat:
        return tir.Evaluate(const(0))
    return flat[0] if len(flat) == 1 else tir.SeqStmt(flat)


def loop_nest(
    extents: Sequence[tir.Expr],
    body: Callable[[list[tir.Var]], tir.Stmt],
    names: str = "ijklmn",
    kind: tir.ForKind = tir.ForKind.SERIAL,
    inner_kind: tir.ForKind | None = None,
    prefix: str = "",
    span=None,
) -> tir.Stmt:
    """Nested loops over `extents`; `body(vars)` builds the innermost statement."""
    loop_vars = [tir.Var(f"{prefix}{names[i % len(names)]}{'' if i < len(names) else i}", "int32")
                 for i in range(len(extents))]
    stmt = body(loop_vars)
    for depth in reversed(range(len(extents))):
        k = inner_kind if (inner_kind is not None and depth == len(extents) - 1) else kind
        stmt = tir.For(loop_vars[depth], const(0), extents[depth], k, stmt, span=span)
    return stmt


def substitute(node, mapping: dict) -> object:
    """Replace variables by expressions everywhere in a statement or expression."""
    if not mapping:
        return node
    by_handle = {v.__chandle__(): e for v, e in mapping.items()}

    def on_var(v):
        return by_handle.get(v.__chandle__(), v)

    return tvm_ffi.structural_map(node, ((tir.Var,), on_var))


def _keep_errors(fn: Callable, box: list, returns_value: bool = True) -> Callable:
    """Wrap a callback so an exception it raises survives the C++ walk with its own type
    (the FFI would turn it into a RuntimeError)."""

    def wrapped(value):
        if box:
            return value if returns_value else None
        try:
            return fn(value)
        except BaseException as exc:  # noqa: BLE001 - re-raised by the caller below
            box.append(exc)
            return value if returns_value else None

    return wrapped


def walk(node, callback: Callable[[object], None], types: tuple = (object,)) -> None:
    """Call `callback` on every sub-node of the given types (post-order)."""
    box: list = []

    def visit(value):
        callback(value)

    tvm_ffi.structural_walk(node, ((types, _keep_errors(visit, box, returns_value=False)),))
    if box:
        raise box[0]


def mentions(node, handles: set[int]) -> bool:
    """Whether `node` names a variable whose handle (`var.__chandle__()`) is in `handles`."""
    found = []
    walk(node, lambda v: found.append(True) if v.__chandle__() in handles else None, (tir.Var,))
    return bool(found)


def map_stmts(node, types: tuple, fn: Callable, order: str = "post"):
    """Rewrite every statement of `types` with `fn` (returns the node or a replacement)."""
    box: list = []
    result = tvm_ffi.structural_map(node, ((types, _keep_errors(fn, box)),), order=order)
    if box:
        raise box[0]
    return result


def is_global(buffer: tir.Buffer) -> bool:
    return buffer.scope() == "global"


def in_bounds(buffer: tir.Buffer, indices: Sequence[tir.Expr], ana: Analyzer | None = None) -> tir.Expr | None:
    """The condition that `indices` lie inside a global buffer, or None when provably true.
    `ana` is an analyzer that knows the enclosing ranges (default: one that knows none)."""
    ana = ana if ana is not None else _ANALYZER
    conds = []
    for idx, dim in zip(indices, buffer.shape):
        checks = [idx < dim] + ([] if _non_negative(idx) else [idx >= 0])
        for cond in checks:
            if not ana.can_prove(cond):
                conds.append(cond)
    if not conds:
        return None
    out = conds[0]
    for c in conds[1:]:
        out = tir.And(out, c)
    return out


def _non_negative(expr) -> bool:
    """True when `expr` is built from variables (loop, block and thread indices and symbolic
    dims, all non-negative in our IR) and non-negative constants with + * // % only."""
    ok = True

    def visit(node):
        nonlocal ok
        if isinstance(node, (tir.Sub, tir.Cast, tir.Select, tir.Div, tir.Mod)) or type(node).__name__ in ("Call", "TensorLoad"):
            ok = False
        elif isinstance(node, (tir.IntImm, tir.FloatImm)) and node.value < 0:
            ok = False

    walk(expr, visit)
    return ok


_LOOSE_CALLS = ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right")


def loosely_bounded(index, reads: bool = True) -> bool:
    """Whether interval analysis bounds `index` only loosely: it divides, takes a remainder,
    uses bit operations (a swizzle, `index // 64`) or (with `reads`) reads memory. A range the
    analyzer gives for such an index may be far wider than the values it takes."""
    found = []

    def visit(node):
        if isinstance(node, (tir.FloorDiv, tir.FloorMod, tir.Div, tir.Mod)) or (
                reads and isinstance(node, tvm.ir.TensorLoad)):
            found.append(node)
        elif isinstance(node, tvm.ir.Call):
            name = str(getattr(node.op, "name", ""))
            if name.split(".")[-1] in _LOOSE_CALLS or (reads and not name.startswith("tir.")):
                found.append(node)

    visit(index)
    if not found:
        walk(index, visit, (tir.FloorDiv, tir.FloorMod, tir.Div, tir.Mod, tvm.ir.TensorLoad, tvm.ir.Call))
    return bool(found)


def squeeze_extents(extents: Sequence[tir.Expr]) -> list[int]:
    """Positions of the dimensions whose extent is not provably 1."""
    return [i for i, e in enumerate(extents) if not (isinstance(e, tir.IntImm) and e.value == 1)]


def region_indices(mins: Sequence[tir.Expr], extents: Sequence[tir.Expr],
                   loop_vars: Sequence[tir.Var]) -> list[tir.Expr]:
    """Indices of a region element: unit dims take their min, the others the loop vars in order."""
    keep = squeeze_extents(extents)
    out = list(mins)
    for pos, var in zip(keep, loop_vars):
        out[pos] = mins[pos] + var if not _is_zero(mins[pos]) else var
    return out


def _is_zero(e) -> bool:
    return isinstance(e, tir.IntImm) and e.value == 0
