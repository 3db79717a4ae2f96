"""Dtypes of the language: `T.float16` is the string "float16" that is also callable.

`T.float32(1.0)` makes a constant (or casts an expression), `T.float32()` declares a scalar
(`x: T.float32`), and the same object serves wherever a dtype string is expected (`T.Tensor`,
`T.alloc_shared`), which TVMScript's own dtype constructors do not.
"""
from __future__ import annotations

import re as _re
from typing import Any

from tvm import DataType, ir
from tvm.tirx.script.builder import ir as _builder

__all__ = ["DType", "DTYPE_ALIASES", "DTYPES", "dtype", "resolve_torch_storage_dtype", "to_dtype"]

# TileLang's dtype names this module adds to `T` (besides DTYPES)
DTYPE_HELPERS = ["AnyDType", "get_tvm_dtype", "is_f8f6f4_family", "is_float4", "is_float4_e2m1_unpacked",
                 "is_float4_e2m1fn", "validate_gemm_ab_dtypes"]

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
    # TensorFloat-32 is float32 in memory: a T.gemm of float32 operands multiplies on TF32
    # tensor cores where the target has them (its "tfloat32" matrix instructions), which is
    # TileLang's meaning of a tfloat32 buffer
    "tfloat32": "float32",
}


_TVM_DTYPE_PREFIXES = ("float", "int", "uint", "bool", "bfloat")


class DType(DataType):
    """A dtype name that is also TVMScript's constructor for that dtype, and TVM's `DataType`
    (a `str` subclass, as TileLang's dtype is). TileLang's and PyTorch's short spellings are
    canonical names here: `T.dtype("uint") == T.uint32`, and a dtype object is read by name:
    `T.dtype(torch.float16) == T.float16`."""

    def __new__(cls, name: Any = "float32") -> "DType":
        if not isinstance(name, str):
            # a torch, numpy or TVM dtype object (`T.dtype(q.dtype)`): its name, not its repr
            name = str(to_dtype(name))
        text = str(name)
        return super().__new__(cls, DTYPE_ALIASES.get(text, text))

    def __call__(self, value: Any = None, *args: Any) -> ir.Expr:
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
        """The torch dtype of this dtype (TileLang's `T.dtype(name).as_torch()`): packed FP4
        is torch's two-per-byte `float4_e2m1fn_x2` where this torch has it; int4 values, and
        FP4 on an older torch, live in torch.int8."""
        import torch

        from ..utils.tensor import map_torch_type

        if str(self).startswith("float4_e2m1fn") and hasattr(torch, "float4_e2m1fn_x2"):
            return torch.float4_e2m1fn_x2
        return map_torch_type(str(self))


def _vector(dtype: "DType", lanes: tuple) -> ir.Expr:
    from tvm import tirx

    parsed = ir.PrimType(str(dtype)).dtype
    if parsed.lanes != len(lanes):
        raise ValueError(f"T.{dtype}: {len(lanes)} values for a {parsed.lanes}-lane vector")
    scalar = str(dtype)[: -len(f"x{parsed.lanes}")]
    values = [v if isinstance(v, ir.Expr) and str(v.ty.dtype) == scalar else DType(scalar)(v) for v in lanes]
    return tirx.Shuffle(values, [tirx.const(i, "int32") for i in range(len(values))])


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
    # two-lane vectors of TileLang's packed arithmetic (T.add2, ...) TVMScript lacks a name for
    for name in ("bfloat16x2", "float16x2", "float32x2"):
        names.setdefault(name, DType(name))
    # TensorFloat-32 buffers and vectors: float32 in memory (see DTYPE_ALIASES)
    names["tfloat32"] = DType("float32")
    for lanes in (2, 4, 8, 16, 32, 64):
        names[f"tfloat32x{lanes}"] = DType(f"float32x{lanes}")
    # TileLang's C-style spellings: T.float is T.float32, T.half is T.float16, ...
    for alias, canonical in DTYPE_ALIASES.items():
        names.setdefault(alias, DType(canonical))
    return names


# Every dtype name of TVMScript (float16, int8x4, bf16, ...) as a DType.
DTYPES = _collect_dtypes()

# -- TileLang's dtype helpers -------------------------------------------------------------------

AnyDType = Any  # what the helpers accept: a name, a DType, a TVM type, a torch or numpy dtype

_FLOAT4_UNPACKED = "float4_e2m1_unpacked"  # TileLang's one-FP4-per-byte storage (tcgen05 only)


def get_tvm_dtype(value: AnyDType) -> DType:
    """`value` as this language's dtype (TileLang's `T.get_tvm_dtype`)."""
    return to_dtype(value)


def _name(value: AnyDType) -> str:
    text = str(value)
    return text if text in (_FLOAT4_UNPACKED, "custom[float4_e2m1_unpacked]8") else str(to_dtype(value))


def is_float4_e2m1fn(value: AnyDType) -> bool:
    """Whether `value` is packed 4-bit FP4 (E2M1), any lane count."""
    return _name(value).startswith("float4_e2m1fn")


def is_float4_e2m1_unpacked(value: AnyDType) -> bool:
    """Whether `value` is TileLang's unpacked FP4 (one E2M1 value per byte), which only
    Blackwell's tcgen05 paths use; no dtype of this language is."""
    return _name(value) in (_FLOAT4_UNPACKED, "custom[float4_e2m1_unpacked]8")


def is_float4(value: AnyDType) -> bool:
    """Whether `value` is any FP4 E2M1 variant (packed or unpacked)."""
    return is_float4_e2m1fn(value) or is_float4_e2m1_unpacked(value)


def is_f8f6f4_family(value: AnyDType) -> bool:
    """Whether `value` is an 8-, 6- or 4-bit float (the operand family of block-scaled MMA)."""
    if is_float4(value):
        return True
    name = _name(value)
    return name.startswith(("float8", "float6"))


def validate_gemm_ab_dtypes(a_dtype: AnyDType, b_dtype: AnyDType, *, a_in_tmem: bool = False,
                            allow_f8f6f4_mixed: bool = False) -> None:
    """Raise ValueError unless a GEMM may take A of `a_dtype` with B of `b_dtype`: the same
    dtype, or (with `allow_f8f6f4_mixed`) two of the 8/6/4-bit float family."""
    if a_in_tmem or _name(a_dtype) == _name(b_dtype):
        return
    if allow_f8f6f4_mixed and is_f8f6f4_family(a_dtype) and is_f8f6f4_family(b_dtype):
        return
    raise ValueError(f"a GEMM of mixed operand dtypes needs both in the 8/6/4-bit float family; got A={a_dtype}, "
                     f"B={b_dtype}: cast one operand to the other's dtype")


def resolve_torch_storage_dtype(value: AnyDType) -> DType:
    """The dtype of the torch storage that holds `value` (TileLang's name): itself where torch
    has that dtype, int8 for int4 and for float4 when this torch has no FP4 dtype."""
    storage = get_tvm_dtype(value).as_torch()
    return DType(_torch_dtype_names()[storage])


def _torch_dtype_names() -> dict:
    """torch dtype -> this language's name, for every dtype both have (torch imported here)."""
    import torch

    names = {}
    for name in DTYPES:
        found = getattr(torch, name, None)
        if isinstance(found, torch.dtype):
            names.setdefault(found, str(to_dtype(found)))
    if hasattr(torch, "float4_e2m1fn_x2"):
        names[torch.float4_e2m1fn_x2] = "float4_e2m1fnx2"
    return names


# `dtype` is TileLang's name for the dtype class (`T.dtype("float16")`)
dtype = DType


def __getattr__(name: str) -> Any:
    """TileLang's names of this module that need no module global: every dtype of `T`
    (`dtypes.float16`; a global would shadow builtins such as `float` in this module),
    `_all_dtypes` (their names), `_TORCH_DTYPE_TO_STR` (torch dtype -> name; imports torch)
    and `_STR_TO_TORCH_DTYPE` (its inverse)."""
    if name in DTYPES:
        return DTYPES[name]
    if name == "_all_dtypes":
        return sorted(DTYPES)
    if name == "_TORCH_DTYPE_TO_STR":
        return _torch_dtype_names()
    if name == "_STR_TO_TORCH_DTYPE":
        return {v: k for k, v in _torch_dtype_names().items()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
