"""Post-processing of generated device source: at most one callback per target kind, called
with the source a backend's codegen returned and the target, returning the source its device
compiler then builds (TileLang's `register_cuda_postproc` and its kin, provided at TileLang's
path by `tilelang_core.compat.modules.engine.callback`).

A kernel compiled while a callback is registered for its target's kind bypasses the kernel
cache (disk and memo): the callback is arbitrary Python, so no key can say what it does.
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Any, Callable

__all__ = ["register_postproc", "unregister_postproc", "registered_postproc", "has_postproc", "postprocess"]

_CALLBACKS: dict[str, Callable[[str, Any], str]] = {}
_LOCK = threading.Lock()


def register_postproc(kind: str, func: Callable[[str, Any], str], override: bool = True) -> None:
    """Run `func(source, target)` on the device source of every kernel compiled for target
    kind `kind` from now on. With `override=False`, a callback already registered for the
    kind is an error instead of being replaced."""
    if not callable(func):
        raise TypeError(f"the post-processing callback for {kind!r} must be callable, got {type(func).__name__}")
    with _LOCK:
        present = _CALLBACKS.get(kind)
        if present is not None and not override:
            raise ValueError(f"a post-processing callback for target kind {kind!r} is already registered "
                             f"({getattr(present, '__qualname__', present)!s}); pass override=True to replace it")
        _CALLBACKS[kind] = func


def unregister_postproc(kind: str) -> None:
    """Remove the callback of `kind`, if any."""
    with _LOCK:
        _CALLBACKS.pop(kind, None)


def registered_postproc(kind: str) -> Callable[[str, Any], str] | None:
    """The callback registered for target kind `kind`, or None (a tool that registers its own
    for a while restores this one afterwards)."""
    with _LOCK:
        return _CALLBACKS.get(kind)


def has_postproc(target: Any) -> bool:
    return target.kind in _CALLBACKS


def postprocess(target: Any, source: Any) -> Any:
    """`source` (a `KernelSource`) with its text replaced by the callback's result, when one is
    registered for `target.kind`."""
    func = _CALLBACKS.get(target.kind)
    if func is None:
        return source
    text = func(source.source, target)
    if not isinstance(text, str):
        raise TypeError(f"the post-processing callback {getattr(func, '__qualname__', func)!s} for {target.kind!r} "
                        f"returned {type(text).__name__}; it must return the device source as a str")
    return source if text == source.source else dataclasses.replace(source, source=text)
