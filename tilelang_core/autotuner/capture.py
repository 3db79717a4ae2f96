"""`set_autotune_inputs`: the inputs every candidate runs on, for kernels whose inputs the
tensor supply cannot make (scalar parameters, index tensors with a meaning).

    with set_autotune_inputs(q, k, v, cu_seqlens):
        kernel = flash_attn_varlen(...)       # tuned on these tensors

The inputs are the kernel's inputs in parameter order (outputs left out). The setting is per
thread and nests (the innermost wins).
"""
from __future__ import annotations

import threading
from typing import Any

__all__ = ["AutotuneInputs", "get_autotune_inputs", "set_autotune_inputs"]

_local = threading.local()


def _stack() -> list[list[Any]]:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


class AutotuneInputs:
    """The context manager `set_autotune_inputs` returns."""

    __slots__ = ("tensors",)

    def __init__(self, tensors: list[Any]) -> None:
        self.tensors = tensors

    def __enter__(self) -> "AutotuneInputs":
        _stack().append(self.tensors)
        return self

    def __exit__(self, *exc: Any) -> None:
        _stack().pop()


def set_autotune_inputs(*tensors: Any) -> AutotuneInputs:
    """`set_autotune_inputs(a, b, c)` or `set_autotune_inputs([a, b, c])`: a context in which
    tuning runs every candidate on these inputs."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return AutotuneInputs(list(tensors[0]))
    return AutotuneInputs(list(tensors))


def get_autotune_inputs() -> list[Any] | None:
    """The inputs of the innermost `set_autotune_inputs` context of this thread, or None."""
    stack = _stack()
    return stack[-1] if stack else None
