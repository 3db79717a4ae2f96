"""Kernel parameters: `T.Tensor` / `T.Buffer`, and symbolic dims (`T.symbolic`, `T.dynamic`)."""
from __future__ import annotations

from typing import Any

import tvm
from tvm.tirx.script.builder import ir as _builder

from tilelang_core.ir.constants import SCOPE_GLOBAL

from .dtypes import to_dtype

__all__ = ["Buffer", "Tensor", "dynamic", "symbolic"]


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


def symbolic(name: str, dtype: str = "int32") -> tvm.tirx.Var:
    """A symbolic dim: a `tirx.Var` usable in tensor shapes and expressions."""
    return tvm.tirx.Var(name, str(to_dtype(dtype)))


dynamic = symbolic
