"""Tile-op lowerings of the OpenCL backend: none of its own, by design.

Every tile op (`T.copy`, `T.gemm`, `T.reduce_*`, `T.cumsum`, `T.atomic_add`, ...) takes the
core's portable SIMT lowering: loops partitioned over the work-items of a work-group,
`__local` staging, tree reductions through `__local` memory (or sub-group shuffles on archs
with the `warp_shuffle` feature). `LOWERINGS` is where a device-specific lowering goes (an
op name -> `lowering(op, ctx)` returning a statement, or None to fall back): the
`tilelang_lower_tile_op` hook of plugin.py consults it, so adding one is one entry here.
See docs/backend-guide.md ("Getting fast, op by op").
"""
from __future__ import annotations

from typing import Callable

__all__ = ["LOWERINGS"]

LOWERINGS: dict[str, Callable] = {}
