"""Hook implementations of the CPU backend: each a short delegation."""
from __future__ import annotations

from tilelang_core.plugin import Detection, hookimpl

from . import target as _target


@hookimpl
def tilelang_register_targets(registry):
    registry.add_kind(_target.cpu_kind())
    # TileLang's and TVM's host targets: C source and LLVM both mean the host CPU here
    registry.add_spelling("c", "cpu")
    registry.add_spelling("llvm", "cpu")


@hookimpl
def tilelang_compat_modules():
    # TileLang's CPU namespace (its C backend's ops and passes): this backend's, not provided yet
    return {"tilelang.cpu": None}


@hookimpl
def tilelang_detect_targets():
    from . import compile as _compile

    cc = _compile.find_compiler()
    arch = _target.host_arch()
    reason = f"host CPU ({arch}); C compiler: {cc}" if cc else "host CPU; no C compiler found (install gcc or set TILELANG_CC)"
    found = [Detection("cpu", arch, device=cc is not None, toolchain=cc is not None, reason=reason)]
    family = _target.arch_family(arch)
    for other in _target.CPU_ARCHS:
        if other == arch:
            continue
        if _target.runs_on_host(other):  # a lower x86-64 level, or portable C
            found.append(Detection("cpu", other, device=cc is not None, toolchain=cc is not None,
                                   reason=f"runs on this host ({arch}); C compiler: {cc}" if cc else reason))
            continue
        # the host compiler builds other archs of its own family (x86-64 levels), not others
        cross = cc is not None and _target.arch_family(other) == family
        why = (f"needs {other}, this host is {arch}; the host compiler builds it (export and run there)"
               if cross else f"needs {other}, this host is {arch}; no cross compiler: source is generated only")
        found.append(Detection("cpu", other, device=False, toolchain=cross, reason=why))
    return found


@hookimpl
def tilelang_codegen(target, module, options):
    from .codegen import CPUCodegen

    return CPUCodegen(target, options).render(module)


@hookimpl
def tilelang_compile(target, source, options):
    from . import compile as _compile

    flags = tuple(getattr(options, "extra_flags", ()) or ())  # compile(compile_flags=), T.annotate_compile_flags
    return _compile.compile_source(source.source, target.arch, name=source.entry, flags=flags)


@hookimpl
def tilelang_runtime(target):
    from .runtime import CPURuntime

    return CPURuntime()


@hookimpl
def tilelang_cache_key(target, options):
    from . import compile as _compile

    return _compile.cache_key(target.arch)


@hookimpl
def tilelang_lower_tile_op(target, op, ctx):
    from .lower import lower_tile_op

    return lower_tile_op(op, ctx)
