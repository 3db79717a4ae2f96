"""Hook implementations of the MUSA backend: each a short delegation."""
from __future__ import annotations

from tilelang_core.plugin import hookimpl

from . import detect as _detect
from . import target as _target


@hookimpl
def tilelang_register_targets(registry):
    from . import spellings

    registry.add_kind(_target.musa_kind())
    for name in spellings.SPELLINGS:
        registry.add_spelling(name, spellings.resolve)


@hookimpl
def tilelang_detect_targets():
    return _detect.detect()


@hookimpl
def tilelang_language_names():
    from .language import LANGUAGE_NAMES

    return dict(LANGUAGE_NAMES)


@hookimpl
def tilelang_language_keywords():
    from .language import KEYWORDS

    return {call: dict(words) for call, words in KEYWORDS.items()}


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
def tilelang_codegen(target, module, options):
    from .codegen import MUSACodegen

    source = MUSACodegen(target, options).render(module)
    if "tl_musa_g2s" in source.source:
        # 16-byte async copies read 16-byte aligned tensors: the caller's check says so
        import dataclasses

        source = dataclasses.replace(source, extra={**source.extra, "tensor_alignment": 16})
    return source


@hookimpl
def tilelang_check_source(target, source):
    from .check import check_syntax

    return check_syntax(source.source, source.entry)


@hookimpl
def tilelang_compile(target, source, options):
    from .compile import MUSAToolchainError, compile_musa, source_only

    try:
        return compile_musa(source.source, target.arch, {
            "flags": list(options.extra_flags),
            "fast_math": options.fast_math,
            "line_map": source.line_map,
        })
    except MUSAToolchainError as exc:  # no mcc: a kernel that exports its source (as Metal's does)
        return source_only(source.source, target.arch, str(exc))


@hookimpl
def tilelang_cache_key(target, options):
    from .compile import cache_key

    return cache_key(target.arch)


@hookimpl
def tilelang_runtime(target):
    from .runtime import MUSARuntimeOnDemand

    return MUSARuntimeOnDemand()
