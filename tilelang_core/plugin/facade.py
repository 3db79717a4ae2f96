"""The one typed door through which the rest of the core calls backend hooks."""
from __future__ import annotations

from typing import Any

from .manager import get_plugin_manager
from .target import Target

__all__ = ["TargetHooks", "hooks_for"]


class TargetHooks:
    """Per-target hook calls for one `Target`, each dispatched to the owning backend only."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self._manager = get_plugin_manager()

    def _call(self, name: str, **kwargs: Any) -> Any:
        return self._manager.hook_for(self.target, name)(target=self.target, **kwargs)

    def pipeline(self, pipeline: Any) -> None:
        self._call("tilelang_pipeline", pipeline=pipeline)

    def lower_tile_op(self, op: Any, ctx: Any) -> Any:
        return self._call("tilelang_lower_tile_op", op=op, ctx=ctx)

    def infer_layout(self, op: Any, ctx: Any) -> Any:
        return self._call("tilelang_infer_layout", op=op, ctx=ctx)

    def codegen(self, module: Any, options: Any) -> Any:
        result = self._call("tilelang_codegen", module=module, options=options)
        if result is None:
            raise NotImplementedError(f"the backend of {self.target} implements no tilelang_codegen")
        return result

    def check_source(self, source: Any) -> str | None:
        """The owning backend's `tilelang_check_source`: what it checked, or None (no check)."""
        return self._call("tilelang_check_source", source=source)

    def compile(self, source: Any, options: Any) -> bytes:
        result = self._call("tilelang_compile", source=source, options=options)
        if result is None:
            raise NotImplementedError(f"the backend of {self.target} implements no tilelang_compile")
        return result

    def runtime(self) -> Any:
        result = self._call("tilelang_runtime")
        if result is None:
            raise NotImplementedError(f"the backend of {self.target} implements no tilelang_runtime")
        return result

    def cache_key(self, options: Any) -> list[str]:
        """The owning backend's `tilelang_cache_key` parts, and a digest of its package's
        files (a backend cannot forget that its own lowering code shapes the kernel)."""
        from ..jit.cache import package_fingerprint

        owner = self._manager.registry.owners.get(self.target.kind)
        name = getattr(owner, "__name__", None)
        parts = [f"backend:{package_fingerprint(name)}"] if isinstance(name, str) else []
        return parts + [str(r) for r in self._call("tilelang_cache_key", options=options) if r]

    def conformance_expectations(self) -> dict[str, str]:
        merged: dict[str, str] = {}
        for result in self._call("tilelang_conformance_expectations"):
            merged.update(result or {})
        return merged


def hooks_for(target: Target) -> TargetHooks:
    """The per-target hooks of the backend that owns `target` (`.codegen`, `.compile`, ...)."""
    return TargetHooks(target)
