"""TileLang's `tilelang.cuda.intrinsics.macro`: emitters of hand-written tensor-core code."""
from __future__ import annotations

from .mma_macro_generator import TensorCoreIntrinEmitter, TensorCoreIntrinEmitterWithLadderTransform, TransformKind

__all__ = ["TensorCoreIntrinEmitter", "TensorCoreIntrinEmitterWithLadderTransform", "TransformKind"]
