"""The MUSA dialect of the core's C-family printer: MUSA C++ for mcc (and a clang syntax check).

What the generated file looks like:

    #include "tl_musa_common.h"        // + "tl_musa_async.h" when the kernel copies asynchronously
    extern "C" __global__ void __launch_bounds__(256) main_kernel(const tl_half_t* __restrict__ A, ...) {
      extern __shared__ __align__(128) unsigned char tl_dyn_smem[];
      int32_t bx = blockIdx.x;
      ...
      __syncthreads_lm();
    }

- The SIMT spellings CUDA and MUSA share are the core's `GPUCodegen`'s; MUSA spells some
  things its own way, set here (the block barrier is `__syncthreads_lm()`, the one the MUSA
  port prints for a shared-memory sync).
- float16 / bfloat16 / float8 are stored as `tl_half_t` / `tl_bfloat16_t` / `tl_fp8_*` of
  tl_musa_common.h and computed in float (a load converts, a store rounds to nearest even).
- `tl.atomic_*` become the header's `tl_atomic_add/max/min`; `tl.printf` is `printf`;
  `tl.device_assert` is `TL_DEVICE_ASSERT(cond, "file:line: msg", "kernel")` (prints, then traps).
- Calls of the backend's lowerings (`tl_musa_*` helpers of tl_musa_async.h / tl_musa_tme.h /
  tl_musa_tce.h / tl_musa_fmma.h) are printed as they are; the header that declares them is
  included when one is called, and a call whose capability the target lacks is refused.
- A kernel that loads through TME (`lower_tme`) takes one `MUtensorDescriptor` parameter per
  tensor it loads, after every other parameter (`tl_musa_desc_<i>`; the metadata's
  `extra["tensor_descriptors"]` says which tensor each describes), and its shared tiles start
  on 1024-byte boundaries; a kernel that initialises ASYNC barriers records the highest id
  first (`tl_musa_barrier_record<n>()`).

Rendering needs TVM but no driver, no SDK and no GPU.
"""
from __future__ import annotations

import json

from tvm import ir, tirx

from tilelang_core.codegen import PHILOX_FORMATS, SIMT_INDEX_FORMATS, CodegenError, GPUCodegen
from tilelang_core.codegen import buffer_info, dtype_of, iter_exprs
from tilelang_core.codegen import PREC_ATOM, c_string_literal
from tilelang_core.codegen import C_MATH_OPS, C_TYPES
from tilelang_core.ir import SCOPE_BARRIER

__all__ = ["MUSACodegen", "MUSA_TYPES", "HEADERS"]

# dtypes stored in their own bits and computed in float32 (types of tl_musa_common.h)
_STORAGE_TYPES = {"float16": "tl_half_t", "bfloat16": "tl_bfloat16_t",
                  "float8_e4m3fn": "tl_fp8_e4m3_t", "float8_e5m2": "tl_fp8_e5m2_t"}
MUSA_TYPES = {**C_TYPES, **_STORAGE_TYPES}

_ATOMIC_DTYPES = {"add": ("float32", "int32"), "max": ("int32",), "min": ("int32",)}

# extern-call name prefix -> the backend header that declares it
HEADERS = {"tl_musa_g2s": "tl_musa_async.h", "tl_musa_barrier": "tl_musa_async.h", "tl_musa_tme": "tl_musa_tme.h",
           "tl_musa_tce": "tl_musa_tce.h", "tl_musa_fmma": "tl_musa_fmma.h", "tl_musa_bfmma": "tl_musa_fmma.h"}
# extern-call name prefix -> (capability kind, name, what uses it): refused on targets without it
NEEDS = {"tl_musa_tce": ("matrix", "tce", "T.gemm on the TCE, T.tce_commit_group, T.tce_wait_group"),
         "tl_musa_tme": ("copy", "tme", "TME loads of a T.Pipelined loop"),
         "tl_musa_barrier": ("barrier", "async_barrier", "ASYNC barriers (T.Pipelined on TME, T.alloc_barrier)")}
# a TME load's descriptor: a kernel parameter after every other one
DESCRIPTOR_PARAM = "tl_musa_desc_{}"
DESCRIPTOR_DECL = "__attribute__((grid_constant)) const MUtensorDescriptor {}"
TME_SHARED_ALIGNMENT = 1024


def _storage(ctype: str) -> dict:
    return {"value": "float32", "load": "tl_to_float({0})", "store": f"tl_from_float<{ctype}>({{0}})",
            "round": f"tl_round<{ctype}>({{0}})"}


class MUSACodegen(GPUCodegen):
    """MUSA C++ for mcc; see the module docstring for the shape of the output. The SIMT
    spellings MUSA shares with CUDA (`__shared__`, `blockIdx.x`, `__restrict__`, `#pragma
    unroll`, the launch limit) come from the core's `GPUCodegen`."""

    language = "musa"
    kernel_prefix = 'extern "C" __global__ '
    kernel_return_type = "void"
    preamble = ('#include "tl_musa_common.h"',)
    helper_qualifier = "static __device__ __forceinline__"
    indent_unit = "  "
    barrier = "__syncthreads_lm();"
    dyn_shared_name = "tl_dyn_smem"
    dyn_shared_alignment = 128
    local_array_suffix = ""
    addressed_local_format = "__align__(16) "
    vectorize_pragma: tuple[str, ...] = ()
    parallel_pragma: tuple[str, ...] = ()
    type_map = MUSA_TYPES
    storage_types = {dtype: _storage(ctype) for dtype, ctype in _STORAGE_TYPES.items()}
    math_ops = {**C_MATH_OPS,
                "round": {"float32": "rintf({0})", "float64": "rint({0})"},
                "nearbyint": {"float32": "rintf({0})", "float64": "rint({0})"},
                "min": {"default": "tl_min({0}, {1})"}, "max": {"default": "tl_max({0}, {1})"}}
    float_suffix = {"float32": "f"}
    inf_literal = "__builtin_huge_valf()"
    nan_literal = '__builtin_nanf("")'
    atomic_ops = {(kind, dtype): f"tl_atomic_{kind}({{0}}, {{1}})"
                  for kind, dtypes in _ATOMIC_DTYPES.items() for dtype in dtypes}
    memory_orders = None  # relaxed atomics only
    printf_name = "printf"
    eager_logic = False
    reinterpret_format = "__builtin_bit_cast({2}, {0})"
    shuffle_xor_format = "tl_shfl_xor({0}, {1})"
    # builtins.INTRINSIC_OPS: MUSA keeps CUDA's warp intrinsics (mask first, 32-bit ballots)
    intrinsic_formats = {
        "tl.shfl_sync": "__shfl_sync({0}, {1}, {2}, {3})",
        "tl.shfl_up_sync": "__shfl_up_sync({0}, {1}, {2}, {3})",
        "tl.shfl_down_sync": "__shfl_down_sync({0}, {1}, {2}, {3})",
        "tl.shfl_xor_sync": "__shfl_xor_sync({0}, {1}, {2}, {3})",
        "tl.any_sync": "__any_sync({0}, {1})",
        "tl.all_sync": "__all_sync({0}, {1})",
        "tl.ballot_sync": "((uint64_t)__ballot_sync({0}, {1}))",
        "tl.ballot": "((uint64_t)__ballot_sync(0xffffffffu, {0}))",
        "tl.sync_warp": "__syncwarp({0})",
        **SIMT_INDEX_FORMATS,
        **PHILOX_FORMATS,
    }
    dp4a_format = None  # the core's portable helper
    assert_format = "TL_DEVICE_ASSERT({cond}, {msg}, {kernel});"
    reserved_names = GPUCodegen.reserved_names + (
        "warpSize", "tl_half_t", "tl_bfloat16_t", "tl_fp8_e4m3_t", "tl_fp8_e5m2_t",
        "half", "__half", "__mt_bfloat16", "__syncthreads_lm", "tl_dyn_smem")
    calling_convention = ('extern "C" __global__ void entry(buffer pointers..., scalars...) in parameter '
                          'order; dynamic shared memory of KernelSource.shared_memory bytes')

    # -- launch ---------------------------------------------------------------------------

    def launch_bounds(self, launch) -> str:
        """Nothing before the signature: the bounds go after the return type."""
        return ""

    def kernel_signature(self, entry: str, params: list[tuple]) -> str:
        decls = [self.param_decl(kind, var) for kind, var in params]
        decls += [DESCRIPTOR_DECL.format(DESCRIPTOR_PARAM.format(i)) for i in range(len(self.descriptors))]
        threads = self.block_threads(self.launch)
        bounds = f"__launch_bounds__({threads}) " if threads is not None else ""
        return f"{self.kernel_prefix}{self.kernel_return_type} {bounds}{entry}({', '.join(decls)})"

    def kernel_prologue(self) -> None:
        if self.barrier_count:
            self.emit(f"tl_musa_barrier_record<{self.barrier_count}>();")
        super().kernel_prologue()

    def _reset(self) -> None:
        super()._reset()
        self.descriptors: list[dict] = []  # `lower_tme.TensorDescriptor` dicts, one parameter each
        self.barrier_count = 0  # the highest ASYNC barrier id the kernel initialises

    def _analyze(self, body) -> None:
        from .lower_tme import tensor_descriptors_of

        self.descriptors = tensor_descriptors_of(self.func)
        for i in range(len(self.descriptors)):
            self.names.reserve(DESCRIPTOR_PARAM.format(i))
        ids = [int(e.args[1].value) for e in iter_exprs(body)
               if isinstance(e, ir.Call) and getattr(e.op, "name", None) == "tirx.call_extern"
               and str(e.args[0].value) == "tl_musa_barrier_init" and isinstance(e.args[1], tirx.IntImm)]
        self.barrier_count = max(ids, default=0)
        self.dyn_shared_alignment = TME_SHARED_ALIGNMENT if self.descriptors else type(self).dyn_shared_alignment
        super()._analyze(body)

    def call_handlers(self) -> dict:
        handlers = dict(super().call_handlers())
        for name in ("tirx.call_extern", "tirx.call_pure_extern"):
            handlers[name] = self._call_extern_with_descriptors(handlers[name])
        return handlers

    def _call_extern_with_descriptors(self, base):
        """`base`, except that a TME load names its descriptor (a kernel parameter) by number."""
        def handler(e):
            name = str(e.args[0].value)
            if not name.startswith("tl_musa_tme_load_"):
                return base(e)
            index = int(e.args[1].value)
            if not 0 <= index < len(self.descriptors):
                raise CodegenError(f"{name} names tensor descriptor {index}, but the kernel has {len(self.descriptors)}")
            args = [f"&{DESCRIPTOR_PARAM.format(index)}", *(self.expr(a) for a in e.args[2:])]
            return f"{name}({', '.join(args)})", PREC_ATOM
        return handler

    # -- statements -----------------------------------------------------------------------

    def emit_assert(self, cond, message: str) -> None:
        # the core puts the user's file:line into the message; the kernel's name says which one
        self.emit(self.assert_format.format(cond=self.expr(cond), msg=c_string_literal(message),
                                            kernel=c_string_literal(self.entry)))

    def declare_buffer(self, info, stmt) -> None:
        """A `T.alloc_barrier` buffer holds no memory here: its barriers are ASYNC barrier ids
        (lower_barrier), and nothing reads the buffer after lowering."""
        if info.scope == SCOPE_BARRIER:
            return
        super().declare_buffer(info, stmt)

    # -- types ----------------------------------------------------------------------------

    def vector_type(self, base: str, lanes: int) -> str:
        """Clang vector types (`ext_vector_type`), declared in the file header. Storage-only
        and 8-bit types move as raw 32-bit words (`tl_bits32x<n>`): such vectors are only
        ever copied."""
        nbytes = self.dtype_bytes(base) * lanes
        if (base in self.storage_types or self.dtype_bytes(base) == 1) and nbytes % 4 == 0:
            name, element, count = f"tl_bits32x{nbytes // 4}", "unsigned int", nbytes // 4
        else:
            name, element, count = f"tl_{base}x{lanes}", self.type_name(base), lanes
        self.vector_typedefs[name] = f"typedef {element} {name} __attribute__((ext_vector_type({count})));"
        return name

    def buffer_ref(self, buffer, indices) -> str:
        """Also a vector of a multi-dimensional buffer: a unit-stride Ramp as the last index."""
        indices = list(indices)
        if len(indices) > 1 and isinstance(indices[-1], tirx.Ramp):
            ramp = indices[-1]
            base = self.flat_index(buffer, indices[:-1] + [ramp.base])
            return self.vector_ref(buffer, self.buffer_names[buffer], tirx.Ramp(base, ramp.stride, ramp.lanes))
        return super().buffer_ref(buffer, indices)

    # -- header ---------------------------------------------------------------------------

    def note_call(self, op_name: str, call) -> None:
        super().note_call(op_name, call)
        if op_name in ("tirx.call_extern", "tirx.call_pure_extern"):
            name = str(call.args[0].value)
            for prefix, (kind, capability, what) in NEEDS.items():
                if name.startswith(prefix) and self.target is not None and not self._declares(kind, capability):
                    raise CodegenError(f"{name} ({what}) needs the {capability!r} capability, which {self.target} "
                                       f"does not declare; it is mp_31's: compile for musa/mp_31, or leave the "
                                       f"call out")
            for prefix, header in HEADERS.items():
                if name.startswith(prefix):
                    self.headers_used.add(header)

    def _declares(self, kind: str, name: str) -> bool:
        caps = self.target.capabilities
        return {"matrix": caps.has_matrix, "copy": caps.has_copy_engine, "barrier": caps.has_barrier}[kind](name)

    def file_header(self) -> list[str]:
        head = super().file_header()
        at = head.index(self.preamble[0]) + 1
        for header in sorted(self.headers_used, reverse=True):
            head.insert(at, f'#include "{header}"')
        if self.vector_typedefs:
            head[-1:-1] = sorted(self.vector_typedefs.values())
        return head

    def render(self, module):
        self.vector_typedefs: dict = {}
        self.headers_used: set = set()
        source = super().render(module)
        if self.descriptors:
            names = {str(p.name): self.var_names[p] for p in self.func.params if p in self.var_names}
            descs = [{**d, "shape": [x if isinstance(x, int) else names[x] for x in d["shape"]]}
                     for d in self.descriptors]
            source.extra["tensor_descriptors"] = json.dumps(descs)
        return source
