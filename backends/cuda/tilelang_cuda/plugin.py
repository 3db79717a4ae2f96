"""Hook implementations of the CUDA backend: each a short delegation."""
from __future__ import annotations

from tilelang_core.plugin import hookimpl

from . import detect as _detect
from . import target as _target


@hookimpl
def tilelang_register_targets(registry):
    registry.add_kind(_target.cuda_kind())


@hookimpl
def tilelang_detect_targets():
    return _detect.detect()
