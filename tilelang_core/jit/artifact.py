"""`tilelang_core.lower`: TileLang's `tilelang.lower`, the compile path up to device source.

It runs the pass pipeline and the target's code generator and returns a `CompiledArtifact`,
whose `kernel_source` is the source `compile(...).get_kernel_source()` would show. Nothing is
loaded or cached; with `enable_device_compile=True` the device compiler runs too, so its
errors surface here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..runtime.base import ParamSpec

__all__ = ["CompiledArtifact", "lower"]


@dataclass
class CompiledArtifact:
    """What `lower` produced, with TileLang's field names.

    `device_mod` is an IRModule holding the lowered PrimFunc under its entry name;
    `host_mod` and `rt_mod` are None (the host side is the backend runtime's Python);
    `device_binary` holds the compiled device code when asked for.
    """

    host_mod: Any
    device_mod: Any
    params: list[ParamSpec]
    kernel_source: str
    rt_mod: Any = None
    target: Any = None
    target_host: Any = None
    device_binary: bytes | None = None


def single_prim_func(func_or_mod, caller: str = "lower"):
    """The PrimFunc `func_or_mod` is or holds (an IRModule of one); a TypeError that says what
    to pass for anything else (a plain Python function, a `@tilelang.jit` function, None)."""
    import inspect

    from tvm import ir, tirx

    if isinstance(func_or_mod, tirx.PrimFunc):
        return func_or_mod
    if isinstance(func_or_mod, ir.IRModule):
        funcs = [f for _, f in func_or_mod.functions.items() if isinstance(f, tirx.PrimFunc)]
        if len(funcs) != 1:
            raise ValueError(f"{caller}: the IRModule holds {len(funcs)} PrimFuncs; pass a module with exactly one, "
                             "or the PrimFunc itself")
        return funcs[0]
    from .function import JITFunction

    if isinstance(func_or_mod, JITFunction):
        raise TypeError(f"{caller}: got the @tilelang.jit function {func_or_mod.orig_func.__qualname__}, which "
                        f"compiles itself: call it with its arguments (kernel = {func_or_mod.orig_func.__name__}"
                        f"(...)), or pass the T.prim_func it builds")
    if inspect.isfunction(func_or_mod):
        code = func_or_mod.__code__
        raise TypeError(f"{caller}: got the plain Python function {func_or_mod.__qualname__} (defined at "
                        f"{code.co_filename}:{code.co_firstlineno}), not a kernel; pass a T.prim_func: decorate "
                        f"the kernel with @T.prim_func, or call the function that returns one (e.g. "
                        f"{caller}(matmul(1024, 1024, 1024)))")
    raise TypeError(f"{caller}: expected a T.prim_func or an IRModule, got {type(func_or_mod).__name__}; "
                    f"pass a kernel decorated with @T.prim_func")


def lower(func_or_mod, target: Any = "auto", target_host: Any = None, runtime_only: bool = False,
          enable_host_codegen: bool = False, enable_device_compile: bool = False) -> CompiledArtifact:
    """Lower a `T.prim_func` for `target` and generate its device source.

    `target` takes every spelling `compile` takes ("auto" honours an enclosing
    `with tvm.target.Target(...)`). TileLang's `target_host`, `runtime_only` and
    `enable_host_codegen` are accepted and change nothing: the host side of a kernel is its
    backend's runtime. `enable_device_compile=True` also runs the device compiler and keeps
    the binary in `device_binary`.
    """
    from tvm import ir

    from ..plugin import get_plugin_manager, hooks_for
    from .api import _param_specs
    from .api import lower as run_pipeline
    from .options import CompileOptions
    from .postproc import postprocess

    func = single_prim_func(func_or_mod)
    tgt = get_plugin_manager().parse_target(target)
    options = CompileOptions()
    hooks = hooks_for(tgt)
    lowered = run_pipeline(func, tgt, options)
    source = postprocess(tgt, hooks.codegen(lowered, options))
    binary = hooks.compile(source, options) if enable_device_compile else None
    return CompiledArtifact(
        host_mod=None,
        device_mod=ir.IRModule({source.entry: lowered}),
        params=_param_specs(func),
        kernel_source=source.source,
        target=tgt,
        target_host=target_host,
        device_binary=binary,
    )
