"""Hook implementations of the HIP backend: each a short delegation."""
from __future__ import annotations

from tilelang_core.plugin import hookimpl

from . import detect as _detect
from . import target as _target


@hookimpl
def tilelang_register_targets(registry):
    from . import spellings

    registry.add_kind(_target.hip_kind())
    for name in spellings.SPELLINGS:
        registry.add_spelling(name, spellings.resolve)


@hookimpl
def tilelang_compat_modules():
    # TileLang's ROCm namespace (tilelang_hip.compat: `tilelang.rocm.target`; its MFMA
    # intrinsics not yet) and its hipcc/ROCm helpers: this backend's to provide, not provided yet
    return {"tilelang.rocm": "tilelang_hip.compat",
            **{name: None for name in ("tilelang.contrib.hipcc", "tilelang.contrib.rocm",
                                       "tilelang.contrib.hip_resource_info")}}


@hookimpl
def tilelang_detect_targets():
    return _detect.detect()


@hookimpl
def tilelang_infer_layout(target, op, ctx):
    from .lower import infer_gemm_layout

    return infer_gemm_layout(op, ctx) if op.name == "gemm" else None


@hookimpl
def tilelang_lower_tile_op(target, op, ctx):
    from .lower import LOWERINGS

    lowering = LOWERINGS.get(op.name)
    return lowering(op, ctx) if lowering is not None else None


@hookimpl
def tilelang_codegen(target, module, options):
    from .codegen import HIPCodegen

    return HIPCodegen(target, options).render(module)


@hookimpl
def tilelang_compile(target, source, options):
    from .compile import compile_hip

    return compile_hip(source.source, target.arch, {
        "flags": list(options.extra_flags),
        "fast_math": options.fast_math,
        "line_map": source.line_map,
    })


@hookimpl
def tilelang_cache_key(target, options):
    from .compile import cache_key

    return cache_key(target.arch)


@hookimpl
def tilelang_runtime(target):
    from .runtime import HIPRuntimeOnDemand

    return HIPRuntimeOnDemand()
