"""`tilelang.engine.lower.lower(func_or_mod, target="auto", ...)`: the core's `lower`
(`tilelang_core.jit.artifact.lower`): the kernel lowered for `target` and its device source,
as a `CompiledArtifact`."""
from __future__ import annotations

from ....jit.artifact import lower

__all__ = ["lower"]
