"""Math with an explicit rounding mode and packed two-lane arithmetic (TileLang's
`T.ieee_add(x, y, "rn")` ... `T.fast_rcp(x)`, `T.add2(a, b)` ...).

`T.ieee_<op>(..., rounding_mode)` computes one IEEE operation rounded as asked: "rn" (to
nearest even), "rz" (toward zero), "ru" (up), "rd" (down); it is never contracted with a
neighbouring operation into an FMA. A dialect spells it from `intrinsic_formats` (CUDA
`__fadd_rn`, ...); one without a spelling for a mode refuses the kernel naming it (the CPU
dialect has round-to-nearest only).

`T.add2`, `T.sub2`, `T.mul2`, `T.fma2`, `T.max2`, `T.min2`, `T.abs2` take two-lane vectors
(`float16x2`, `bfloat16x2`, `float32x2`, e.g. `T.float16x2(a, b)` or a 2-element vector load)
and compute lane by lane: `tl.add2`, ... calls that a dialect spells per vector dtype (CUDA
`__hadd2`, `__hfma2`, ... on the 32-bit word of two halves).

`T.__exp`, `T.__exp10`, `T.__log`, `T.__log2`, `T.__log10`, `T.__tan`, `T.__cos`, `T.__sin`
(TileLang's fast math) compute the function approximately, whatever the kernel's fast-math
option: a dialect spells them with its hardware approximations (CUDA `__expf`, ...) and one
without approximations with its accurate functions. They take float16, bfloat16, float32 and
float64 values and refuse others.
"""
from __future__ import annotations

from typing import Any

from tvm import ir, tirx

from tilelang_core.codegen import builtins

__all__ = [
    "__cos", "__exp", "__exp10", "__log", "__log10", "__log2", "__sin", "__tan",
    "abs2", "add2", "fast_rcp", "fma2", "ieee_add", "ieee_fdiv", "ieee_fmaf", "ieee_frcp", "ieee_frsqrt",
    "ieee_fsqrt", "ieee_mul", "ieee_sub", "max2", "min2", "mul2", "sub2",
]

_PACKED_X2 = ("float16x2", "bfloat16x2", "float32x2")


class PackedDtypeError(TypeError, ValueError):
    """Two-lane operands of different dtypes (a TypeError here, a ValueError in TileLang)."""


def _float(value: Any, name: str) -> ir.Expr:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return tirx.const(float(value), "float32")
    if isinstance(value, ir.Expr) and str(value.ty.dtype).startswith(("float", "bfloat")):
        return value
    raise TypeError(f"T.{name}: operands must be floating-point expressions, got "
                    f"{getattr(getattr(value, 'ty', None), 'dtype', type(value).__name__)} {value!r}")


def _rounding(mode: Any, name: str) -> ir.StringImm:
    if mode not in builtins.ROUNDING_MODES:
        raise ValueError(f"T.{name}: Invalid rounding mode {mode!r}; rounding_mode must be one of "
                         f"{', '.join(builtins.ROUNDING_MODES)}")
    return ir.StringImm(mode)


_HALF = ("float16", "bfloat16")


def _ieee(name: str, operands: tuple, rounding_mode: Any = None) -> ir.Call:
    rounding = [] if rounding_mode is None else [_rounding(rounding_mode, name)]
    values = [_float(v, name) for v in operands]
    dtype = str(values[0].ty.dtype)
    for v in values[1:]:
        if str(v.ty.dtype) != dtype:
            raise TypeError(f"T.{name}: operands must share a dtype, got {dtype} and {v.ty.dtype}")
    if dtype not in ("float32", "float64") + _HALF:
        raise TypeError(f"T.{name}: IEEE-rounded operations take float16, bfloat16, float32 or float64, "
                        f"got {dtype}; cast first")
    if dtype in _HALF and rounding_mode not in (None, "rn"):
        # the half-precision instructions round to nearest even only
        raise ValueError(f"T.{name}: Only rounding mode 'rn' is available for half precision ({dtype}), "
                         f"got {rounding_mode!r}; cast to float32 for another mode")
    if name == "ieee_frsqrt" and dtype == "float64":
        # no correctly rounded double reciprocal square root: rcp(sqrt(x)) rounds twice
        raise TypeError("T.ieee_frsqrt: frsqrt is not supported for float64 (no correctly rounded "
                        "double-precision rsqrt); use T.ieee_frcp(T.ieee_fsqrt(x)) and accept two roundings")
    return builtins.intrinsic(dtype, name, *values, *rounding)


def ieee_add(x: Any, y: Any, rounding_mode: str = "rn") -> ir.Call:
    """`x + y`, rounded as `rounding_mode` says (`__fadd_rn`, ...)."""
    return _ieee("ieee_add", (x, y), rounding_mode)


def ieee_sub(x: Any, y: Any, rounding_mode: str = "rn") -> ir.Call:
    """`x - y`, rounded as `rounding_mode` says."""
    return _ieee("ieee_sub", (x, y), rounding_mode)


def ieee_mul(x: Any, y: Any, rounding_mode: str = "rn") -> ir.Call:
    """`x * y`, rounded as `rounding_mode` says."""
    return _ieee("ieee_mul", (x, y), rounding_mode)


def ieee_fdiv(x: Any, y: Any, rounding_mode: str = "rn") -> ir.Call:
    """`x / y`, rounded as `rounding_mode` says."""
    return _ieee("ieee_fdiv", (x, y), rounding_mode)


def ieee_fmaf(x: Any, y: Any, z: Any, rounding_mode: str = "rn") -> ir.Call:
    """`x * y + z` rounded once, as `rounding_mode` says."""
    return _ieee("ieee_fmaf", (x, y, z), rounding_mode)


def ieee_frcp(x: Any, rounding_mode: str = "rn") -> ir.Call:
    """`1 / x`, rounded as `rounding_mode` says."""
    return _ieee("ieee_frcp", (x,), rounding_mode)


def ieee_fsqrt(x: Any, rounding_mode: str = "rn") -> ir.Call:
    """`sqrt(x)`, rounded as `rounding_mode` says."""
    return _ieee("ieee_fsqrt", (x,), rounding_mode)


def ieee_frsqrt(x: Any) -> ir.Call:
    """`1 / sqrt(x)`, rounded to nearest."""
    return _ieee("ieee_frsqrt", (x,))


def fast_rcp(x: Any) -> ir.Call:
    """An approximate `1 / x` (the hardware's reciprocal; about 1 ulp on CUDA)."""
    value = _float(x, "fast_rcp")
    return builtins.intrinsic(str(value.ty.dtype), "fast_rcp", value)


# -- packed two-lane arithmetic ---------------------------------------------------------------

def _packed(name: str, *operands: Any) -> list:
    for v in operands:
        dtype = str(getattr(getattr(v, "ty", None), "dtype", type(v).__name__))
        if not isinstance(v, ir.Expr) or dtype not in _PACKED_X2:
            raise TypeError(f"T.{name}: operands must be two-lane vectors ({', '.join(_PACKED_X2)}), got {dtype} {v!r}")
    dtypes = {str(v.ty.dtype) for v in operands}
    if len(dtypes) > 1:
        raise PackedDtypeError(f"T.{name}: operands must have the same dtype, got {', '.join(sorted(dtypes))}")
    return list(operands)


def _packed_call(name: str, *operands: Any) -> tuple:
    values = _packed(name, *operands)
    return (str(values[0].ty.dtype), name, *values)


def add2(x: Any, y: Any) -> ir.Expr:
    """Lane-wise `x + y` of two-lane vectors."""
    return builtins.intrinsic(*_packed_call("add2", x, y))


def sub2(x: Any, y: Any) -> ir.Expr:
    """Lane-wise `x - y` of two-lane vectors."""
    return builtins.intrinsic(*_packed_call("sub2", x, y))


def mul2(x: Any, y: Any) -> ir.Expr:
    """Lane-wise `x * y` of two-lane vectors."""
    return builtins.intrinsic(*_packed_call("mul2", x, y))


def fma2(x: Any, y: Any, z: Any) -> ir.Expr:
    """Lane-wise `x * y + z` of two-lane vectors."""
    return builtins.intrinsic(*_packed_call("fma2", x, y, z))


def max2(x: Any, y: Any) -> ir.Expr:
    """Lane-wise maximum of two-lane vectors."""
    return builtins.intrinsic(*_packed_call("max2", x, y))


def min2(x: Any, y: Any) -> ir.Expr:
    """Lane-wise minimum of two-lane vectors."""
    return builtins.intrinsic(*_packed_call("min2", x, y))


def abs2(x: Any) -> ir.Expr:
    """Lane-wise absolute value of a two-lane vector."""
    return builtins.intrinsic(*_packed_call("abs2", x))


_FAST_MATH_DTYPES = ("float16", "bfloat16", "float32", "float64")


def _fast_math(name: str):
    def approximate(x: Any) -> ir.Call:
        value = tirx.const(float(x), "float32") if isinstance(x, (int, float)) and not isinstance(x, bool) else x
        dtype = str(getattr(getattr(value, "ty", None), "dtype", type(value).__name__))
        if dtype not in _FAST_MATH_DTYPES:
            raise TypeError(f"T.__{name} only supports floating-point inputs, but got {dtype}; cast the value to "
                            f"one of {', '.join(_FAST_MATH_DTYPES)}")
        return tirx.call_intrin(dtype, f"tl.__{name}", value)

    approximate.__name__ = approximate.__qualname__ = f"__{name}"
    approximate.__doc__ = f"An approximate {name}(x) (fast math), of x's float dtype."
    return approximate


__exp, __exp10, __log, __log2 = (_fast_math(n) for n in ("exp", "exp10", "log", "log2"))
__log10, __tan, __cos, __sin = (_fast_math(n) for n in ("log10", "tan", "cos", "sin"))
