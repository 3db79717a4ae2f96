"""The TVM-free runtime half: kernel metadata, the runtime contract, export and load, and the
pieces runtimes on a driver API share (`driver_args`: ctypes kernel arguments, a runtime made
on first use)."""
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
from .elf import ELFError, defined_symbols, require_entry
from .driver_args import RuntimeOnDemand, bfloat16_bits, float16_bits, pack_driver_args, scalar_packer

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
    "ELFError",
    "defined_symbols",
    "require_entry",
    "RuntimeOnDemand",
    "bfloat16_bits",
    "float16_bits",
    "pack_driver_args",
    "scalar_packer",
]
