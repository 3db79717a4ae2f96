"""TileLang's `tilelang.tools.cuda`: CUDA-only developer tools (`iket`, kernel instrumentation
for the external IKET profiler)."""
from __future__ import annotations

from . import iket as iket

__all__ = ["iket"]
