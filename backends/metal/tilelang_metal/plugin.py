"""Hook implementations of the Metal backend: each a short delegation."""
from __future__ import annotations

from tilelang_core.plugin import hookimpl

from . import detect as _detect
from . import target as _target


@hookimpl
def tilelang_register_targets(registry):
    registry.add_kind(_target.metal_kind())


@hookimpl
def tilelang_detect_targets():
    return _detect.detect()


@hookimpl
def tilelang_infer_layout(target, op, ctx):
    from .lower_gemm import infer_gemm_layout

    return infer_gemm_layout(op, ctx) if op.name == "gemm" else None


@hookimpl
def tilelang_lower_tile_op(target, op, ctx):
    from .lower import LOWERINGS

    lowering = LOWERINGS.get(op.name)
    return lowering(op, ctx) if lowering is not None else None


@hookimpl
def tilelang_codegen(target, module, options):
    from .codegen import MetalCodegen

    return MetalCodegen(target, options).render(module)


@hookimpl
def tilelang_check_source(target, source):
    from .check import check_msl, find_clang

    return check_msl(source.source, source.entry) if find_clang() is not None else None


@hookimpl
def tilelang_compile(target, source, options):
    from .compile import compile_metal

    return compile_metal(source.source, source.entry)


@hookimpl
def tilelang_cache_key(target, options):
    from .compile import cache_key

    return cache_key()


@hookimpl
def tilelang_runtime(target):
    from .runtime import MetalRuntimeOnDemand

    return MetalRuntimeOnDemand()
