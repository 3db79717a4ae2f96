"""TileLang's `tilelang.cuda.intrinsics`: the shared-memory layouts of hand-written tensor-core
kernels and the emitter of their mma.sync code (see `tilelang_cuda.compat` for what is
provided)."""
from __future__ import annotations

from .layout import get_swizzle_layout, make_mma_swizzle_layout
from .macro import TensorCoreIntrinEmitter, TensorCoreIntrinEmitterWithLadderTransform

__all__ = ["TensorCoreIntrinEmitter", "TensorCoreIntrinEmitterWithLadderTransform", "get_swizzle_layout",
           "make_mma_swizzle_layout"]
