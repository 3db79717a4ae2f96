"""The OpenCL dialect of the core's printer: OpenCL C 1.2 from the SIMT lowering.

What the generated program looks like:

    #include "tl_opencl.h"
    __kernel __attribute__((reqd_work_group_size(128, 1, 1)))
    void main_kernel(__global const float* restrict A, ..., int m) {
      __local uchar tl_dyn_smem[16384] __attribute__((aligned(128)));
      __local float S[64];
      int32_t bx = get_group_id(0);
      int32_t tx = get_local_id(0);
      ...
      barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }

- A block is a work-group, a thread a work-item: `blockIdx.x` is `get_group_id(0)`,
  `threadIdx.x` is `get_local_id(0)`, and the runtime launches the global size grid x block.
- Shared memory is `__local`: OpenCL declares it at kernel scope only, so every "shared"
  buffer is declared at the top of the kernel (the printer's placement inside the body is
  a pointer-free no-op), and the packed "shared.dyn" buffers are slices of one fixed-size
  `__local` byte array (its size is known when the kernel is printed).
- Buffers are `__global` parameters; pointers into them and into `__local` memory keep their
  address space (vector accesses cast to `__global float4*`, not a private pointer).
- float16 and bfloat16 are stored as `ushort` and computed in float (`tl_opencl.h`);
  bool is stored as `uchar` (OpenCL forbids bool in buffers and kernel arguments).
- Math is OpenCL's overloaded built-ins (`exp`, `rsqrt`, `fmin`, ...), integer min/max with
  both arguments cast to one type (the built-ins have no mixed overloads).
- `T.print` is OpenCL's `printf`. There is no device assertion (capability `device_assert`
  is not declared; an assertion reaching the printer is a CodegenError).
- Sub-group shuffles (`tl.shfl_xor`) print as `sub_group_shuffle_xor` on archs that declare
  the `warp_shuffle` feature (the device reports cl_khr_subgroup_shuffle and a fixed
  sub-group size); elsewhere the core reduces through `__local` memory.

Rendering needs TVM but no OpenCL platform.
"""
from __future__ import annotations

from tilelang_core.codegen import C_MATH_OPS, C_TYPES, CodegenError, GPUCodegen, buffer_info

__all__ = ["OpenCLCodegen", "OPENCL_TYPES", "OPENCL_MATH_OPS"]

# `tl_opencl.h` typedefs the fixed-width names; bool lives in memory as a byte
OPENCL_TYPES = {**C_TYPES, "bool": "uchar", "float16": "ushort", "bfloat16": "ushort"}

_STORAGE_TYPES = {
    "float16": {"value": "float32", "load": "tl_half_to_float({0})", "store": "tl_float_to_half({0})",
                "round": "tl_round_half({0})"},
    "bfloat16": {"value": "float32", "load": "tl_bf16_to_float({0})", "store": "tl_float_to_bf16({0})",
                 "round": "tl_round_bf16({0})"},
}

_INT_TYPES = {"int8": "char", "uint8": "uchar", "int16": "short", "uint16": "ushort", "int32": "int",
              "uint32": "uint", "int64": "long", "uint64": "ulong", "bool": "uchar"}


def _float(spelling: str) -> dict:
    """One overloaded built-in for float and double."""
    return {"float32": spelling, "float64": spelling}


def _int_minmax(kind: str) -> dict:
    return {dtype: f"{kind}(({ctype})({{0}}), ({ctype})({{1}}))" for dtype, ctype in _INT_TYPES.items()}


def _int_abs() -> dict:
    # OpenCL's abs returns the unsigned type: cast back so arithmetic stays signed
    table = {dtype: f"(({ctype})abs({{0}}))" for dtype, ctype in _INT_TYPES.items() if not ctype.startswith("u")}
    return {**table, **{dtype: "({0})" for dtype, ctype in _INT_TYPES.items() if ctype.startswith("u")}}


OPENCL_MATH_OPS = {
    **{name: _float(f"{name}({{0}})") for name in (
        "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "floor", "ceil", "trunc",
        "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf")},
    **{name: _float(f"{name}({{0}}, {{1}})") for name in (
        "pow", "atan2", "fmod", "hypot", "copysign", "nextafter")},
    "ldexp": _float("ldexp({0}, (int)({1}))"),
    "fma": _float("fma({0}, {1}, {2})"),
    "round": _float("rint({0})"),
    "nearbyint": _float("rint({0})"),
    "fabs": {**_float("fabs({0})"), **_int_abs()},
    "sigmoid": {"float32": "(1.0f / (1.0f + exp(-({0}))))", "float64": "(1.0 / (1.0 + exp(-({0}))))"},
    "isnan": {"float": "isnan({0})", "default": "false"},
    "isinf": {"float": "isinf({0})", "default": "false"},
    "isfinite": {"float": "isfinite({0})", "default": "true"},
    "popcount": {"default": "popcount({0})"},
    "clz": {"default": "clz({0})"},
    "min": {**_float("fmin({0}, {1})"), **_int_minmax("min")},
    "max": {**_float("fmax({0}, {1})"), **_int_minmax("max")},
}
assert set(OPENCL_MATH_OPS) >= set(C_MATH_OPS), sorted(set(C_MATH_OPS) - set(OPENCL_MATH_OPS))

# (kind, dtype) -> the overloaded helper of tl_opencl.h (address space from the pointer)
_ATOMIC_DTYPES = {
    "add": ("int32", "uint32", "int64", "uint64", "float32", "float64"),
    "max": ("int32", "uint32", "int64", "uint64", "float32", "float64"),
    "min": ("int32", "uint32", "int64", "uint64", "float32", "float64"),
    "load": ("int32", "uint32", "int64", "uint64", "float32", "float64"),
    "store": ("int32", "uint32", "int64", "uint64", "float32", "float64"),
}
OPENCL_ATOMIC_OPS = {
    **{(kind, dtype): f"tl_atomic_{kind}({{0}}, {{1}})" for kind, dtypes in _ATOMIC_DTYPES.items()
       if kind != "load" for dtype in dtypes},
    **{("load", dtype): "tl_atomic_load({0})" for dtype in _ATOMIC_DTYPES["load"]},
}

_VECTOR_LANES = (2, 3, 4, 8, 16)
_GLOBAL, _LOCAL, _PRIVATE = "__global", "__local", "__private"


class OpenCLCodegen(GPUCodegen):
    """OpenCL C 1.2 for any OpenCL platform; see the module docstring for the output."""

    language = "opencl"
    kernel_prefix = "__kernel "
    restrict = "restrict"
    preamble = ('#include "tl_opencl.h"',)
    helper_qualifier = "inline"
    barrier = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"
    thread_index = {
        "blockIdx.x": "get_group_id(0)", "blockIdx.y": "get_group_id(1)", "blockIdx.z": "get_group_id(2)",
        "threadIdx.x": "get_local_id(0)", "threadIdx.y": "get_local_id(1)", "threadIdx.z": "get_local_id(2)",
    }
    shared_qualifier = "__local "
    dyn_shared_decl = "__local uchar {name}[{size}] __attribute__((aligned({align})));"
    addressed_local_format = "__attribute__((aligned(16))) "
    unroll_pragma = "#pragma unroll"
    type_map = OPENCL_TYPES
    storage_types = _STORAGE_TYPES
    math_ops = OPENCL_MATH_OPS
    atomic_ops = OPENCL_ATOMIC_OPS
    reinterpret_format = "as_{2}({0})"
    shuffle_xor_format = "sub_group_shuffle_xor({0}, (uint)({1}))"
    reserved_names = GPUCodegen.reserved_names + (
        "half", "char", "uchar", "short", "ushort", "uint", "ulong", "global", "local", "constant",
        "private", "kernel", "barrier", "vload_half", "vstore_half_rte", "get_group_id", "get_local_id",
        "as_float", "as_uint", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t",
        "int64_t", "uint64_t", "abs", "clz", "popcount", "fmin", "fmax")
    calling_convention = ("__kernel void entry(__global buffers..., scalars...) in parameter order; "
                          "global size grid x block, local size block; float16/bfloat16 as ushort words")

    # -- launch and signature -------------------------------------------------------------

    def uses_subgroups(self) -> bool:
        """Whether the target declares sub-group shuffles (the `warp_shuffle` feature)."""
        return self.target is not None and "warp_shuffle" in self.target.capabilities.features

    def kernel_signature(self, entry: str, params: list[tuple]) -> str:
        args = ", ".join(self.param_decl(kind, var) for kind, var in params)
        block = self.launch.block
        attributes = ""
        if all(isinstance(b, int) for b in block):
            dims = (tuple(block) + (1, 1, 1))[:3]
            attributes = f"__attribute__((reqd_work_group_size({dims[0]}, {dims[1]}, {dims[2]}))) "
        if self.uses_subgroups():
            # the core's shuffles assume sub-groups of exactly warp_size work-items
            warp = self.target.capabilities.warp_size
            attributes += f"__attribute__((intel_reqd_sub_group_size({warp}))) "
        return f"{self.kernel_prefix}{attributes}{self.kernel_return_type} {entry}({args})"

    def file_header(self) -> list[str]:
        head = super().file_header()
        if self.uses_subgroups():
            at = head.index(self.preamble[0])
            head[at:at] = ["#pragma OPENCL EXTENSION cl_khr_subgroups : enable",
                           "#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable"]
        return head

    def param_decl(self, kind: str, var) -> str:
        if kind == "scalar":
            return super().param_decl(kind, var)
        return f"{_GLOBAL} {super().param_decl(kind, var)}"

    def render(self, module):
        self._shared_allocs: list = []
        return super().render(module)

    # -- memory ---------------------------------------------------------------------------

    def plan_allocations(self, allocs: list) -> None:
        super().plan_allocations(allocs)
        self._shared_allocs = [a for a in allocs if buffer_info(a.buffer).scope == "shared"]

    def kernel_prologue(self) -> None:
        """The dynamic `__local` array, then every "shared" buffer: OpenCL allows `__local`
        declarations only at kernel scope."""
        super().kernel_prologue()
        for stmt in self._shared_allocs:
            if stmt.buffer not in self.buffer_names:
                GPUCodegen.declare_buffer(self, buffer_info(stmt.buffer), stmt)

    def declare_buffer(self, info, stmt) -> None:
        if info.scope == "shared" and stmt.buffer in self.buffer_names:
            return  # declared at kernel scope by kernel_prologue
        if info.scope == "shared.dyn":
            name = self.bound_name(self.buffer_names, stmt.buffer)
            ctype = f"{_LOCAL} {self.type_name(info.dtype)}"
            self.emit(f"{ctype}* {name} = ({ctype}*)({self.dyn_shared_name} + {self.dyn_shared_offsets[stmt.buffer]});")
            return
        super().declare_buffer(info, stmt)

    def visit_decl(self, s) -> None:
        raise CodegenError(f"buffer {s.buffer.name!r} is declared over a pointer ({s.data}); the OpenCL "
                           f"dialect needs to know a pointer's address space and prints only buffers it "
                           f"allocates or receives as parameters")

    def address_space(self, buffer) -> str:
        """`__global` for parameters, `__local` for shared buffers, `__private` otherwise."""
        if buffer in self.func.params or any(buffer.same_as(p) for p in self.func.params):
            return _GLOBAL
        scope = buffer_info(buffer).scope
        return _LOCAL if scope in ("shared", "shared.dyn") else _PRIVATE

    def vector_type(self, base: str, lanes: int) -> str:
        if lanes not in _VECTOR_LANES:
            raise CodegenError(f"a vector of {lanes} x {base}: OpenCL vectors have 2, 3, 4, 8 or 16 lanes")
        return f"{_INT_TYPES.get(base) or self.type_name(base)}{lanes}"

    def vector_literal(self, base: str, lanes: int, items: list[str]) -> str:
        return f"(({self.vector_type(base, lanes)})({', '.join(items)}))"

    def vector_ref(self, buffer, name: str, ramp) -> str:
        text = super().vector_ref(buffer, name, ramp)  # (*(T4*)(&A[i])): add the address space
        return text.replace("(*(", f"(*({self.address_space(buffer)} ", 1)

    # -- statements -----------------------------------------------------------------------

    def emit_assert(self, cond, message: str) -> None:
        raise CodegenError(f"the kernel asserts on the device ({message!r}); OpenCL has no device "
                           f"assertion (capability device_assert is not declared): check on the host")
