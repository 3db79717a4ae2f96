"""The MSL (Metal Shading Language) dialect of the core's C-family printer.

Calling convention of the generated code (what `MetalRuntime` dispatches):

    [[kernel, max_total_threads_per_threadgroup(<threads>)]]
    void <entry>(device T* buf0 [[buffer(0)]], ..., constant long& m_arg [[buffer(k)]], ...,
                 uint3 tl_block_id [[threadgroup_position_in_grid]],
                 uint3 tl_thread_id [[thread_position_in_threadgroup]]);

Parameters come in the PrimFunc's order, one argument-table slot each: a `device` pointer per
buffer (`const` when the kernel never writes it), a `constant` reference per scalar. Scalars
travel as torch.mps passes Python numbers: integers and bools as 8-byte `long`, floating
values as 4-byte `float`; the kernel's prologue converts each to its dtype. Block and thread
indices are kernel parameters with MSL's position attributes, not globals.

Threadgroup memory is static: every shared buffer ("shared" and "shared.dyn") is placed in one
`threadgroup` array declared at the top of the kernel, whose size is known when the source is
printed (torch.mps cannot set a dynamic threadgroup length), at most 32 KB.

float16 and bfloat16 are stored as MSL's `half` and `bfloat` and computed in float (a load
converts, a store rounds), as the other dialects do. There is no double, no printf and no
device-side assert in MSL: a kernel that needs one is refused with the capability named.
The device helpers (`include/tl_metal_common.h`, simdgroup GEMM in `tl_metal_simdgroup.h`)
are pasted into the source, because torch.mps compiles one string with no include path.
"""
from __future__ import annotations

from pathlib import Path

from tvm import tirx

from tilelang_core.codegen import CodegenError, GPUCodegen
from tilelang_core.codegen import buffer_info, dtype_of

__all__ = ["MetalCodegen", "MSL_TYPES", "MSL_MATH_OPS", "address_space"]

_INCLUDE = Path(__file__).parent / "include"

MSL_TYPES = {
    "bool": "bool", "int8": "char", "uint8": "uchar", "int16": "short", "uint16": "ushort",
    "int32": "int", "uint32": "uint", "int64": "long", "uint64": "ulong",
    "float16": "half", "bfloat16": "bfloat", "float32": "float",
}


def _float_only(fmt: str) -> dict:
    return {"float32": fmt}


def _precise(name: str, arity: int = 1) -> dict:
    args = ", ".join(f"{{{i}}}" for i in range(arity))
    return _float_only(f"precise::{name}({args})")


# MSL spellings: the `precise::` forms keep full float32 accuracy whatever the compiler's
# fast-math setting (Metal compiles with fast math on by default); MSL has no double.
MSL_MATH_OPS = {
    **{name: _precise(name) for name in ("exp", "exp2", "exp10", "log", "log2", "log10", "sqrt",
                                         "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan",
                                         "sinh", "cosh", "tanh")},
    "pow": _precise("pow", 2),
    "atan2": _precise("atan2", 2),
    **{name: _float_only(f"metal::{name}({{0}})") for name in ("floor", "ceil", "trunc", "asinh",
                                                               "acosh", "atanh")},
    "round": _float_only("metal::rint({0})"),
    "nearbyint": _float_only("metal::rint({0})"),
    "fabs": {"float32": "metal::fabs({0})", "int": "metal::abs({0})"},
    "log1p": _float_only("tl_log1p({0})"),
    "hypot": _float_only("tl_hypot({0}, {1})"),
    "sigmoid": _float_only("(1.0f / (1.0f + precise::exp(-({0}))))"),
    "fmod": _float_only("metal::fmod({0}, {1})"),
    "copysign": _float_only("metal::copysign({0}, {1})"),
    "ldexp": _float_only("metal::ldexp({0}, {1})"),
    "fma": _float_only("metal::fma({0}, {1}, {2})"),
    "isnan": {"float": "metal::isnan({0})", "default": "false"},
    "isinf": {"float": "metal::isinf({0})", "default": "false"},
    "isfinite": {"float": "metal::isfinite({0})", "default": "true"},
    "popcount": {"default": "metal::popcount({0})"},
    "clz": {"default": "metal::clz({0})"},
    "min": {"default": "metal::min({0}, {1})"},
    "max": {"default": "metal::max({0}, {1})"},
}

_ATOMIC_DTYPES = {"add": ("int32", "uint32", "float32"), "max": ("int32", "uint32"),
                  "min": ("int32", "uint32"), "or": ("int32", "uint32"),
                  "load": ("int32", "uint32", "float32"), "store": ("int32", "uint32", "float32")}

_SHARED_SCOPES = ("shared", "shared.dyn")


def address_space(scope: str) -> str:
    """The MSL address space of a buffer in storage scope `scope`."""
    if scope in _SHARED_SCOPES:
        return "threadgroup"
    if scope in ("local", "local.fragment", "local.var"):
        return "thread"
    return "device"


def _storage(ctype: str) -> dict:
    return {"value": "float32", "load": "float({0})", "store": f"{ctype}({{0}})",
            "round": f"float({ctype}({{0}}))"}


class MetalCodegen(GPUCodegen):
    """MSL for torch.mps / `MTLDevice newLibraryWithSource:`; see the module docstring.

    Every dialect attribute the printer reads is set here, none inherited: the base class's
    defaults are another dialect's spellings. What it takes from `GPUCodegen` is behaviour:
    stores of half/bfloat elements without a trip through float (`visit_store`)."""

    language = "metal"
    kernel_prefix = ""
    kernel_return_type = "void"
    restrict = ""
    preamble = ("#include <metal_stdlib>", "using namespace metal;")
    helper_qualifier = "inline"
    indent_unit = "  "
    barrier = "threadgroup_barrier(mem_flags::mem_threadgroup);"
    thread_index = {
        "blockIdx.x": "tl_block_id.x", "blockIdx.y": "tl_block_id.y", "blockIdx.z": "tl_block_id.z",
        "threadIdx.x": "tl_thread_id.x", "threadIdx.y": "tl_thread_id.y", "threadIdx.z": "tl_thread_id.z",
    }
    shared_qualifier = "threadgroup "
    dyn_shared_name = "tl_smem"
    dyn_shared_decl = ""  # unused: kernel_prologue declares the static threadgroup array
    dyn_shared_alignment = 16
    local_array_suffix = ""
    addressed_local_format = ""  # the helpers read local arrays element by element
    float_cast_format = "float({0})"
    unroll_pragma = "#pragma unroll"
    vectorize_pragma: tuple[str, ...] = ()
    parallel_pragma: tuple[str, ...] = ()
    type_map = MSL_TYPES
    storage_types = {"float16": _storage("half"), "bfloat16": _storage("bfloat")}
    math_ops = MSL_MATH_OPS
    float_suffix = {"float32": "f"}
    inf_literal = "INFINITY"
    nan_literal = "NAN"
    atomic_ops = {(kind, dtype): f"tl_atomic_{kind}({{0}}{'' if kind == 'load' else ', {1}'})"
                  for kind, dtypes in _ATOMIC_DTYPES.items() for dtype in dtypes}
    memory_orders = None  # MSL's device atomics are memory_order_relaxed only
    printf_name = ""
    eager_logic = False
    reinterpret_format = "as_type<{2}>({0})"
    shuffle_xor_format = "simd_shuffle_xor({0}, ushort({1}))"
    # builtins.INTRINSIC_OPS that MSL spells for a SIMD-group (votes; shuffles take no width)
    intrinsic_formats = {
        "tl.any_sync": "((int)simd_any({1}))",
        "tl.all_sync": "((int)simd_all({1}))",
        "tl.ballot_sync": "((ulong)(simd_vote::vote_t)simd_ballot({1}))",
        "tl.ballot": "((ulong)(simd_vote::vote_t)simd_ballot({0}))",
        "tl.activemask": "((ulong)(simd_vote::vote_t)simd_active_threads_mask())",
        "tl.sync_warp": "simdgroup_barrier(mem_flags::mem_none)",
        "tl.warp_reduce_sum": "simd_sum({0})",
        "tl.warp_reduce_max": "simd_max({0})",
        "tl.warp_reduce_min": "simd_min({0})",
        "tl.warp_reduce_bitand": "simd_and({0})",
        "tl.warp_reduce_bitor": "simd_or({0})",
    }
    dp4a_format = "tl_dp4a({0}, {1}, {2})"
    assert_format = ""  # refused in emit_assert: MSL has no device-side assert
    reserved_names = ("tl_block_id", "tl_thread_id", "tl_smem_words", "metal", "precise", "fast", "kernel",
                      "device", "threadgroup", "thread", "constant", "half", "bfloat", "uint", "uchar", "ushort",
                      "ulong", "min", "max", "abs", "exp", "log", "vec", "simd_sum", "simd_max")
    calling_convention = ("MSL kernel entry(device buffers and constant scalars in PrimFunc order, "
                          "[[buffer(i)]] each; scalars as long or float), dispatched with "
                          "KernelSource.grid threadgroups of KernelSource.block threads")

    # -- launch ---------------------------------------------------------------------------

    def block_threads(self, launch) -> int | None:
        """Threads per threadgroup when every block extent is a constant, else None."""
        total = 1
        for extent in launch.block:
            if not isinstance(extent, int):
                return None
            total *= extent
        return total

    def check_launch(self, launch) -> None:
        caps = self.target.capabilities if self.target is not None else None
        limit = caps.max_threads_per_block if caps is not None else 1024
        threads = self.block_threads(launch)
        if threads is None:
            raise CodegenError(f"the kernel's threadgroup size {launch.block} is not a constant; MSL needs "
                               f"it when the kernel is printed (max_total_threads_per_threadgroup); give "
                               f"T.Kernel(..., threads=) a constant")
        if threads > limit:
            raise CodegenError(f"the kernel launches {threads} threads per threadgroup ({launch.block}); "
                               f"{self.target} allows {limit} (capability max_threads_per_block)")

    def launch_bounds(self, launch) -> str:
        return f"[[kernel, max_total_threads_per_threadgroup({self.block_threads(launch)})]] "

    def param_decl(self, kind: str, var) -> str:
        slot = self.param_slots[var]
        if kind == "scalar":
            transport = "float" if dtype_of(var).startswith(("float", "bfloat")) else "long"
            return f"constant {transport}& {self.scalar_args[var]} [[buffer({slot})]]"
        info = buffer_info(var)
        const = "const " if var not in self.written_buffers else ""
        return f"{const}device {self.type_name(info.dtype)}* {self.buffer_names[var]} [[buffer({slot})]]"

    def kernel_signature(self, entry: str, params: list[tuple]) -> str:
        self.param_slots = {var: i for i, (_, var) in enumerate(params)}
        self.scalar_args = {var: self.names.fresh(f"{self.var_names[var]}_arg")
                            for kind, var in params if kind == "scalar"}
        args = [self.param_decl(kind, var) for kind, var in params]
        args += ["uint3 tl_block_id [[threadgroup_position_in_grid]]",
                 "uint3 tl_thread_id [[thread_position_in_threadgroup]]"]
        return f"{self.kernel_prefix}{self.kernel_return_type} {entry}({', '.join(args)})"

    def kernel_prologue(self) -> None:
        for var, arg in self.scalar_args.items():
            ctype = self.value_type_name(dtype_of(var))
            self.emit(f"{ctype} {self.var_names[var]} = {ctype}({arg});")
        if self.dyn_shared_bytes:
            limit = self.target.capabilities.shared_memory_static if self.target is not None else 32 * 1024
            if self.dyn_shared_bytes > limit:
                raise CodegenError(f"the kernel's shared buffers need {self.dyn_shared_bytes} bytes of threadgroup "
                                   f"memory; {self.target} has {limit} (capability shared_memory_static); use "
                                   f"smaller tiles or fewer pipeline stages (num_stages)")
            # float4 words give the array 16-byte alignment; buffers are placed at byte offsets
            words = (self.dyn_shared_bytes + 15) // 16
            self.emit(f"threadgroup float4 {self.dyn_shared_name}_words[{words}];")
            self.emit(f"threadgroup uchar* {self.dyn_shared_name} = "
                      f"(threadgroup uchar*){self.dyn_shared_name}_words;")

    # -- buffers --------------------------------------------------------------------------

    def plan_allocations(self, allocs: list) -> None:
        """Place "shared" buffers like "shared.dyn" ones: all of threadgroup memory is one
        static array (see the module docstring)."""
        from tilelang_core.transform import ATTR_SHARED_LIFETIMES, place_buffers

        attrs = self.func.attrs if self.func is not None and self.func.attrs is not None else {}
        lifetimes = attrs.get(ATTR_SHARED_LIFETIMES, {}) if hasattr(attrs, "get") else {}
        items = []
        for index, stmt in enumerate(allocs):
            info = buffer_info(stmt.buffer)
            if info.scope not in _SHARED_SCOPES:
                continue
            size = info.const_size()
            if size is None:
                raise CodegenError(f"shared buffer {info.name!r} has a symbolic shape {list(info.shape)}; "
                                   f"threadgroup memory needs constant shapes")
            span = lifetimes.get(info.name) if info.scope == "shared.dyn" else None
            first, last = (int(span[0]), int(span[1])) if span is not None else (0, 1 << 30)
            items.append((index, size * self.dtype_bytes(info.dtype), first, last))
        offsets, _ = place_buffers(items, self.dyn_shared_alignment)
        for index, stmt in enumerate(allocs):
            if index in offsets:
                self.dyn_shared_offsets[stmt.buffer] = offsets[index]
        self.dyn_shared_bytes = max((offsets[i] + size for i, size, _, _ in items), default=0)

    def declare_buffer(self, info, stmt) -> None:
        if info.scope in _SHARED_SCOPES:
            name = self.bound_name(self.buffer_names, stmt.buffer)
            ctype = self.type_name(info.dtype)
            offset = self.dyn_shared_offsets[stmt.buffer]
            self.emit(f"threadgroup {ctype}* {name} = (threadgroup {ctype}*)({self.dyn_shared_name} + {offset});")
            return
        super().declare_buffer(info, stmt)

    def visit_decl(self, s) -> None:
        info = buffer_info(s.buffer)
        data = self.expr(s.data)
        name = self.bound_name(self.buffer_names, s.buffer)
        pointer = f"{address_space(info.scope)} {self.type_name(info.dtype)}*"
        self.emit(f"{pointer} {name} = ({pointer})({data});")

    def vector_type(self, base: str, lanes: int) -> str:
        """MSL's built-in vectors (`float4`, `half2`, ...): 2, 3 or 4 lanes."""
        if lanes not in (2, 3, 4) or base not in self.type_map:
            raise CodegenError(f"vector dtype {base}x{lanes} has no MSL type: MSL vectors hold 2, 3 or 4 "
                               f"elements; vectorize by at most 4")
        return f"{self.type_map[base]}{lanes}"

    def vector_ref(self, buffer, name: str, ramp) -> str:
        if not (isinstance(ramp.stride, tirx.IntImm) and ramp.stride.value == 1):
            raise CodegenError(f"strided vector access {buffer.name}[{ramp}] is not supported; "
                               f"the core's vectorizer emits only unit-stride ramps")
        info = buffer_info(buffer)
        base = self.expr(self.flat_index(buffer, [ramp.base]))
        vtype = self.type_name(f"{info.dtype}x{int(ramp.lanes)}")
        return f"(*({address_space(info.scope)} {vtype}*)(&{name}[{base}]))"

    def _int(self, e) -> tuple[str, int]:
        """64-bit literals take MSL's `long` suffixes (`L`, `UL`): MSL has no `long long`."""
        text, prec = super()._int(e)
        return text.replace("LL", "L"), prec

    # -- what MSL cannot say --------------------------------------------------------------

    def emit_assert(self, cond, message: str) -> None:
        raise CodegenError(f"T.device_assert / an assertion in the kernel ({message!r}): MSL has no device-side "
                           f"assert (capability 'device_assert' is not declared by {self.target}); check the "
                           f"condition on the host, or write a flag to an output buffer")

    def printf_call(self, args) -> str:
        raise CodegenError(f"T.print / printf in the kernel: MSL has no printf (capability 'printf' is not "
                           f"declared by {self.target}); copy the values to an output buffer instead")

    # -- helpers and headers --------------------------------------------------------------

    def note_call(self, op_name: str, call) -> None:
        super().note_call(op_name, call)
        if op_name in ("tirx.call_extern", "tirx.call_pure_extern"):
            if str(call.args[0].value).startswith("tl_simdgroup"):
                self.used_helpers.add("simdgroup")

    def file_header(self) -> list[str]:
        """The preamble, then the device helpers pasted in (no include path at run time)."""
        head = [f"// generated by tilelang-core ({type(self).__name__}) from {self.entry}"]
        head += list(self.preamble)
        files = ["tl_metal_common.h"] + (["tl_metal_simdgroup.h"] if "simdgroup" in self.used_helpers else [])
        for name in files:
            head.append("")
            head += (_INCLUDE / name).read_text().rstrip("\n").split("\n")
        return head + [""]
