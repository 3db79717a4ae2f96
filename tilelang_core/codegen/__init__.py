"""Code generation: the shared C-family printer and the device builtins it understands.

Public API for backends: the printer (`CStyleCodegen`, the SIMT layer `GPUCodegen`), its
tables (`C_TYPES`, `C_MATH_OPS`, `SIMT_THREAD_INDEX`), what a dialect reads from the IR
(`buffer_info`, `dtype_of`, `iter_exprs`, `THREAD_TAGS`, `find_launch`, `param_specs`), the
precedences a call handler returns (`PREC_ATOM`, `PREC_ADD`), `c_string_literal`, and the
device builtins. The modules inside are internal.

Importing this package imports TVM; the runtime half of the project never does.
"""
from .analysis import (
    THREAD_TAGS,
    CodegenError,
    LaunchInfo,
    NameTable,
    buffer_info,
    dtype_of,
    find_launch,
    iter_exprs,
    param_specs,
    split_lanes,
)
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
    sync_group,
    sync_threads,
)
from .cexpr import PREC_ADD, PREC_ATOM, c_string_literal
from .cstyle import C_MATH_OPS, C_TYPES, PHILOX_FORMATS, CStyleCodegen
from .gpu import SIMT_INDEX_FORMATS, SIMT_THREAD_INDEX, GPUCodegen

__all__ = [
    "PREC_ADD",
    "PREC_ATOM",
    "THREAD_TAGS",
    "c_string_literal",
    "iter_exprs",
    "BUILTIN_OPS",
    "MEMORY_ORDERS",
    "C_MATH_OPS",
    "C_TYPES",
    "CStyleCodegen",
    "CodegenError",
    "GPUCodegen",
    "PHILOX_FORMATS",
    "SIMT_INDEX_FORMATS",
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
    "split_lanes",
    "printf",
    "register_builtins",
    "sync_group",
    "sync_threads",
]
