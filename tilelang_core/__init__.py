"""tilelang-core: a tile-level kernel language with pluggable backends.

Importing this package is cheap: TVM (the compiler substrate) and every backend's runtime
dependency load only when first needed, so exported kernels run where TVM is not installed.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

# The modules of the compiler half ([compiler] extra); a runtime-only install lacks them.
_COMPILER_MODULES = ("tvm", "tvm_ffi")
COMPILER_HINT = ("pip install 'tilelang-core[compiler]' to compile here; kernels compiled and exported "
                 "elsewhere (kernel.export) run without it through tilelang_core.load")

# public name -> "module:attribute", resolved on first access
_LAZY = {
    "hookimpl": "tilelang_core.plugin.hookspecs:hookimpl",
    "Target": "tilelang_core.plugin.target:Target",
    "TargetKind": "tilelang_core.plugin.target:TargetKind",
    "TargetError": "tilelang_core.plugin.target:TargetError",
    "Capabilities": "tilelang_core.plugin.capabilities:Capabilities",
    "MatrixInstruction": "tilelang_core.plugin.capabilities:MatrixInstruction",
    "Detection": "tilelang_core.plugin.manager:Detection",
    "get_plugin_manager": "tilelang_core.plugin.manager:get_plugin_manager",
    "load": "tilelang_core.runtime.export:load",
    "language": "tilelang_core.language",
    "PassConfigKey": "tilelang_core.jit.options:PassConfigKey",
    "JITKernel": "tilelang_core.jit.api:JITKernel",
    "lower": "tilelang_core.jit.artifact:lower",
    "par_compile": "tilelang_core.jit.parallel:par_compile",
    "CompiledArtifact": "tilelang_core.jit.artifact:CompiledArtifact",
    "TensorSupplyType": "tilelang_core.utils.tensor:TensorSupplyType",
    "profiler": "tilelang_core.compat.modules.profiler",
    "testing": "tilelang_core.testing",
    "math": "tilelang_core.math",
    "tools": "tilelang_core.tools",
    "utils": "tilelang_core.utils",
    "autotune": "tilelang_core.autotuner:autotune",
    "autotuner": "tilelang_core.autotuner",
    # TileLang's top-level conveniences, at the paths its programs use
    "cdiv": "tilelang_core.compat.names:cdiv",
    "next_power_of_2": "tilelang_core.compat.names:next_power_of_2",
    "DataType": "tilelang_core.compat.names:DataType",
    "set_log_level": "tilelang_core.compat.names:set_log_level",
    "logger": "tilelang_core.compat.names:logger",
    "disable_cache": "tilelang_core.compat.cache_switch:disable_cache",
    "enable_cache": "tilelang_core.compat.cache_switch:enable_cache",
    "is_cache_enabled": "tilelang_core.compat.cache_switch:is_cache_enabled",
    "layout": "tilelang_core.layout",
    "transform": "tilelang_core.transform",
    "Layout": "tilelang_core.language.layout:Layout",
    "Fragment": "tilelang_core.language.layout:Fragment",
    "Profiler": "tilelang_core.runtime.profiler:Profiler",
    "dtypes": "tilelang_core.language.dtypes",
    "ops": "tilelang_core.ops",
    # TileLang's `tilelang.tvm`: the TVM kernels are compiled with (read as an attribute too)
    "tvm": "tvm",
}

# The ready operators at the top level (`tilelang_core.softmax(x)`): TileLang's top level has
# none of these names. `sum`, `max` and `min` resolve too but stay out of `__all__`, so that
# `from tilelang_core import *` does not shadow Python's builtins.
_OPS = ("gelu", "silu", "bias_gelu", "swiglu", "rope", "softmax", "log_softmax", "layer_norm", "rms_norm",
        "add_rms_norm", "cross_entropy", "quantize_per_token", "mean", "cumsum", "topk", "gemm", "batched_gemm",
        "grouped_gemm", "dequantize_gemv", "conv2d", "flash_attention", "flash_attention_varlen",
        "attention_decode")
_LAZY.update({name: f"tilelang_core.ops:{name}" for name in (*_OPS, "sum", "max", "min")})

# The core's public API for backends: these modules, each exposing the names in its `__all__`
# (tests/plugin/test_backend_boundary.py checks that every backend package imports nothing
# else). Everything else in tilelang_core is internal and may change without notice.
PUBLIC_MODULES = (
    "tilelang_core",
    "tilelang_core.codegen",
    "tilelang_core.env",
    "tilelang_core.ir",
    "tilelang_core.jit",
    "tilelang_core.language",
    "tilelang_core.layout",
    "tilelang_core.plugin",
    "tilelang_core.runtime",
    "tilelang_core.testing",
    "tilelang_core.transform",
)

# `jit` is both a subpackage and the decorator (as in TileLang): bind the function after the
# subpackage import so the name means the decorator. The JIT imports TVM only when it compiles.
from .jit.api import compile, jit  # noqa: E402

__all__ = ["__version__", "COMPILER_HINT", "PUBLIC_MODULES", "compile", "jit",
           *(n for n in _LAZY if n not in ("sum", "max", "min", "tvm"))]


def __getattr__(name: str) -> Any:
    spec = _LAZY.get(name)
    if spec is None and name.startswith("register_") and "_postproc" in name:
        # TileLang's `register_<kind>_postproc[_callback]`, for every target kind
        return getattr(importlib.import_module("tilelang_core.compat.modules.engine.callback"), name)
    if spec is None:
        raise AttributeError(f"module 'tilelang_core' has no attribute {name!r}")
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name in _COMPILER_MODULES:
            raise ImportError(f"tilelang_core.{name} needs the compiler half (TVM, module {exc.name!r}), which "
                              f"this install lacks: {COMPILER_HINT}") from exc
        raise
    value = getattr(module, attr) if attr else module
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


def _activate_pass_diff() -> None:
    """`TILELANG_PASS_DIFF` set: report every pass from the first import on (TileLang does this
    at import too). A runtime-only install (no TVM) runs no passes, so there is nothing to hook."""
    from .env import get_pass_diff_mode

    if get_pass_diff_mode() is None:
        return
    try:
        import tvm  # noqa: F401
    except ModuleNotFoundError:
        return
    from .utils.pass_diff_hook import install_pass_diff_hook

    install_pass_diff_hook()


_activate_pass_diff()
