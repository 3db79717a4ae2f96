"""TileLang's `tilelang.engine`: `lower` (TileLang's lowering entry point, over the core's
pipeline). The submodules `lower` and `param` are TileLang's paths to the same names."""
from __future__ import annotations

from .lower import lower
from .param import CompiledArtifact, KernelParam

__all__ = ["lower", "CompiledArtifact", "KernelParam"]
