"""Hints about a kernel's global tensors: `T.annotate_safe_value` and `T.annotate_l2_hit_ratio`.

`T.annotate_safe_value({A: value})`: what a read outside a global tensor yields.

The compiler guards every global access it cannot prove in bounds (`transform.safe_access`):
such a load reads 0 by default. This annotation (TileLang's) makes reads outside `A` yield
`value` instead (a padding value: `-inf` before a max, 1 before a product), in the rest of
the enclosing scope, for element loads and `T.copy` alike. It records one
`AttrStmt(value, "tl.safe_value", A)` per entry around the rest of that scope.

`T.annotate_l2_hit_ratio({A: ratio})` (TileLang's): a cache hint, that this fraction of `A`'s
accesses should persist in L2 across the kernel's blocks. It records
`AttrStmt(FloatImm(ratio), "tl.l2_hit_ratio", A)`; a target whose runtime can keep a window
of memory in L2 applies it at launch (CUDA: the stream's access policy window), others leave
it, as a hint that changes no result.
"""
from __future__ import annotations

from typing import Any, Mapping

from tvm import ir, tirx
from tvm.tirx import is_buffer_var
from tvm.tirx.script.builder import ir as _builder
from tvm.tirx.script.builder import utils as _builder_utils

from tilelang_core.ir.constants import ATTR_L2_HIT_RATIO, ATTR_SAFE_VALUE

__all__ = ["annotate_l2_hit_ratio", "annotate_safe_value"]


def _frames(frames: list) -> Any:
    if not frames:
        return None
    if len(frames) == 1:
        return frames[0]
    return _builder_utils._FrameScope(frames)  # pylint: disable=protected-access


def _global_tensor(buffer: Any, name: str) -> Any:
    if not is_buffer_var(buffer) or str(buffer.scope()) != "global":
        raise TypeError(f"T.{name}: keys must be global tensors (kernel parameters), got {buffer!r}")
    return buffer


def annotate_safe_value(safe_value_map: Mapping[Any, Any]) -> Any:
    """Reads outside each global tensor key yield its value (see the module)."""
    if not isinstance(safe_value_map, Mapping):
        raise TypeError(f"T.annotate_safe_value: expects a dict {{tensor: value}}, got {type(safe_value_map).__name__}")
    frames = []
    for buffer, value in safe_value_map.items():
        _global_tensor(buffer, "annotate_safe_value")
        if isinstance(value, (bool, int, float)):
            value = tirx.const(value, str(buffer.dtype))
        if not isinstance(value, ir.Expr) or not isinstance(value.ty, ir.PrimType) or value.ty.dtype.lanes != 1:
            raise TypeError(f"T.annotate_safe_value: the value for {buffer.name} must be a scalar, got {value!r}")
        frames.append(_builder.attr(value, ATTR_SAFE_VALUE, buffer))
    return _frames(frames)


def annotate_l2_hit_ratio(l2_hit_ratio_map: Mapping[Any, Any]) -> Any:
    """Ask that `ratio` (0 to 1) of each global tensor key's accesses persist in L2 (see the
    module)."""
    if not isinstance(l2_hit_ratio_map, Mapping):
        raise TypeError(f"T.annotate_l2_hit_ratio: expects a dict {{tensor: ratio}}, got "
                        f"{type(l2_hit_ratio_map).__name__}")
    frames = []
    for buffer, ratio in l2_hit_ratio_map.items():
        _global_tensor(buffer, "annotate_l2_hit_ratio")
        if isinstance(ratio, tirx.FloatImm):
            ratio = float(ratio.value)
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0.0 <= ratio <= 1.0:
            raise ValueError(f"T.annotate_l2_hit_ratio: the ratio for {buffer.name} must be a number from 0 to 1, "
                             f"got {ratio!r}")
        frames.append(_builder.attr(tirx.FloatImm("float32", float(ratio)), ATTR_L2_HIT_RATIO, buffer))
    return _frames(frames)
