"""Dtypes of the language: `T.float16` is the string "float16" that is also callable.

`T.float32(1.0)` makes a constant (or casts an expression), `T.float32()` declares a scalar
(`x: T.float32`), and the same object serves wherever a dtype string is expected (`T.Tensor`,
`T.alloc_shared`), which TVMScript's own dtype constructors do not.
"""
from __future__ import annotations

import re as _re
from typing import Any

from tvm import ir
from tvm.tirx.script.builder import ir as _builder

__all__ = ["DType", "DTYPE_ALIASES", "DTYPES", "to_dtype"]

# TileLang / PyTorch spellings -> TVM dtype names
DTYPE_ALIASES = {
    "float": "float32",
    "half": "float16",
    "double": "float64",
    "int": "int32",
    "uint": "uint32",
    "long": "int64",
    "short": "int16",
    "char": "int8",
    "e4m3_float8": "float8_e4m3fn",
    "e5m2_float8": "float8_e5m2",
    "float8_e4m3": "float8_e4m3fn",
}


_TVM_DTYPE_PREFIXES = ("float", "int", "uint", "bool", "bfloat")


class DType(str):
    """A dtype name that is also TVMScript's constructor for that dtype. TileLang's and
    PyTorch's short spellings are canonical names here: `T.dtype("uint") == T.uint32`."""

    def __new__(cls, name: Any = "") -> "DType":
        text = str(name)
        return super().__new__(cls, DTYPE_ALIASES.get(text, text))

    def __call__(self, value: Any = None) -> ir.Expr:
        if value is None:
            # a scalar declaration, as `T.int32()` in TVMScript (`n: T.int32`, `x: T.int32 = 0`)
            return _constructor(self)()
        if isinstance(value, ir.Expr):
            if str(value.ty) == str(self):
                return value
            return _builder.cast(value, str(self))
        return _constructor(self)(value)

    def __repr__(self) -> str:
        return f"T.{self}"

    def as_torch(self) -> Any:
        """The torch dtype of this dtype (TileLang's `T.dtype(name).as_torch()`); int4 and
        float4 values, which torch has no dtype for, live in torch.int8."""
        from ..utils.tensor import map_torch_type

        return map_torch_type(str(self))


def _constructor(dtype: str) -> Any:
    name = "boolean" if dtype == "bool" else dtype
    return getattr(_builder, name)


def _is_dtype_constructor(value: Any) -> bool:
    return isinstance(value, _builder.DtypeConstructor)


def to_dtype(dtype: Any) -> DType:
    """Normalize a dtype given as a string, a `DType`, a TVMScript constructor, a `PrimType`,
    a numpy dtype or a torch dtype."""
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, ir.PrimType):
        return DType(str(dtype.dtype))
    if _is_dtype_constructor(dtype):
        return DType(dtype._dtype_str)  # pylint: disable=protected-access
    if dtype is bool:
        return DType("bool")
    if dtype is float:
        return DType("float32")
    if dtype is int:
        return DType("int32")
    text = str(dtype)
    if text.startswith("torch."):
        text = text[len("torch.") :]
    if not isinstance(dtype, str) and not text.startswith(_TVM_DTYPE_PREFIXES):
        text = _numpy_name(dtype, text)
    text = DTYPE_ALIASES.get(text, text)
    try:
        canonical = str(ir.PrimType(text).dtype)
    except Exception as err:  # TVM raises its own error type for bad names
        raise TypeError(f"unknown dtype {dtype!r}{_did_you_mean(text)}; use e.g. 'float16', T.float32 or "
                        "torch.int8") from err
    if _re.fullmatch(r"(float|bfloat|int|uint)x\d+", text):
        # TVM reads "floatx32" as 32 lanes of float32: a typo far more often than a vector
        raise TypeError(f"unknown dtype {dtype!r}{_did_you_mean(text)}; a vector dtype names its element "
                        f"bits before the lanes (e.g. 'float32x4')")
    return DType(canonical)


def _did_you_mean(text: str) -> str:
    import difflib

    names = [n for n in globals().get("DTYPES", ()) if not _re.search(r"x\d+$", n)]  # scalars only
    close = difflib.get_close_matches(text, names, n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def _numpy_name(dtype: Any, default: str) -> str:
    import numpy

    try:
        return numpy.dtype(dtype).name
    except TypeError:
        return default


def _collect_dtypes() -> dict[str, DType]:
    names = {}
    for name in _builder.__all__:
        value = getattr(_builder, name, None)
        if _is_dtype_constructor(value):
            names[name] = DType(value._dtype_str)  # pylint: disable=protected-access
    names["bool"] = DType("bool")
    # sub-byte integers (packed storage in dequantizing kernels): names for annotations and
    # casts, as TileLang has them; TVMScript itself has no constructor for them
    for bits in (1, 2, 4):
        for sign in ("int", "uint"):
            names.setdefault(f"{sign}{bits}", DType(f"{sign}{bits}"))
    # TileLang's C-style spellings: T.float is T.float32, T.half is T.float16, ...
    for alias, canonical in DTYPE_ALIASES.items():
        names.setdefault(alias, DType(canonical))
    return names


# Every dtype name of TVMScript (float16, int8x4, bf16, ...) as a DType.
DTYPES = _collect_dtypes()
