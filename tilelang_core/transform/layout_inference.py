"""infer_layout: layouts of fragments and shared buffers.

Before: fragments (`local.fragment`) are logical block-wide tiles.
After, on block-serial targets: unchanged (a fragment is a block-local array in row-major
order, and annotated layouts do not change results). SIMT targets decide where each
fragment lives (see `simt.py`), asking `tilelang_infer_layout` for ops that impose one.
"""
from __future__ import annotations

__all__ = ["infer_layout"]


def infer_layout(func, ctx):
    return func
