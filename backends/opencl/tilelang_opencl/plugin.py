"""Hook implementations of the OpenCL backend: each a short delegation."""
from __future__ import annotations

from tilelang_core import hookimpl


@hookimpl
def tilelang_register_targets(registry):
    from .target import opencl_kind

    registry.add_kind(opencl_kind())


@hookimpl
def tilelang_detect_targets():
    from .detect import detect

    return detect()


@hookimpl
def tilelang_lower_tile_op(target, op, ctx):
    from .lower import LOWERINGS

    lowering = LOWERINGS.get(op.name)
    return lowering(op, ctx) if lowering is not None else None


@hookimpl
def tilelang_codegen(target, module, options):
    from .codegen import OpenCLCodegen

    return OpenCLCodegen(target, options).render(module)


@hookimpl
def tilelang_compile(target, source, options):
    from .compile import compile_opencl

    return compile_opencl(source.source, target.arch, {"fast_math": options.fast_math,
                                                       "flags": list(options.extra_flags)})


@hookimpl
def tilelang_cache_key(target, options):
    from .compile import cache_key

    return cache_key(target.arch)


@hookimpl
def tilelang_runtime(target):
    from .runtime import OpenCLRuntime

    return OpenCLRuntime()


@hookimpl
def tilelang_conformance_expectations(target):
    from .expectations import expectations

    return expectations(target.arch)
