"""Code generation: the shared C-family printer and the device builtins it understands.

Importing this package imports TVM; the runtime half of the project never does.
"""
from .analysis import CodegenError, LaunchInfo, NameTable, buffer_info, dtype_of, find_launch, param_specs
from .builtins import (
    BUILTIN_OPS,
    MEMORY_ORDERS,
    atomic_add,
    atomic_load,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_store,
    device_assert,
    printf,
    register_builtins,
    sync_threads,
)
from .cstyle import C_MATH_OPS, C_TYPES, CStyleCodegen
from .gpu import SIMT_THREAD_INDEX, GPUCodegen

__all__ = [
    "BUILTIN_OPS",
    "MEMORY_ORDERS",
    "C_MATH_OPS",
    "C_TYPES",
    "CStyleCodegen",
    "CodegenError",
    "GPUCodegen",
    "SIMT_THREAD_INDEX",
    "LaunchInfo",
    "NameTable",
    "atomic_add",
    "buffer_info",
    "dtype_of",
    "atomic_load",
    "atomic_max",
    "atomic_min",
    "atomic_or",
    "atomic_store",
    "device_assert",
    "find_launch",
    "param_specs",
    "printf",
    "register_builtins",
    "sync_threads",
]
