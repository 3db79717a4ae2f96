"""Expressions of the C-family printer: precedence-aware, typed by dialect tables.

`CExprPrinter` is the expression half of `CStyleCodegen` (see cstyle.py for the dialect
attributes it reads). `expr(e)` returns C text; internally every node returns
(text, precedence) so parentheses appear only where C needs them.

Values of a dtype listed in `storage_types` (float16/bfloat16 where the C compiler lacks the
arithmetic) are computed in their *value dtype* (float32): a load converts, a store converts
back, a cast to the storage dtype rounds.
"""
from __future__ import annotations

import re

import math
import struct

from tvm import ir, tirx

from . import builtins
from .analysis import CodegenError, buffer_info, dtype_of, split_lanes

__all__ = ["CExprPrinter", "c_string_literal"]

# C precedence, higher binds tighter
PREC_ATOM, PREC_UNARY, PREC_MUL, PREC_ADD, PREC_SHIFT = 16, 15, 13, 12, 11
PREC_REL, PREC_EQ, PREC_BAND, PREC_BXOR, PREC_BOR, PREC_AND, PREC_OR, PREC_COND = 10, 9, 8, 7, 6, 5, 4, 3

_BINARY = {
    tirx.Add: ("+", PREC_ADD), tirx.Sub: ("-", PREC_ADD), tirx.Mul: ("*", PREC_MUL),
    tirx.LT: ("<", PREC_REL), tirx.LE: ("<=", PREC_REL), tirx.GT: (">", PREC_REL),
    tirx.GE: (">=", PREC_REL), tirx.EQ: ("==", PREC_EQ), tirx.NE: ("!=", PREC_EQ),
    tirx.And: ("&&", PREC_AND), tirx.Or: ("||", PREC_OR),
    tirx.BitwiseAnd: ("&", PREC_BAND), tirx.BitwiseOr: ("|", PREC_BOR),
    tirx.BitwiseXor: ("^", PREC_BXOR), tirx.LShift: ("<<", PREC_SHIFT),
    tirx.RShift: (">>", PREC_SHIFT),
}

_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", '"': '\\"', "\0": "\\0"}


def c_string_literal(text: str) -> str:
    """`text` as a C string literal: escapes, octal bytes for non-ASCII, no trigraphs."""
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch == "?":
            out.append("\\?")  # no trigraphs
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode("utf-8"))
    return '"' + "".join(out) + '"'


_CHEAP = (tirx.Add, tirx.Sub, tirx.Mul, tirx.Min, tirx.Max, tirx.LT, tirx.LE, tirx.GT, tirx.GE,
          tirx.EQ, tirx.NE, tirx.And, tirx.Or, tirx.Not, tirx.Cast, tirx.IntImm, tirx.FloatImm, ir.Var)


def _cheap(e) -> bool:
    """Pure, cheap and unable to fault: arithmetic without division over variables/constants."""
    if not isinstance(e, _CHEAP):
        return False
    if isinstance(e, ir.Var):
        return not tirx.is_buffer_var(e)
    return all(_cheap(c) for c in (getattr(e, "a", None), getattr(e, "b", None), getattr(e, "value", None))
               if c is not None and not isinstance(c, (int, float)))


def _short_op_name(name: str) -> str:
    for prefix in ("tirx.", "prim.", "tir."):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name



def _round_float16(value: float) -> float:
    """`value` rounded to the nearest float16 (ties to even; overflow to inf)."""
    try:
        return struct.unpack("<e", struct.pack("<e", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _round_bfloat16(value: float) -> float:
    """`value` rounded to the nearest bfloat16 (through float32, ties to even)."""
    if math.isnan(value) or math.isinf(value):
        return value
    try:
        (bits,) = struct.unpack("<I", struct.pack("<f", value))
    except OverflowError:
        return math.copysign(math.inf, value)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


# A constant of a 16-bit float type is that type's value, whatever type computes with it.
_ROUND_TO = {"float16": _round_float16, "bfloat16": _round_bfloat16}

# lane and warp queries called without sizes: the target's warp size (and 4 warps a group)
_WARP_SIZED_DEFAULTS = {
    "tl.get_lane_idx": ("{warp_size}",),
    "tl.get_warp_idx": ("{warp_size}",),
    "tl.get_warp_idx_sync": ("{warp_size}",),
    "tl.get_warp_group_idx": ("{warp_size}", "4"),
}


class CExprPrinter:
    """Expression printing; mixed into `CStyleCodegen`, which owns the state it reads."""

    # -- types ----------------------------------------------------------------------------

    def value_dtype(self, dtype: str) -> str:
        """The dtype a value of `dtype` is computed in (float32 for storage-only types)."""
        base, lanes = split_lanes(dtype)
        value = self.storage_types.get(base, {}).get("value", base)
        return value if lanes == 1 else f"{value}x{lanes}"

    def type_name(self, dtype: str) -> str:
        """The C type that stores a `dtype` (in memory, in a parameter)."""
        base, lanes = split_lanes(dtype)
        if lanes > 1:
            return self.vector_type(base, lanes)
        if base not in self.type_map:
            raise CodegenError(f"dtype {dtype!r} has no C type in the {self.language} dialect; "
                               f"supported: {', '.join(sorted(self.type_map))}")
        return self.type_map[base]

    def value_type_name(self, dtype: str) -> str:
        """The C type of a computed value of `dtype`."""
        return self.type_name(self.value_dtype(dtype))

    def vector_type(self, base: str, lanes: int) -> str:
        """The C type of a vector of `lanes` x `base` (dialects with vectors override)."""
        raise CodegenError(f"vector dtype {base}x{lanes} is not supported by the {self.language} dialect")

    # -- entry points ---------------------------------------------------------------------

    def expr(self, e) -> str:
        return self._expr(e)[0]

    def _paren(self, e, prec: int, right: bool = False) -> str:
        text, p = self._expr(e)
        return f"({text})" if p < prec or (right and p == prec) else text

    def _expr(self, e) -> tuple[str, int]:
        method = self._EXPR_HANDLERS.get(type(e))
        if method is not None:
            return getattr(self, method)(e)
        if type(e) in _BINARY:
            return self._binary(e)
        if isinstance(e, ir.Var):
            return self._var(e), PREC_ATOM
        raise CodegenError(f"the {self.language} printer cannot print a {type(e).__name__}: {e}")

    # -- leaves ---------------------------------------------------------------------------

    def _var(self, v) -> str:
        name = self.var_names.get(v)
        if name is None:
            raise CodegenError(f"variable {v.name!r} is used but never defined in the kernel "
                               f"(not a parameter, loop variable, thread index or binding)")
        return name

    def _int(self, e) -> tuple[str, int]:
        dtype, value = dtype_of(e), int(e.value)
        if dtype == "bool":
            return ("true" if value else "false"), PREC_ATOM
        if dtype.startswith("uint"):
            text = f"{value}U" if dtype != "uint64" else f"{value}ULL"
            return text, PREC_ATOM
        if dtype == "int64":
            text = f"{value}LL" if value != -(1 << 63) else "(-9223372036854775807LL - 1)"
        elif dtype == "int32" and value == -(1 << 31):
            text = "(-2147483647 - 1)"
        else:
            text = str(value)
        return text, (PREC_UNARY if value < 0 else PREC_ATOM)

    def float_literal(self, value: float, dtype: str) -> str:
        """A literal of the value dtype of `dtype` (float32 gets the `f` suffix)."""
        vdtype = self.value_dtype(dtype)
        ctype = self.type_name(vdtype)
        if vdtype != dtype and dtype in _ROUND_TO:  # a 16-bit float computed in a wider type
            value = _ROUND_TO[dtype](value)
        if math.isnan(value):
            return f"(({ctype}){self.nan_literal})"
        if math.isinf(value):
            return f"{'-' if value < 0 else ''}(({ctype}){self.inf_literal})"
        if vdtype == "float32":
            value = struct.unpack("f", struct.pack("f", value))[0]
            text = f"{value:.9g}"
        else:
            text = repr(float(value))
        if "e" not in text and "." not in text and "n" not in text:
            text += ".0"
        return text + self.float_suffix.get(vdtype, "")

    def _float(self, e) -> tuple[str, int]:
        text = self.float_literal(float(e.value), dtype_of(e))
        return text, (PREC_UNARY if text.startswith("-") else PREC_ATOM)

    def _string(self, e) -> tuple[str, int]:
        return c_string_literal(str(e.value)), PREC_ATOM

    # -- memory ---------------------------------------------------------------------------

    def flat_index(self, buffer, indices):
        """Row-major flat element index (respecting strides and elem_offset), simplified."""
        info = buffer_info(buffer)
        indices = list(indices)
        size = info.const_size()
        wide = size is not None and size >= (1 << 31)
        if wide:
            indices = [i if dtype_of(i) == "int64" else tirx.Cast("int64", i) for i in indices]
        if not indices:
            flat = tirx.IntImm("int32", 0)
        elif info.strides:
            flat = None
            for idx, stride in zip(indices, info.strides):
                term = idx * stride if not (isinstance(stride, tirx.IntImm) and stride.value == 1) else idx
                flat = term if flat is None else flat + term
        else:
            flat = indices[0]
            for idx, dim in zip(indices[1:], info.shape[1:]):
                flat = flat * dim + idx
        offset = info.elem_offset
        if offset is not None and not (isinstance(offset, tirx.IntImm) and offset.value == 0):
            flat = flat + offset
        return self.analyzer.simplify(flat)

    def buffer_ref(self, buffer, indices) -> str:
        """The C lvalue of one element (in its storage type): `A[i * 64 + j]` or a scalar name."""
        name = self.buffer_names.get(buffer)
        if name is None:
            raise CodegenError(f"buffer {buffer.name!r} is used but not declared in the kernel")
        if buffer in self.scalar_buffers:
            return name
        indices = list(indices)
        if indices and isinstance(indices[-1], tirx.Ramp):
            ramp = indices[-1]
            if len(indices) > 1:  # a vector along the last axis of a multi-dimensional buffer
                ramp = tirx.Ramp(self.flat_index(buffer, indices[:-1] + [ramp.base]), ramp.stride, ramp.lanes)
            return self.vector_ref(buffer, name, ramp)
        return f"{name}[{self.expr(self.flat_index(buffer, indices))}]"

    def vector_ref(self, buffer, name: str, ramp) -> str:
        """A vector lvalue for a contiguous Ramp index (`*(vec*)&A[base]`)."""
        if not (isinstance(ramp.stride, tirx.IntImm) and ramp.stride.value == 1):
            raise CodegenError(f"strided vector access {buffer.name}[{ramp}] is not supported; "
                               f"the core's vectorizer emits only unit-stride ramps")
        base = self.expr(self.flat_index(buffer, [ramp.base]))
        vtype = self.type_name(f"{buffer_info(buffer).dtype}x{int(ramp.lanes)}")
        return f"(*({vtype}*)(&{name}[{base}]))"

    @staticmethod
    def is_vector_load(e) -> bool:
        """Whether `e` loads several lanes of a buffer at once (a Ramp index)."""
        return isinstance(e, ir.TensorLoad) and tirx.is_buffer_var(e.source) and split_lanes(dtype_of(e))[1] > 1

    @staticmethod
    def is_vector_intrinsic(e) -> bool:
        """Whether `e` is a `builtins.INTRINSIC_OPS` call with a vector value (the packed ops),
        whose text is the stored bits of its lanes."""
        return (isinstance(e, ir.Call) and isinstance(e.op, ir.Op) and str(e.op.name) in builtins.INTRINSIC_OPS
                and split_lanes(dtype_of(e))[1] > 1)

    def _load(self, e) -> tuple[str, int]:
        buffer = e.source
        if not tirx.is_buffer_var(buffer):
            raise CodegenError(f"load from a non-buffer source {buffer}")
        ref = self.buffer_ref(buffer, e.indices)
        dtype = buffer_info(buffer).dtype
        conv = self.storage_types.get(dtype, {}).get("load")
        if conv:
            return conv.format(ref), PREC_ATOM
        return ref, PREC_ATOM

    def store_value(self, dtype: str, value_text: str) -> str:
        """Convert a computed value to the storage type of a `dtype` element."""
        conv = self.storage_types.get(split_lanes(dtype)[0], {}).get("store")
        return conv.format(value_text) if conv else value_text

    # -- operators ------------------------------------------------------------------------

    def _binary(self, e) -> tuple[str, int]:
        op, prec = _BINARY[type(e)]
        if prec in (PREC_AND, PREC_OR) and self.eager_logic and _cheap(e.a) and _cheap(e.b):
            # both sides are pure and cannot fault: `&`/`|` keep the loop free of branches,
            # which lets the vectorizer if-convert masked tile copies
            op, prec = ("&", PREC_BAND) if prec == PREC_AND else ("|", PREC_BOR)
        if prec in (PREC_SHIFT, PREC_BAND, PREC_BXOR, PREC_BOR):
            # C's precedence of bit operators surprises readers (and -Wparentheses): group
            return f"{self._paren(e.a, PREC_UNARY)} {op} {self._paren(e.b, PREC_UNARY)}", prec
        if prec == PREC_OR:
            return f"{self._paren(e.a, PREC_AND + 1)} {op} {self._paren(e.b, PREC_AND + 1)}", prec
        return f"{self._paren(e.a, prec)} {op} {self._paren(e.b, prec, right=True)}", prec

    def _is_float(self, e) -> bool:
        return split_lanes(self.value_dtype(dtype_of(e)))[0].startswith(("float", "bfloat"))

    def _div(self, e) -> tuple[str, int]:
        return f"{self._paren(e.a, PREC_MUL)} / {self._paren(e.b, PREC_MUL, right=True)}", PREC_MUL

    def _mod(self, e) -> tuple[str, int]:
        if self._is_float(e):
            return self._call_math("fmod", [e.a, e.b], dtype_of(e)), PREC_ATOM
        return f"{self._paren(e.a, PREC_MUL)} % {self._paren(e.b, PREC_MUL, right=True)}", PREC_MUL

    def _non_negative(self, a, b) -> bool:
        try:
            return self.analyzer.can_prove(a >= 0) and self.analyzer.can_prove(b > 0)
        except Exception:
            return False

    def _floordiv(self, e) -> tuple[str, int]:
        dtype = self.value_dtype(dtype_of(e))
        if self._is_float(e):
            quotient = f"{self._paren(e.a, PREC_MUL)} / {self._paren(e.b, PREC_MUL, right=True)}"
            return self.math_format("floor", dtype).format(quotient), PREC_ATOM
        if self._non_negative(e.a, e.b):
            return self._div(e)
        return self.int_helper("floordiv", dtype, e.a, e.b), PREC_ATOM

    def _floormod(self, e) -> tuple[str, int]:
        dtype = self.value_dtype(dtype_of(e))
        if self._is_float(e):
            a, b = self.expr(e.a), self.expr(e.b)
            floor = self.math_format("floor", dtype).format(f"({a}) / ({b})")
            return f"({a}) - {floor} * ({b})", PREC_ADD
        if self._non_negative(e.a, e.b):
            return f"{self._paren(e.a, PREC_MUL)} % {self._paren(e.b, PREC_MUL, right=True)}", PREC_MUL
        return self.int_helper("floormod", dtype, e.a, e.b), PREC_ATOM

    def int_helper(self, kind: str, dtype: str, a, b) -> str:
        """A call of the printer's integer helper (`tl_floordiv_i32(a, b)`), marking it used."""
        suffix = {"int32": "i32", "int64": "i64"}.get(dtype)
        if suffix is None:  # narrow ints compute in int32, unsigned ones never need a floor
            if dtype.startswith("uint"):
                op = "/" if kind == "floordiv" else "%"
                return f"({self.expr(a)}) {op} ({self.expr(b)})"
            suffix, a, b = "i32", self._as_int32(a), self._as_int32(b)
        self.used_helpers.add("intdiv")
        return f"tl_{kind}_{suffix}({self.expr(a)}, {self.expr(b)})"

    @staticmethod
    def _as_int32(e):
        if isinstance(e, tirx.IntImm):
            return tirx.IntImm("int32", int(e.value))
        return tirx.Cast("int32", e)

    def _minmax(self, e) -> tuple[str, int]:
        kind = "min" if isinstance(e, tirx.Min) else "max"
        return self._call_math(kind, [e.a, e.b], dtype_of(e)), PREC_ATOM

    def _not(self, e) -> tuple[str, int]:
        return f"!{self._paren(e.a, PREC_UNARY)}", PREC_UNARY

    def _bitnot(self, e) -> tuple[str, int]:
        return f"~{self._paren(e.a, PREC_UNARY)}", PREC_UNARY

    def _select(self, e) -> tuple[str, int]:
        return self.ternary(e.condition, e.true_value, e.false_value), PREC_COND

    def ternary(self, cond, a, b) -> str:
        # the condition is parenthesized unless atomic, for the reader's sake
        return f"{self._paren(cond, PREC_ATOM)} ? {self._paren(a, PREC_OR)} : {self._paren(b, PREC_COND)}"

    def _cast(self, e) -> tuple[str, int]:
        to, frm = dtype_of(e), dtype_of(e.value)
        vto, vfrm = self.value_dtype(to), self.value_dtype(frm)
        if vto == vfrm:
            text, prec = self._expr(e.value)
        else:
            text, prec = f"({self.type_name(vto)}){self._paren(e.value, PREC_UNARY)}", PREC_UNARY
        rounding = self.storage_types.get(to, {}).get("round") if to != frm else None
        if rounding:
            return rounding.format(text), PREC_ATOM
        return text, prec

    def _let(self, e) -> tuple[str, int]:
        name = self.names.fresh(e.var.name)
        self.pending_lines.append(f"{self.value_type_name(dtype_of(e.var))} {name} = {self.expr(e.value)};")
        self.var_names[e.var] = name
        return self._expr(e.body)

    def _ramp(self, e) -> tuple[str, int]:
        base, lanes = dtype_of(e.base), int(e.lanes)
        items = [self.expr(e.base + e.stride * i) for i in range(lanes)]
        return self.vector_literal(base, lanes, items), PREC_ATOM

    def _broadcast(self, e) -> tuple[str, int]:
        lanes = int(e.lanes)
        value = self.expr(e.value)
        return self.vector_literal(self.value_dtype(dtype_of(e.value)), lanes, [value] * lanes), PREC_ATOM

    def vector_literal(self, base: str, lanes: int, items: list[str]) -> str:
        return f"(({self.vector_type(base, lanes)}){{{', '.join(items)}}})"

    # -- calls ----------------------------------------------------------------------------

    def math_format(self, name: str, dtype: str, ops: dict | None = None) -> str:
        """The format string of math op `name` for values of `dtype` ({0}, {1}: arguments),
        from `ops` (default: the dialect's `math_ops`)."""
        table = (self.math_ops if ops is None else ops).get(name)
        if table is None:
            raise CodegenError(f"math op {name!r} has no {self.language} spelling; "
                               f"known: {', '.join(sorted(self.math_ops))}")
        vdtype = split_lanes(self.value_dtype(dtype))[0]
        kind = "float" if vdtype.startswith("float") else ("bool" if vdtype == "bool" else "int")
        for key in (vdtype, kind, "default"):
            if key in table:
                return table[key]
        raise CodegenError(f"math op {name!r} is not defined for {dtype} in the {self.language} dialect")

    def _call_math(self, name: str, args, dtype: str, ops: dict | None = None) -> str:
        vdtype = split_lanes(self.value_dtype(dtype))[0]
        ops = self.math_ops if ops is None else ops
        table = ops.get(name, {})
        if vdtype in ("float16", "bfloat16") and vdtype not in table and "float32" in table:
            # a 16-bit type the dialect computes natively but has no spelling for: via float32
            ctype = self.type_name(vdtype)
            inner = table["float32"].format(*[f"(float)({self.expr(a)})" for a in args])
            return f"(({ctype})({inner}))"
        fmt = self.math_format(name, dtype, ops)
        return fmt.format(*[self.expr(a) for a in args])

    def _fast_math(self, e) -> tuple[str, int]:
        """`T.__exp(x)`, ...: the dialect's hardware approximation of the function
        (`fast_math_ops`), or its accurate spelling where it declares none."""
        ops = getattr(self, "fast_math_ops", None) or self.math_ops
        return self._call_math(builtins.FAST_MATH_OPS[str(e.op.name)], e.args, dtype_of(e), ops), PREC_ATOM

    def _call(self, e) -> tuple[str, int]:
        op = e.op
        if not isinstance(op, ir.Op):
            raise CodegenError(f"call of a non-op {op}")
        name = str(op.name)
        handler = self.call_handlers().get(name)
        if handler is not None:
            return handler(e)
        short = _short_op_name(name)
        if short in self.math_ops:
            dtype = dtype_of(e.args[0]) if short in self.ARG_TYPED_OPS else dtype_of(e)
            return self._call_math(short, e.args, dtype), PREC_ATOM
        if name.startswith("tl."):
            raise CodegenError(f"{name} reached code generation: tile ops must be lowered by the "
                               f"core's passes first; builtins the printer knows: "
                               f"{', '.join(sorted(n for n in self.call_handlers() if n.startswith('tl.')))}, "
                               f"tl.sync_threads, tl.device_assert")
        raise CodegenError(f"the {self.language} printer has no rule for op {name!r} in {e}")

    # ops whose C spelling depends on the argument's dtype rather than the result's
    ARG_TYPED_OPS = frozenset({"isnan", "isinf", "isfinite", "popcount", "clz"})

    def call_handlers(self) -> dict:
        """Op name -> method(call) -> (text, prec). Dialects extend this table."""
        return {
            "tirx.call_extern": self._call_extern,
            "tirx.call_pure_extern": self._call_extern,
            "prim.if_then_else": lambda e: (self.ternary(*e.args), PREC_COND),
            "prim.likely": lambda e: self._expr(e.args[0]),
            "tirx.address_of": self._address_of,
            "tirx.buffer_data": lambda e: (self.buffer_names[e.args[0]], PREC_ATOM),
            "tirx.tvm_access_ptr": self._access_ptr,
            "tl.atomic_add": lambda e: self._atomic("add", e),
            "tl.atomic_max": lambda e: self._atomic("max", e),
            "tl.atomic_min": lambda e: self._atomic("min", e),
            "tl.atomic_or": lambda e: self._atomic("or", e),
            "tl.atomic_load": lambda e: self._atomic("load", e),
            "tl.atomic_store": lambda e: self._atomic("store", e),
            "tl.printf": lambda e: (self.printf_call(e.args), PREC_ATOM),
            "tirx.reinterpret": self._reinterpret,
            "tl.shfl_xor": self._shuffle_xor,
            "tl.dp4a": self._dp4a,
            **{name: self._intrinsic for name in builtins.INTRINSIC_OPS},
            **{name: self._fast_math for name in builtins.FAST_MATH_OPS},
        }

    def _intrinsic(self, e) -> tuple[str, int]:
        """A call of `builtins.INTRINSIC_OPS`, spelled by the dialect's `intrinsic_formats`
        (keyed by (name, rounding) when its last argument is a rounding mode)."""
        name = str(e.op.name)
        args = list(e.args)
        formats = getattr(self, "intrinsic_formats", {})
        if args and isinstance(args[-1], ir.StringImm) and str(args[-1].value) in builtins.ROUNDING_MODES:
            key = (name, str(args.pop().value))
        else:
            key = (name, dtype_of(e)) if (name, dtype_of(e)) in formats else name
        fmt = formats.get(key)
        if fmt is None:
            spelled = sorted(str(k) for k in formats if (k[0] if isinstance(k, tuple) else k) == name)
            also = f" (it spells {', '.join(spelled)})" if spelled else ""
            where = self.target if getattr(self, "target", None) is not None else self.language
            detail = "" if key == name else (f" rounding {key[1]!r}" if key[1] in builtins.ROUNDING_MODES
                                             else f" on {key[1]}")
            raise CodegenError(f"the kernel calls T.{name[3:]}{detail} "
                               f"({name}), which the {self.language} dialect of {where} does not "
                               f"provide{also}; remove the call or compile for a target that has it")
        self.used_intrinsics.add(name)
        if name.startswith("tl.rng_"):
            self.used_helpers.add("philox")
        caps = getattr(getattr(self, "target", None), "capabilities", None)
        warp_size = getattr(caps, "warp_size", 32) or 32
        # a vector operand loaded from a buffer is passed as its stored bits (the packed ops
        # compute on the storage words: two halves in one 32-bit word), never converted
        texts = [self.buffer_ref(a.source, a.indices) if self.is_vector_load(a) else self.expr(a) for a in args]
        if not texts and name in _WARP_SIZED_DEFAULTS:  # TileLang's defaults: the target's warp size
            texts = [d.format(warp_size=warp_size) for d in _WARP_SIZED_DEFAULTS[name]]
        return fmt.format(*texts, warp_size=warp_size), PREC_ATOM

    def _shuffle_xor(self, e) -> tuple[str, int]:
        """`tl.shfl_xor`; `shuffle_xor_format` over {0}: value, {1}: lane mask."""
        fmt = getattr(self, "shuffle_xor_format", None)
        if fmt is None:
            raise CodegenError(f"warp shuffles are not supported by the {self.language} dialect")
        return fmt.format(self.expr(e.args[0]), self.expr(e.args[1])), PREC_ATOM

    def _dp4a(self, e) -> tuple[str, int]:
        """`tl.dp4a(a, b, c)`: `dp4a_format`, else the portable helper `tl_dp4a`."""
        a, b, c = (self.expr(arg) for arg in e.args)
        if self.dp4a_format is None:
            self.used_helpers.add("dp4a")
            return f"tl_dp4a({a}, {b}, {c})", PREC_ATOM
        return self.dp4a_format.format(a, b, c), PREC_ATOM

    def _reinterpret(self, e) -> tuple[str, int]:
        """Bit cast; `reinterpret_format` over {0}: value, {1}: source type, {2}: target type."""
        if self.reinterpret_format is None:
            raise CodegenError(f"reinterpret is not supported by the {self.language} dialect")
        value = e.args[0]
        src, dst = self.type_name(dtype_of(value)), self.type_name(dtype_of(e))
        if isinstance(value, ir.TensorLoad) and tirx.is_buffer_var(value.source):
            # the stored bits, not the value a storage type converts to on load
            text = self.buffer_ref(value.source, value.indices)
        else:
            text = self.expr(value)
            if re.fullmatch(r"u?int(8|16)", dtype_of(value)):
                # C promotes narrower integer arithmetic to int: the bits to cast are the
                # expression's own type's, so convert back first (a 16-bit pattern into half)
                text = f"(({src})({text}))"
            else:  # a storage type's value is computed wider (half in float): store it first
                text = self.store_value(dtype_of(value), text)
        bits = self.reinterpret_format.format(text, src, dst)
        # ... and a storage-type result is computed in its value type like any load of it
        conv = self.storage_types.get(split_lanes(dtype_of(e))[0], {}).get("load")
        return (conv.format(bits), PREC_ATOM) if conv else (bits, PREC_ATOM)

    def _call_extern(self, e) -> tuple[str, int]:
        fname = str(e.args[0].value)
        return f"{fname}({', '.join(self.expr(a) for a in e.args[1:])})", PREC_ATOM

    def _address_of(self, e) -> tuple[str, int]:
        load = e.args[0]
        if not isinstance(load, ir.TensorLoad):
            raise CodegenError(f"address_of needs a buffer element, got {load}")
        return f"&{self.buffer_ref(load.source, load.indices)}", PREC_UNARY

    def _access_ptr(self, e) -> tuple[str, int]:
        """`tvm_access_ptr(type, data, offset, extent, mask)`: `data` (a buffer's base or
        `address_of` an element) plus `offset` elements."""
        _, data, offset, _, _ = e.args
        if isinstance(offset, tirx.IntImm) and offset.value == 0:
            return self._expr(data)
        return f"{self._paren(data, PREC_ADD)} + {self._paren(offset, PREC_ADD, right=True)}", PREC_ADD

    def _atomic(self, kind: str, e) -> tuple[str, int]:
        """`tl.atomic_<kind>(dst[, value][, order])` through `atomic_ops` and `memory_orders`."""
        from .builtins import MEMORY_ORDERS

        dst, *rest = e.args
        if not isinstance(dst, ir.TensorLoad):
            raise CodegenError(f"tl.atomic_{kind} needs a buffer element as its first argument, got {dst}")
        n_values = 0 if kind == "load" else 1
        values, order = rest[:n_values], (int(rest[n_values]) if len(rest) > n_values else 0)
        dtype = buffer_info(dst.source).dtype
        lanes = split_lanes(dtype_of(dst))[1]
        if lanes > 1:
            raise CodegenError(f"atomic {kind} of {lanes} consecutive {dtype} elements as one value (a vector "
                               f"atomic whose previous values are used, return_prev=True) is not supported by the "
                               f"{self.language} dialect; use return_prev=False, or one scalar atomic per element")
        fmt = self.atomic_ops.get((kind, dtype)) or self.atomic_ops.get(kind)
        if fmt is None:
            known = sorted(f"{k[0]}.{k[1]}" if isinstance(k, tuple) else k for k in self.atomic_ops)
            raise CodegenError(f"atomic {kind} on {dtype} is not supported by the {self.language} "
                               f"dialect; supported: {', '.join(known) or 'none'}")
        if self.memory_orders is None and order != 0:
            raise CodegenError(f"atomic {kind} with memory_order={MEMORY_ORDERS[order]!r}: the {self.language} "
                               f"dialect prints relaxed atomics only; leave memory_order out")
        ref = self.buffer_ref(dst.source, dst.indices)
        spelled = self.memory_orders[order] if self.memory_orders is not None else ""
        return fmt.format(f"&{ref}", *(self.expr(v) for v in values), order=spelled), PREC_ATOM

    def printf_call(self, args) -> str:
        fmt = args[0]
        if not isinstance(fmt, ir.StringImm):
            raise CodegenError(f"tl.printf needs a string format as its first argument, got {fmt}")
        self.used_helpers.add("printf")
        rest = []
        for a in args[1:]:
            text = self.expr(a)
            # varargs promote float to double but _Float16/vector values need an explicit cast
            if self._is_float(a) and self.value_dtype(dtype_of(a)) != "float64":
                text = f"(double)({text})"
            rest.append(text)
        return f"{self.printf_name}({', '.join([c_string_literal(str(fmt.value))] + rest)})"

    _EXPR_HANDLERS = {
        tirx.IntImm: "_int",
        tirx.FloatImm: "_float",
        ir.StringImm: "_string",
        ir.TensorLoad: "_load",
        ir.Call: "_call",
        tirx.Cast: "_cast",
        tirx.Div: "_div",
        tirx.Mod: "_mod",
        tirx.FloorDiv: "_floordiv",
        tirx.FloorMod: "_floormod",
        tirx.Min: "_minmax",
        tirx.Max: "_minmax",
        tirx.Not: "_not",
        tirx.BitwiseNot: "_bitnot",
        tirx.Select: "_select",
        tirx.Let: "_let",
        tirx.Ramp: "_ramp",
        tirx.Broadcast: "_broadcast",
    }
