"""Kernel parameters: `T.Tensor` / `T.Buffer`, and symbolic dims (`T.symbolic`, `T.dynamic`)."""
from __future__ import annotations

from typing import Any

import tvm
from tvm.tirx.script.builder import ir as _builder

from tilelang_core.ir.constants import SCOPE_GLOBAL

from .dtypes import to_dtype

__all__ = ["Buffer", "FragmentBuffer", "LocalBuffer", "SharedBuffer", "StridedTensor", "Tensor", "dynamic",
           "make_tensor", "make_tensor_from_addr", "reshape", "symbolic", "view"]


def normalize_shape(shape: Any) -> tuple:
    """A shape as a tuple (a single extent becomes a 1-tuple)."""
    if isinstance(shape, (list, tuple, tvm.ir.Array)):
        return tuple(shape)
    return (shape,)


class TensorProxy:
    """`T.Tensor(shape, dtype)`: a buffer parameter in global memory.

    Works as an annotation (`A: T.Tensor((M, K), "float16")`), with dtype objects
    (`T.float16`, `torch.float16`) and the old subscript form `T.Tensor[(M, K), "float16"]`.
    Given `data` (another tensor's `.data`) in a kernel body, it declares a view of that memory.
    """

    def __call__(
        self,
        shape: Any,
        dtype: Any = "float32",
        data: Any = None,
        strides: Any = None,
        elem_offset: Any = None,
        scope: str = SCOPE_GLOBAL,
        align: int = 0,
        offset_factor: int = 0,
    ) -> tvm.ir.Var:
        if dtype is _builder.ptr:
            # `T.Tensor([n], T.ptr)`: a table of addresses, int64 in memory; `T.make_tensor`
            # turns an element back into a typed pointer
            dtype = "int64"
        if data is not None:
            # `flat = T.Tensor((M * N,), dtype, A.data)` in a kernel body: a view of another
            # tensor's memory, declared where it is assigned (TVMScript enters the frame)
            return _builder.decl_buffer(normalize_shape(shape), dtype=str(to_dtype(dtype)), data=data, strides=strides,
                                        elem_offset=elem_offset, scope=scope, align=align, offset_factor=offset_factor)
        return _builder.buffer(
            normalize_shape(shape),
            dtype=str(to_dtype(dtype)),
            data=data,
            strides=strides,
            elem_offset=elem_offset,
            scope=scope,
            align=align,
            offset_factor=offset_factor,
        )

    def __getitem__(self, keys: Any) -> tvm.ir.Var:
        is_shape_and_dtype = isinstance(keys, tuple) and len(keys) == 2
        if is_shape_and_dtype and not isinstance(keys[1], (int, tvm.ir.Expr)):
            return self(keys[0], keys[1])
        return self(keys)

    def __or__(self, other: Any) -> TensorProxy:  # `T.Tensor | None` in annotations
        return self

    __ror__ = __or__


Tensor = TensorProxy()
Buffer = Tensor


class _ScopedTensorProxy(TensorProxy):
    """`T.Tensor` with another default memory scope: TileLang's annotation types for macro
    parameters (`def body(K_shared: T.SharedBuffer([64, 64], T.float16), ...)`); called in a
    kernel body with `data=` it declares a view in that scope."""

    def __init__(self, default_scope: str) -> None:
        self.default_scope = default_scope

    def __call__(self, shape: Any, dtype: Any = "float32", data: Any = None, strides: Any = None,
                 elem_offset: Any = None, scope: str | None = None, align: int = 0,
                 offset_factor: int = 0) -> tvm.ir.Var:
        return super().__call__(shape, dtype, data, strides, elem_offset, scope or self.default_scope, align,
                                offset_factor)


SharedBuffer = _ScopedTensorProxy("shared.dyn")
FragmentBuffer = _ScopedTensorProxy("local.fragment")
LocalBuffer = _ScopedTensorProxy("local")


class _StridedTensorProxy:
    """`T.StridedTensor(shape, strides, dtype)`: a global tensor parameter with explicit
    element strides (a slice or a transposed view passed without a copy)."""

    def __call__(self, shape: Any, strides: Any, dtype: Any = "float32", scope: str | None = None) -> tvm.ir.Var:
        shape, strides = normalize_shape(shape), normalize_shape(strides)
        if len(strides) != len(shape):
            raise ValueError(f"T.StridedTensor: {len(strides)} strides for the {len(shape)}-D shape {shape}")
        return Tensor(shape, dtype, strides=strides, scope=scope or SCOPE_GLOBAL)

    def __getitem__(self, keys: Any) -> tvm.ir.Var:
        return self(*keys)


StridedTensor = _StridedTensorProxy()


def make_tensor(ptr: Any, shape: Any, dtype: Any = "float32", strides: Any = None) -> tvm.ir.Var:
    """A tensor of `shape` and `dtype` over the memory `ptr` points at, declared in the kernel
    body: `T.Tensor(shape, dtype, ptr)`. `ptr` is a pointer (another tensor's `.data`) or an
    address: a 64-bit integer expression such as an element of a `T.Tensor([n], T.ptr)` table,
    bound to a pointer of `dtype` first."""
    if isinstance(ptr, tvm.ir.Expr) and not tvm.tirx.is_buffer_var(ptr) and not isinstance(ptr, tvm.tirx.Var):
        ptr = _pointer_from_address(ptr, dtype)
    return Tensor(shape, dtype, data=ptr, strides=strides)


def _pointer_from_address(address: Any, dtype: Any) -> tvm.ir.Var:
    """A pointer variable bound (in the kernel body, where this is called) to the address
    `address` holds, typed as a global pointer to `dtype`."""
    kind = str(address.ty.dtype) if isinstance(address.ty, tvm.ir.PrimType) else "handle"
    if kind not in ("handle", "int64", "uint64"):
        raise TypeError(f"T.make_tensor: an address must be a pointer or a 64-bit integer (an element of a "
                        f"T.Tensor([n], T.ptr) table), got {address} of dtype {kind}")
    value = address if kind == "handle" else tvm.tirx.reinterpret("handle", address)
    return _builder.bind(value)


def make_tensor_from_addr(addr: Any, shape: Any, dtype: Any = "float32", strides: Any = None,
                          storage_scope: str = "global") -> tvm.ir.Var:
    """A tensor of `shape` and `dtype` over the device address `addr`, an integer value of the
    kernel (a 64-bit scalar parameter, an element of a table of pointers): TileLang's
    `T.make_tensor_from_addr`. The address is reinterpreted as the tensor's data pointer where
    the tensor is used; like a tensor argument it must be aligned for the widest access the
    kernel makes (16 bytes covers every vectorized one)."""
    if isinstance(addr, int) and not isinstance(addr, bool):
        addr = tvm.tirx.const(addr, "int64")
    if not isinstance(addr, tvm.ir.Expr) or not isinstance(addr.ty, tvm.ir.PrimType) \
            or str(addr.ty.dtype) not in ("int64", "uint64"):
        raise TypeError(f"T.make_tensor_from_addr: addr must be a 64-bit integer (int64 or uint64), got "
                        f"{getattr(getattr(addr, 'ty', None), 'dtype', type(addr).__name__)} {addr!r}")
    data = tvm.tirx.reinterpret("handle", addr)
    return Tensor(shape, dtype, data=data, strides=strides, scope=storage_scope)


def _bits(shape: tuple, dtype: Any) -> Any:
    total = tvm.ir.PrimType(str(to_dtype(dtype))).dtype.bits * tvm.ir.PrimType(str(to_dtype(dtype))).dtype.lanes
    for extent in shape:
        total = total * extent
    return total


def view(src: Any, shape: Any = None, dtype: Any = None) -> tvm.ir.Var:
    """`src`'s memory seen with another `shape` and/or `dtype` (no copy); the bits must match:
    `T.view(A, (M * N,))`, `T.view(packed, dtype=T.int8)`."""
    if not tvm.tirx.is_buffer_var(src):
        raise TypeError(f"T.view: src must be a buffer, got {type(src).__name__} {src}")
    shape = normalize_shape(src.shape if shape is None else shape)
    dtype = str(src.dtype) if dtype is None else str(to_dtype(dtype))
    new_bits, old_bits = _bits(shape, dtype), _bits(tuple(src.shape), str(src.dtype))
    if not tvm.sym.Analyzer().can_prove_equal(tvm.tirx.const(0, "int64") + new_bits,
                                              tvm.tirx.const(0, "int64") + old_bits):
        raise ValueError(f"T.view/T.reshape: {src.name} holds {old_bits} bits ({tuple(src.shape)} of {src.dtype}), "
                         f"the view {shape} of {dtype} holds {new_bits}; the sizes must match")
    return Tensor(shape, dtype, data=src.data, scope=str(src.scope()))


def reshape(src: Any, shape: Any) -> tvm.ir.Var:
    """`src` seen with another `shape` of the same element count (no copy)."""
    return view(src, shape)


def symbolic(name: str, dtype: str = "int32") -> Any:
    """A symbolic dim: a `tirx.Var` usable in tensor shapes and expressions. Several names at
    once (`batch, seq_len = T.dynamic("batch, seq_len")`, as TileLang allows) give a tuple."""
    names = [n.strip() for n in str(name).split(",") if n.strip()]
    if len(names) > 1:
        return tuple(tvm.tirx.Var(n, str(to_dtype(dtype))) for n in names)
    return tvm.tirx.Var(name.strip(), str(to_dtype(dtype)))


dynamic = symbolic
