"""The TVM-free runtime half: kernel metadata, the runtime contract, export and load."""
from .base import (
    CompileError,
    KernelCallError,
    KernelMeta,
    KernelSource,
    LoadedKernel,
    ParamSpec,
    Runtime,
    WallTimer,
    eval_launch_expr,
)

__all__ = [
    "CompileError",
    "KernelCallError",
    "KernelMeta",
    "KernelSource",
    "LoadedKernel",
    "ParamSpec",
    "Runtime",
    "WallTimer",
    "eval_launch_expr",
]
