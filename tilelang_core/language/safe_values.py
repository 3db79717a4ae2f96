"""`T.annotate_safe_value({A: value})`: what a read outside a global tensor yields.

The compiler guards every global access it cannot prove in bounds (`transform.safe_access`):
such a load reads 0 by default. This annotation (TileLang's) makes reads outside `A` yield
`value` instead (a padding value: `-inf` before a max, 1 before a product), in the rest of
the enclosing scope, for element loads and `T.copy` alike. It records one
`AttrStmt(value, "tl.safe_value", A)` per entry around the rest of that scope.
"""
from __future__ import annotations

from typing import Any, Mapping

from tvm import ir, tirx
from tvm.tirx import is_buffer_var
from tvm.tirx.script.builder import ir as _builder
from tvm.tirx.script.builder import utils as _builder_utils

from tilelang_core.ir.constants import ATTR_SAFE_VALUE

__all__ = ["annotate_safe_value"]


def annotate_safe_value(safe_value_map: Mapping[Any, Any]) -> Any:
    """Reads outside each global tensor key yield its value (see the module)."""
    if not isinstance(safe_value_map, Mapping):
        raise TypeError(f"T.annotate_safe_value: expects a dict {{tensor: value}}, got {type(safe_value_map).__name__}")
    frames = []
    for buffer, value in safe_value_map.items():
        if not is_buffer_var(buffer) or str(buffer.scope()) != "global":
            raise TypeError(f"T.annotate_safe_value: keys must be global tensors (kernel parameters), got {buffer!r}")
        if isinstance(value, (bool, int, float)):
            value = tirx.const(value, str(buffer.dtype))
        if not isinstance(value, ir.Expr) or not isinstance(value.ty, ir.PrimType) or value.ty.dtype.lanes != 1:
            raise TypeError(f"T.annotate_safe_value: the value for {buffer.name} must be a scalar, got {value!r}")
        frames.append(_builder.attr(value, ATTR_SAFE_VALUE, buffer))
    if not frames:
        return None
    if len(frames) == 1:
        return frames[0]
    return _builder_utils._FrameScope(frames)  # pylint: disable=protected-access
