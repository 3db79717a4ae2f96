"""What a C-family printer reads off a lowered PrimFunc before printing a line.

Types and buffers of the 0.27 IR (a buffer is a `Var` whose type is a `BufferType`), the
launch (grid and block extents from `thread_extent` attributes), the parameter contract, and
a table of unique, sanitized C names.
"""
from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Iterator

import tvm_ffi
from tvm import ir, tirx

from tilelang_core.runtime.base import ParamSpec

__all__ = [
    "CodegenError",
    "dtype_of",
    "split_lanes",
    "BufferInfo",
    "buffer_info",
    "LaunchInfo",
    "find_launch",
    "launch_expr",
    "param_specs",
    "NameTable",
    "iter_stmts",
    "iter_exprs",
    "primfunc_of",
]

THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")


class CodegenError(ValueError):
    """The lowered IR holds something this printer cannot express; names the node and the fix."""


def dtype_of(expr) -> str:
    """The dtype of an expression as a string ("float32", "int32x4", "handle", "void", "string")."""
    ty = expr.ty
    if isinstance(ty, ir.PrimType):
        text = str(ty.dtype)
        return text or "void"
    if isinstance(ty, ir.PointerType):
        return "handle"
    if isinstance(ty, tirx.BufferType):
        return "handle"
    if isinstance(ty, ir.StringType):
        return "string"
    raise CodegenError(f"expression {expr} has no primitive type ({type(ty).__name__})")


def split_lanes(dtype: str) -> tuple[str, int]:
    """"float32x4" -> ("float32", 4); "float32" -> ("float32", 1)."""
    m = re.fullmatch(r"([a-z][a-z0-9_]*?)x(\d+)", dtype)
    if m:
        return m.group(1), int(m.group(2))
    return dtype, 1


@dataclass(frozen=True)
class BufferInfo:
    """A buffer's type, read from its `BufferType`."""

    var: object
    name: str
    dtype: str
    scope: str
    shape: tuple
    strides: tuple
    elem_offset: object

    def const_size(self) -> int | None:
        """Number of elements when every dimension is a constant, else None."""
        total = 1
        for dim in self.shape:
            if not isinstance(dim, tirx.IntImm):
                return None
            total *= int(dim.value)
        return total

    def size_expr(self):
        total = tirx.IntImm("int64", 1)
        for dim in self.shape:
            total = total * tirx.Cast("int64", dim) if dim.ty.dtype != "int64" else total * dim
        return total


def buffer_info(var) -> BufferInfo:
    """The facts of a buffer variable the printer needs (name, dtype, shape, strides, scope,
    elem_offset); a CodegenError when `var` is not a buffer."""
    ty = var.ty
    if not isinstance(ty, tirx.BufferType):
        raise CodegenError(f"{var} is not a buffer")
    elem_offset = ty.elem_offset
    return BufferInfo(
        var=var,
        name=var.name,
        dtype=str(ty.dtype.dtype) if isinstance(ty.dtype, ir.PrimType) else str(ty.dtype),
        scope=str(ty.storage_scope) or "global",
        shape=tuple(ty.shape),
        strides=tuple(ty.strides),
        elem_offset=elem_offset,
    )


def primfunc_of(module) -> tuple[str, tirx.PrimFunc]:
    """The (entry name, PrimFunc) of a PrimFunc or of an IRModule holding exactly one."""
    if isinstance(module, tirx.PrimFunc):
        func = module
        name = None
    else:
        funcs = [(gv.name_hint, f) for gv, f in module.functions.items() if isinstance(f, tirx.PrimFunc)]
        if len(funcs) != 1:
            names = ", ".join(n for n, _ in funcs) or "none"
            raise CodegenError(f"expected one PrimFunc to print, found: {names}")
        name, func = funcs[0]
    attrs = func.attrs
    if attrs is not None and "global_symbol" in attrs:
        name = str(attrs["global_symbol"])
    return name or "main_kernel", func


# ---------------------------------------------------------------------------------------------
# Walking
# ---------------------------------------------------------------------------------------------


def _stmt_children(stmt) -> list:
    if isinstance(stmt, tirx.SeqStmt):
        return list(stmt.seq)
    if isinstance(stmt, tirx.IfThenElse):
        return [stmt.then_case] + ([stmt.else_case] if stmt.else_case is not None else [])
    if isinstance(stmt, (tirx.For, tirx.While, tirx.AttrStmt)):
        return [stmt.body]
    return []


def iter_stmts(stmt) -> Iterator:
    """Every statement under `stmt` (itself included), parents before children."""
    stack = [stmt]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(_stmt_children(node)))


def _expr_children(expr) -> list:
    if isinstance(expr, ir.TensorLoad):
        return list(expr.indices)
    if isinstance(expr, ir.Call):
        return list(expr.args)
    if isinstance(expr, (tirx.Cast, tirx.Broadcast)):
        return [expr.value]
    if isinstance(expr, (tirx.Not, tirx.BitwiseNot)):
        return [expr.a]
    if isinstance(expr, tirx.Select):
        return [expr.condition, expr.true_value, expr.false_value]
    if isinstance(expr, tirx.Let):
        return [expr.value, expr.body]
    if isinstance(expr, tirx.Ramp):
        return [expr.base, expr.stride]
    if isinstance(expr, tirx.Shuffle):
        return list(expr.vectors)
    if hasattr(expr, "a") and hasattr(expr, "b"):
        return [expr.a, expr.b]
    return []


def _stmt_exprs(stmt) -> list:
    if isinstance(stmt, tirx.BufferStore):
        return [stmt.value, *stmt.indices]
    if isinstance(stmt, tirx.Evaluate):
        return [stmt.value]
    if isinstance(stmt, tirx.Bind):
        return [stmt.value]
    if isinstance(stmt, (tirx.IfThenElse, tirx.While)):
        return [stmt.condition]
    if isinstance(stmt, tirx.For):
        return [stmt.min, stmt.extent]
    if isinstance(stmt, tirx.AssertStmt):
        return [stmt.condition]
    if isinstance(stmt, tirx.AttrStmt) and isinstance(stmt.value, ir.Expr):
        return [stmt.value]
    if isinstance(stmt, tirx.DeclBuffer):
        return [stmt.data]
    return []


def iter_exprs(stmt) -> Iterator:
    """Every expression (and sub-expression) under the statement `stmt`."""
    for node in iter_stmts(stmt):
        stack = list(_stmt_exprs(node))
        while stack:
            expr = stack.pop()
            yield expr
            stack.extend(_expr_children(expr))


# ---------------------------------------------------------------------------------------------
# Launch
# ---------------------------------------------------------------------------------------------


@dataclass
class LaunchInfo:
    """Grid and block of a kernel, read from its `thread_extent` attributes.

    `grid`/`block` hold ints or launch expressions (strings, in the language of
    `eval_launch_expr`); `extents` maps a thread tag ("blockIdx.x") to its extent expression
    and `vars` maps it to the IR variable bound to it.
    """

    grid: tuple = (1, 1, 1)
    block: tuple = (1, 1, 1)
    extents: dict = field(default_factory=dict)
    vars: dict = field(default_factory=dict)

    def has_threads(self) -> bool:
        return any(tag in self.extents for tag in THREAD_TAGS)


def find_launch(body, names: dict) -> LaunchInfo:
    """Collect every `thread_extent` attribute under `body`.

    `names` maps IR variables (the symbolic parameters) to the names used in launch strings.
    """
    info = LaunchInfo()
    for stmt in iter_stmts(body):
        if not (isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == "thread_extent"):
            continue
        iv = stmt.node
        tag = str(iv.thread_tag)
        if tag in info.extents:
            if not tvm_ffi.structural_equal(info.extents[tag], stmt.value):
                raise CodegenError(f"{tag} is launched twice with different extents: "
                                   f"{info.extents[tag]} and {stmt.value}")
            continue
        if tag not in THREAD_TAGS + BLOCK_TAGS:
            raise CodegenError(f"unknown thread tag {tag!r} in a thread_extent attribute")
        info.extents[tag] = stmt.value
        info.vars[tag] = iv.var
    info.grid = tuple(launch_expr(info.extents[t], names) if t in info.extents else 1 for t in BLOCK_TAGS)
    info.block = tuple(launch_expr(info.extents[t], names) if t in info.extents else 1 for t in THREAD_TAGS)
    return info


_LAUNCH_BINOPS = {
    tirx.Add: ("+", 1), tirx.Sub: ("-", 1), tirx.Mul: ("*", 2),
    tirx.FloorDiv: ("//", 2), tirx.FloorMod: ("%", 2),
}


def launch_expr(expr, names: dict) -> int | str:
    """A TIR integer expression over parameters, as an int or a launch-expression string."""
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)

    def text(e, parent_prec: int = 0, right: bool = False) -> str:
        if isinstance(e, tirx.IntImm):
            return str(int(e.value))
        if isinstance(e, ir.Var):
            if e not in names:
                raise CodegenError(f"launch extent {expr} uses {e.name!r}, which is not a scalar "
                                   f"parameter of the kernel; pass it as an int32 parameter")
            return names[e]
        if isinstance(e, tirx.Cast):
            return text(e.value, parent_prec, right)
        if isinstance(e, (tirx.Min, tirx.Max)):
            return f"{'min' if isinstance(e, tirx.Min) else 'max'}({text(e.a)}, {text(e.b)})"
        if isinstance(e, (tirx.Div, tirx.Mod)):
            # truncating division of non-negative extents equals floor division
            op, prec = ("//", 2) if isinstance(e, tirx.Div) else ("%", 2)
        elif type(e) in _LAUNCH_BINOPS:
            op, prec = _LAUNCH_BINOPS[type(e)]
        else:
            raise CodegenError(f"launch extent {expr} uses {type(e).__name__}, which a launch "
                               f"expression cannot say (ints, + - * // %, min, max)")
        s = f"{text(e.a, prec)} {op} {text(e.b, prec, True)}"
        return f"({s})" if prec < parent_prec or (right and prec == parent_prec) else s

    return text(expr)


# ---------------------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------------------


def _dim(expr, names: dict) -> int | str:
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    if isinstance(expr, ir.Var) and expr in names:
        return names[expr]
    return launch_expr(expr, names)


def param_specs(func, names: dict | None = None) -> tuple[ParamSpec, ...]:
    """The kernel's parameters as the caller sees them: tensors with shapes, then scalars.

    Symbolic dimensions are named by `names` (IR variable -> name; default the IR names).
    """
    if names is None:
        names = {p: p.name for p in func.params if not tirx.is_buffer_var(p)}
    specs = []
    for p in func.params:
        if tirx.is_buffer_var(p):
            b = buffer_info(p)
            strides = tuple(_dim(s, names) for s in b.strides) if b.strides else None
            specs.append(ParamSpec(names.get(p, p.name), "tensor", b.dtype,
                                   tuple(_dim(d, names) for d in b.shape), strides))
        else:
            specs.append(ParamSpec(names.get(p, p.name), "scalar", dtype_of(p)))
    return tuple(specs)


# ---------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------

C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline
int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while _Bool _Complex _Imaginary _Alignas _Alignof _Atomic _Generic _Noreturn
_Static_assert _Thread_local bool true false NULL main class namespace template this new delete
private public protected operator virtual friend typename using half float4 int4 uint
""".split())


class NameTable:
    """Unique, sanitized C identifiers for IR variables and buffers.

    The same IR object always gets the same name; two objects with the same IR name get
    `x`, `x_1`, ... Names in `reserved` (keywords, the dialect's own identifiers) are never
    handed out.
    """

    def __init__(self, reserved=()) -> None:
        self._taken = set(C_KEYWORDS) | set(reserved) | set(keyword.kwlist)
        self._names: dict = {}

    @staticmethod
    def sanitize(name: str) -> str:
        name = re.sub(r"[^0-9A-Za-z_]", "_", name or "v")
        if name[0].isdigit():
            name = "v" + name
        return name

    def fresh(self, hint: str, internal: bool = False) -> str:
        """A new unique name from `hint`; only `internal` names may start with `tl_` (the
        prefix of the printer's and the dialects' own identifiers)."""
        base = self.sanitize(hint)
        if base.startswith("tl_") and not internal:
            base = "u" + base
        name, i = base, 1
        while name in self._taken:
            name = f"{base}_{i}"
            i += 1
        self._taken.add(name)
        return name

    def get(self, obj, hint: str | None = None) -> str:
        if obj not in self._names:
            self._names[obj] = self.fresh(hint if hint is not None else obj.name)
        return self._names[obj]

    def __contains__(self, obj) -> bool:
        return obj in self._names

    def reserve(self, name: str) -> None:
        self._taken.add(name)
