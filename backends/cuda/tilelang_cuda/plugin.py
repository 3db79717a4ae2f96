"""Hook implementations of the CUDA backend: each a short delegation."""
from __future__ import annotations

from tilelang_core.plugin import hookimpl

from . import detect as _detect
from . import target as _target


@hookimpl
def tilelang_register_targets(registry):
    from . import spellings

    registry.add_kind(_target.cuda_kind())
    for name in spellings.SPELLINGS:
        registry.add_spelling(name, spellings.resolve)


@hookimpl
def tilelang_compat_modules():
    return {
        # the device facts TileLang's examples read (driver.get_num_sms() for persistent grids)
        "tilelang.carver.arch.driver": "tilelang_cuda.carver_driver",
        # the device class a roofline reads (CUDA(target): bandwidth, peak, SM count)
        "tilelang.carver.arch": "tilelang_cuda.carver_arch",
        # the GEMM template and the hints it recommends for autotuning (a roofline over the
        # tiles that fit the device, see carver_roller.matmul)
        "tilelang.carver.template": "tilelang_cuda.carver_template",
        "tilelang.carver.roller": "tilelang_cuda.carver_roller",
        # TileLang's CUDA namespace: the swizzled shared layouts of hand-written tensor-core
        # kernels (see tilelang_cuda.compat for what is provided)
        "tilelang.cuda": "tilelang_cuda.compat",
        # its CUDA tools: IKET instrumentation (markers, ranges, payloads for the IKET profiler)
        "tilelang.tools.cuda": "tilelang_cuda.compat.tools",
        # its nvcc/NVRTC wrappers: this backend's to provide, not provided yet
        "tilelang.contrib.nvcc": "tilelang_cuda.compat.nvcc",
        "tilelang.contrib.nvrtc": None,
    }


@hookimpl
def tilelang_language_names():
    # TileLang's T.ptx_mma / T.ptx_ldmatrix (its language is the CUDA dialect)
    from .language import LANGUAGE_NAMES, _compat_names
    from .language_cluster import CLUSTER_LANGUAGE_NAMES
    from .language_mma import MMA_LANGUAGE_NAMES
    from .language_ptx import PTX_LANGUAGE_NAMES
    from .language_tma import TMA_LANGUAGE_NAMES
    from .language_wgmma import WGMMA_LANGUAGE_NAMES

    return {**LANGUAGE_NAMES, **PTX_LANGUAGE_NAMES, **MMA_LANGUAGE_NAMES, **WGMMA_LANGUAGE_NAMES, **TMA_LANGUAGE_NAMES,
            **CLUSTER_LANGUAGE_NAMES, **_compat_names()}


@hookimpl
def tilelang_language_keywords():
    from .language import KEYWORDS

    return {call: dict(words) for call, words in KEYWORDS.items()}


@hookimpl
def tilelang_detect_targets():
    return _detect.detect()


@hookimpl
def tilelang_pipeline(target, pipeline):
    from .lower import edit_pipeline

    edit_pipeline(target, pipeline)


@hookimpl
def tilelang_infer_layout(target, op, ctx):
    from .lower import infer_layout

    return infer_layout(target, op, ctx)


@hookimpl
def tilelang_lower_tile_op(target, op, ctx):
    from .lower import lower_tile_op

    return lower_tile_op(target, op, ctx)


@hookimpl
def tilelang_compile(target, source, options):
    from .compile import compile_cuda

    return compile_cuda(source.source, target.arch, {
        "fast_math": options.fast_math,
        "flags": tuple(getattr(options, "extra_flags", ()) or ()),  # compile(compile_flags=), T.annotate_compile_flags
        "line_map": source.line_map,
        "name": source.entry,
    })


@hookimpl
def tilelang_cache_key(target, options):
    from .compile import include_digest, toolchain_version

    return f"{toolchain_version()} headers:{include_digest()}"


@hookimpl
def tilelang_runtime(target):
    """One runtime per process: its contexts and the L2-flush scratch buffer are per device,
    so kernels share them (a runtime per kernel once held a 256 MB buffer per kernel, and an
    autotuner that timed hundreds of candidates ran the GPU out of memory)."""
    from .runtime import shared_runtime

    return shared_runtime()


@hookimpl
def tilelang_codegen(target, module, options):
    from .codegen import CUDACodegen

    source = CUDACodegen(target, options).render(module)
    if "tl::cp_async" in source.source:
        # 16-byte cp.async reads assume 16-byte aligned tensors: the caller's check says so
        import dataclasses

        source = dataclasses.replace(source, extra={**source.extra, "tensor_alignment": 16})
    return source
