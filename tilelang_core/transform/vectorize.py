"""vectorize: vector accesses to memory.

Block-serial targets: `partition_parallel` marks an innermost loop of plain arithmetic
VECTORIZED and the C compiler vectorizes it; nothing is left for this pass.

SIMT targets: runs of a fragment's register slots stored to memory become vector stores
(`vectorize_slots`). The pass is also the named point after which a backend adds its own
vectorizer.
"""
from __future__ import annotations

from .vectorize_slots import vectorize_slot_stores

__all__ = ["vectorize"]


def vectorize(func, ctx):
    return vectorize_slot_stores(func, ctx)
