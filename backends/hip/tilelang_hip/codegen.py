"""The HIP dialect of the core's C-family printer: AMD GPUs, wavefront 64 (CDNA) or 32 (RDNA).

Calling convention of the generated code (what `HIPRuntime` launches through
`hipModuleLaunchKernel`):

    extern "C" __global__ __launch_bounds__(<threads>) void <entry>(<T>* __restrict__ buf0, ...,
                                                                    int32_t m, ...);

Parameters come in the PrimFunc's order: a device pointer per buffer (`const` when the kernel
never writes it), a value per scalar. Dynamic LDS is one `extern __shared__` byte array; its
size is `KernelSource.shared_memory`.

float16/bfloat16 and the fnuz float8 types of gfx942 are storage types (`half_t`,
`bfloat16_t`, `fp8_e4m3fnuz_t`, `fp8_e5m2fnuz_t` of `tl_hip_common.h`): a load converts to
float, arithmetic runs in float, a store rounds back. MFMA wrappers
(`tl_hip_mfma.h`) are included when the lowered code calls one.
"""
from __future__ import annotations

from tilelang_core.codegen import PHILOX_FORMATS, SIMT_INDEX_FORMATS, CodegenError, GPUCodegen
from tilelang_core.codegen import C_MATH_OPS, C_TYPES

__all__ = ["HIPCodegen"]


def _storage(ctype: str) -> dict:
    return {"value": "float32", "load": "tl_to_float({0})", "store": f"tl_from_float<{ctype}>({{0}})",
            "round": f"tl_round<{ctype}>({{0}})"}


# dtypes stored in their own type and computed in float32 (types of tl_hip_common.h)
_STORAGE_TYPES = {"float16": "half_t", "bfloat16": "bfloat16_t",
                  "float8_e4m3fnuz": "fp8_e4m3fnuz_t", "float8_e5m2fnuz": "fp8_e5m2fnuz_t"}

_ATOMIC_DTYPES = {
    "add": ("float32", "float64", "int32", "uint32", "int64", "uint64"),
    "max": ("float32", "int32", "uint32"),
    "min": ("float32", "int32", "uint32"),
}


class HIPCodegen(GPUCodegen):
    """HIP C++ for clang (HIP mode), hipcc and hiprtc; see the module docstring."""

    language = "hip"
    kernel_prefix = 'extern "C" __global__ '
    restrict = "__restrict__"
    preamble = ("#include <hip/hip_runtime.h>", '#include "tl_hip_common.h"')
    helper_qualifier = "static __device__ __forceinline__"
    barrier = "__syncthreads();"
    shared_qualifier = "__shared__ "
    dyn_shared_decl = "extern __shared__ __align__({align}) unsigned char {name}[];"
    unroll_pragma = "#pragma unroll"
    # a local array read or written through a wider pointer (16-byte vectors, decoders)
    addressed_local_format = "__attribute__((aligned(16))) "
    type_map = {**C_TYPES, **_STORAGE_TYPES}
    storage_types = {dtype: _storage(ctype) for dtype, ctype in _STORAGE_TYPES.items()}
    math_ops = {**C_MATH_OPS, "min": {"default": "tl_min({0}, {1})"},
                "max": {"default": "tl_max({0}, {1})"}}
    inf_literal = "__builtin_huge_valf()"
    nan_literal = "__builtin_nanf(\"\")"
    atomic_ops = {(kind, dtype): f"tl_atomic_{kind}({{0}}, {{1}})"
                  for kind, dtypes in _ATOMIC_DTYPES.items() for dtype in dtypes}
    reinterpret_format = "__builtin_bit_cast({2}, {0})"
    # builtins.INTRINSIC_OPS (HIP Programming Guide, "Warp cross-lane functions": a
    # wavefront's ops take no mask; ballots are 64-bit)
    intrinsic_formats = {
        "tl.shfl_sync": "__shfl({1}, {2}, {3})",
        "tl.shfl_up_sync": "__shfl_up({1}, {2}, {3})",
        "tl.shfl_down_sync": "__shfl_down({1}, {2}, {3})",
        "tl.shfl_xor_sync": "__shfl_xor({1}, {2}, {3})",
        "tl.any_sync": "__any({1})",
        "tl.all_sync": "__all({1})",
        "tl.ballot_sync": "((uint64_t)__ballot({1}))",
        "tl.ballot": "((uint64_t)__ballot({0}))",
        "tl.activemask": "((uint64_t)__ballot(1))",
        "tl.sync_warp": "__builtin_amdgcn_wave_barrier()",
        "tl.syncthreads_count": "__syncthreads_count({0})",
        "tl.syncthreads_and": "__syncthreads_and({0})",
        "tl.syncthreads_or": "__syncthreads_or({0})",
        **SIMT_INDEX_FORMATS,
        ("tl.ieee_add", "rn"): "__fadd_rn({0}, {1})",
        ("tl.ieee_sub", "rn"): "__fsub_rn({0}, {1})",
        ("tl.ieee_mul", "rn"): "__fmul_rn({0}, {1})",
        ("tl.ieee_fdiv", "rn"): "__fdiv_rn({0}, {1})",
        ("tl.ieee_fmaf", "rn"): "__fmaf_rn({0}, {1}, {2})",
        ("tl.ieee_frcp", "rn"): "__frcp_rn({0})",
        ("tl.ieee_fsqrt", "rn"): "__fsqrt_rn({0})",
        "tl.ieee_frsqrt": "__frsqrt_rn({0})",
        "tl.fast_rcp": "__builtin_amdgcn_rcpf({0})",
        **{f"tl.warp_reduce_{kind}": f"tl_warp_reduce_{kind}({{0}})" for kind in ("sum", "max", "min", "bitand", "bitor")},
        **PHILOX_FORMATS,
    }
    assert_format = "TL_DEVICE_ASSERT({cond}, {msg});"
    reserved_names = GPUCodegen.reserved_names + (
        "half_t", "bfloat16_t", "warpSize", "half", "bfloat16", "hip_bfloat16", "__half")
    calling_convention = ('extern "C" __global__ entry(buffer pointers and scalars in PrimFunc '
                          'order), launched with KernelSource.grid/block/shared_memory')

    @property
    def shuffle_xor_format(self) -> str:
        """Butterflies span the target's wavefront: 64 lanes on CDNA, 32 on RDNA."""
        width = self.target.capabilities.warp_size if self.target is not None else 64
        return f"tl_shfl_xor({{0}}, {{1}}, {width})"

    # -- launch ---------------------------------------------------------------------------

    def kernel_signature(self, entry: str, params: list[tuple]) -> str:
        # __launch_bounds__ sits between __global__ and the return type: clang refuses an
        # attribute in front of the `extern "C"` linkage specification.
        args = ", ".join(self.param_decl(kind, var) for kind, var in params)
        threads = self.block_threads(self.launch)
        bounds = f"__launch_bounds__({threads}) " if threads is not None else ""
        return f"{self.kernel_prefix}{bounds}{self.kernel_return_type} {entry}({args})"

    # -- statements -----------------------------------------------------------------------

    # -- helpers and headers --------------------------------------------------------------

    def note_call(self, op_name: str, call) -> None:
        super().note_call(op_name, call)
        if op_name in ("tirx.call_extern", "tirx.call_pure_extern"):
            if str(call.args[0].value).startswith("tl_mfma"):
                self.used_helpers.add("mfma")

    def vector_type(self, base: str, lanes: int) -> str:
        """Clang vector types (`ext_vector_type`), declared on demand in the file header.
        Storage-only and 8-bit types move as raw 32-bit words (`tl_bits32x<n>`): their vectors
        are only ever copied, and a word vector is what the 16-byte load/store instructions take."""
        nbytes = self.dtype_bytes(base) * lanes
        if (base in self.storage_types or self.dtype_bytes(base) == 1) and nbytes % 4 == 0:
            name, element, count = f"tl_bits32x{nbytes // 4}", "unsigned int", nbytes // 4
        else:
            name, element, count = f"tl_{base}x{lanes}", self.type_name(base), lanes
        self.vector_typedefs[name] = f"typedef {element} {name} __attribute__((ext_vector_type({count})));"
        return name

    def file_header(self) -> list[str]:
        head = super().file_header()
        if "mfma" in self.used_helpers:
            head.insert(head.index('#include "tl_hip_common.h"') + 1, '#include "tl_hip_mfma.h"')
        if self.vector_typedefs:
            head[-1:-1] = sorted(self.vector_typedefs.values())
        return head

    def render(self, module):
        self.vector_typedefs: dict = {}
        return super().render(module)
