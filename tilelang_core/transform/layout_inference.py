"""infer_layout: layouts of fragments and shared buffers.

Before: fragments (`local.fragment`) are logical block-wide tiles.
After, on block-serial targets: unchanged (a fragment is a block-local array in row-major
order, and annotated layouts do not change results). On SIMT targets the IR is unchanged too,
but `ctx.facts["fragment_layouts"]` (a `FragmentLayouts`) holds the layouts that tile ops
impose through `tilelang_infer_layout` (e.g. a matrix instruction's accumulator layout). The
tile-op lowerings and the SIMT placement (`simt.py`) read it; fragments without one keep the
portable cyclic distribution.

A layout must cover the fragment's whole shape over the block's threads; one that does not,
or that contradicts a layout imposed earlier on the same fragment, is ignored (the op's
lowering sees that through `LowerContext.layout_of` and takes a path that needs none).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tvm import tirx as tir

from ..ir import collect_tile_ops
from ..layout import FragmentLayouts
from .kernel_info import launch_info

__all__ = ["infer_layout", "LayoutContext", "FRAGMENT_LAYOUTS"]

FRAGMENT_LAYOUTS = "fragment_layouts"


@dataclass
class LayoutContext:
    """What `tilelang_infer_layout` may read: the target, the block's thread count and the
    layouts imposed so far (`layouts.get(buffer)`)."""

    target: Any
    threads: int
    layouts: FragmentLayouts

    @property
    def caps(self):
        return self.target.capabilities


def _fits(buffer, layout, threads: int) -> bool:
    shape = [int(d) if isinstance(d, tir.IntImm) else None for d in buffer.shape]
    return (buffer.scope() == "local.fragment" and list(layout.shape) == shape
            and layout.threads == threads)


def infer_layout(func, ctx):
    layouts = ctx.facts.setdefault(FRAGMENT_LAYOUTS, FragmentLayouts())
    if ctx.block_serial or ctx.hooks is None:
        return func
    threads = launch_info(func).threads
    lctx = LayoutContext(ctx.target, threads, layouts)
    for op in collect_tile_ops(func):
        imposed = ctx.hooks.infer_layout(op, lctx)
        for buffer, layout in (imposed or {}).items():
            if _fits(buffer, layout, threads):
                layouts.impose(buffer, layout)
    return func
