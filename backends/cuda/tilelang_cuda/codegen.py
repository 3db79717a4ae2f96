"""The CUDA dialect of the core's C-family printer: CUDA C++ for NVRTC and nvcc.

What the generated file looks like:

    #include "tl_cuda_common.h"          // + "tl_cuda_mma.h" when a `tl::` helper is called
    extern "C" __global__ void __launch_bounds__(128) main_kernel(const half_t* __restrict__ A, ...) {
      extern __shared__ __align__(128) unsigned char tl_dyn_smem[];
      int32_t bx = blockIdx.x;
      ...
    }

- Every `shared.dyn` buffer is a slice of one dynamic shared memory array; its size is
  `KernelSource.shared_memory` (the runtime opts in past 48 KB). `local` buffers and
  register fragments are per-thread arrays.
- float16 / bfloat16 / fp8 are stored as the header's `half_t` / `bfloat16_t` / `fp8_e4_t`
  and computed in float (a load converts, a store rounds to nearest even); a plain copy
  of such a value stays a 16/8-bit move.
- Math uses the precise functions (`expf`, `exp2f`, ...); with `fast_math` the intrinsics
  (`__expf`, `__logf`, ...), which is also what nvcc's --use_fast_math would pick.
- Texts of `T.import_source` come after the includes, before the kernel (the header
  defines `uint`, which TileLang's imported helpers use); `tl.dp4a` is the header's
  `tl_dp4a` (`__dp4a`).
- `T.alloc_barrier`'s buffers (scope "shared.barrier") are `__shared__` arrays of 64-bit
  mbarrier words; `tl.sync_group(id, count)`, the barrier of one `T.ws` range, is the
  named barrier `bar.sync id, count`.
- `tl.atomic_*` become the header's overloaded `tl_atomic_add/max/min`, `tl.printf` is
  `printf`, `tl.device_assert` is `tl_device_assert(cond, "file:line: msg", kernel)` (prints,
  then traps: the launch fails and the runtime reports it at the next synchronize).
- TVM's `ptx_legacy.mma` / `ptx_legacy.ldmatrix` (TileLang's `T.ptx_mma` / `T.ptx_ldmatrix`)
  are `tl_cuda_mma.h`'s mma.sync / ldmatrix helpers (`codegen_ptx`).
- Counted loops nested in fully unrolled ones get an explicit, bounded unroll factor
  (`UNROLL_BUDGET`), which keeps ptxas from spending minutes on one basic block.

Rendering needs TVM but no driver and no GPU.
"""
from __future__ import annotations

import json

from tvm import ir, tirx

from tilelang_core.codegen import CodegenError, GPUCodegen
from tilelang_core.codegen import buffer_info, dtype_of, iter_exprs
from tilelang_core.codegen import PREC_ATOM, c_string_literal
from tilelang_core.codegen import C_MATH_OPS, C_TYPES, PHILOX_FORMATS
from tilelang_core.ir import SCOPE_BARRIER
from tilelang_core.transform import kernel_hints

from .codegen_ptx import PTX_OPS, ptx_call_handlers
from .language_ptx import PTX_HELPER_PREFIXES

__all__ = ["CUDACodegen", "CUDA_TYPES", "CUDA_MATH_OPS", "CUDA_FAST_MATH_OPS"]

CUDA_TYPES = {
    **C_TYPES,
    "float16": "half_t",
    "bfloat16": "bfloat16_t",
    "float8_e4m3fn": "fp8_e4_t",
    "float8_e5m2": "fp8_e5_t",
}


def _through_float(load: str, store: str) -> dict:
    """A storage-only dtype: computed in float32; `round` is a store then a load."""
    return {"value": "float32", "load": load, "store": store, "round": load.format(store)}


# Low-precision dtypes are loaded into float and rounded to nearest even on the way back
# (cuda_fp16.h / cuda_bf16.h / cuda_fp8.h conversions).
CUDA_STORAGE_TYPES = {
    "float16": _through_float("__half2float({0})", "__float2half_rn({0})"),
    "bfloat16": _through_float("__bfloat162float({0})", "__float2bfloat16_rn({0})"),
    "float8_e4m3fn": _through_float("static_cast<float>({0})", "fp8_e4_t({0})"),
    "float8_e5m2": _through_float("static_cast<float>({0})", "fp8_e5_t({0})"),
}

_INT_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")

CUDA_MATH_OPS = {
    **C_MATH_OPS,
    "rsqrt": {"float32": "rsqrtf({0})", "float64": "rsqrt({0})"},
    "round": {"float32": "rintf({0})", "float64": "rint({0})"},
    "nearbyint": {"float32": "rintf({0})", "float64": "rint({0})"},
    "sigmoid": {"float32": "(1.0f / (1.0f + expf(-({0}))))", "float64": "(1.0 / (1.0 + exp(-({0}))))"},
    "popcount": {"int64": "__popcll({0})", "uint64": "__popcll({0})", "default": "__popc({0})"},
    "clz": {"int64": "__clzll({0})", "uint64": "__clzll({0})", "default": "__clz({0})"},
    # fmaxf/fminf for floats (what TileLang prints); for integers the header's templates with
    # the type spelled out, since CUDA's min/max overloads are ambiguous between int64_t
    # (`long` under nvcc) and a `long long` literal
    **{kind: {"float32": f"f{kind}f({{0}}, {{1}})", "float64": f"f{kind}({{0}}, {{1}})",
              **{dtype: f"tl::{kind}<{C_TYPES[dtype]}>({{0}}, {{1}})" for dtype in _INT_DTYPES}}
       for kind in ("min", "max")},
}

# The hardware approximations (SFU), used only when the user asks for fast math.
CUDA_FAST_MATH_OPS = {
    **CUDA_MATH_OPS,
    "exp": {**CUDA_MATH_OPS["exp"], "float32": "__expf({0})"},
    "exp10": {**CUDA_MATH_OPS["exp10"], "float32": "__exp10f({0})"},
    "log": {**CUDA_MATH_OPS["log"], "float32": "__logf({0})"},
    "log2": {**CUDA_MATH_OPS["log2"], "float32": "__log2f({0})"},
    "log10": {**CUDA_MATH_OPS["log10"], "float32": "__log10f({0})"},
    "sin": {**CUDA_MATH_OPS["sin"], "float32": "__sinf({0})"},
    "cos": {**CUDA_MATH_OPS["cos"], "float32": "__cosf({0})"},
    "tan": {**CUDA_MATH_OPS["tan"], "float32": "__tanf({0})"},
    "pow": {**CUDA_MATH_OPS["pow"], "float32": "__powf({0}, {1})"},
    "sigmoid": {**CUDA_MATH_OPS["sigmoid"], "float32": "(1.0f / (1.0f + __expf(-({0}))))"},
}

# Extern calls into the `tl::` namespace are helpers of tl_cuda_mma.h (mma.sync, ldmatrix,
# cp.async, ...): tl_cuda_common.h's own helpers are printed by this dialect, never called
# through call_extern.
MMA_HEADER_PREFIXES = ("tl::",)
# ... and those of tl_cuda_wgmma.h (sm_90a warpgroup MMA, descriptors, proxy fences).
WGMMA_HEADER_PREFIXES = ("tl::wgmma", "tl::fence_proxy_async")
# ... and those of tl_cuda_tma.h (sm_90 bulk tensor copies and their mbarrier accounting).
TMA_HEADER_PREFIXES = ("tl::tma_", "tl::mbarrier_expect_tx", "tl::setmaxnreg", "tl::warp_index")
# Calls whose first argument is the number of a tensor map parameter (`lower_tma`).
TENSOR_MAP_CALLS = ("tl::tma_load", "tl::tma_store", "tl::tma_prefetch_map")
TENSOR_MAP_PARAM = "tl_tensor_map_{}"
WGMMA_SHARED_ALIGNMENT = 1024


def _calls_extern(func, name: str) -> bool:
    from tvm import ir
    from tilelang_core.transform import walk

    found = []
    walk(func.body, lambda c: found.append(c) if getattr(c.op, "name", None) == "tirx.call_extern"
         and str(c.args[0].value) == name else None, (ir.Call,))
    return bool(found)

# How many copies of a loop body nested unrolling may make (see `CUDACodegen.loop_pragmas`).
UNROLL_BUDGET = 512

_ATOMIC_DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "uint32", "int64")


def _atomic_ops() -> dict:
    ops = {}
    for kind in ("add", "max", "min"):
        for dtype in _ATOMIC_DTYPES:
            store = CUDA_STORAGE_TYPES.get(dtype, {}).get("store", "{0}")
            ops[(kind, dtype)] = f"tl_atomic_{kind}({{0}}, {store.format('{1}')})"
    return ops


def _intrinsic_formats() -> dict:
    """`builtins.INTRINSIC_OPS` in CUDA C++ (CUDA Programming Guide, "Warp Shuffle Functions",
    "Warp Vote Functions", "Intrinsic Functions"; helpers of tl_cuda_threads.h)."""
    formats = {
        "tl.shfl_sync": "__shfl_sync({0}, {1}, {2}, {3})",
        "tl.shfl_up_sync": "__shfl_up_sync({0}, {1}, {2}, {3})",
        "tl.shfl_down_sync": "__shfl_down_sync({0}, {1}, {2}, {3})",
        "tl.shfl_xor_sync": "__shfl_xor_sync({0}, {1}, {2}, {3})",
        "tl.any_sync": "__any_sync({0}, {1})",
        "tl.all_sync": "__all_sync({0}, {1})",
        "tl.ballot_sync": "((uint64_t)__ballot_sync({0}, {1}))",
        "tl.ballot": "((uint64_t)__ballot_sync(0xffffffffu, {0}))",
        "tl.activemask": "((uint64_t)__activemask())",
        "tl.match_any_sync": "__match_any_sync({0}, {1})",
        "tl.match_all_sync": "tl_match_all_sync({0}, {1})",
        "tl.sync_warp": "__syncwarp({0})",
        "tl.syncthreads_count": "__syncthreads_count({0})",
        "tl.syncthreads_and": "__syncthreads_and({0})",
        "tl.syncthreads_or": "__syncthreads_or({0})",
        "tl.sync_grid": "tl_sync_grid()",
        "tl.named_barrier_arrive": "tl_named_barrier_arrive({0}, {1})",
        "tl.get_lane_idx": "tl_get_lane_idx({0})",
        "tl.get_warp_idx": "tl_get_warp_idx({0})",
        "tl.get_warp_idx_sync": "tl_get_warp_idx_sync({0})",
        "tl.get_warp_group_idx": "tl_get_warp_group_idx({0}, {1})",
        "tl.shuffle_elect": "tl_shuffle_elect({0})",
        "tl.ieee_frsqrt": "tl_ieee_rsqrt({0})",
        "tl.fast_rcp": "tl_fast_rcp({0})",
        **{f"tl.warp_reduce_{kind}": f"tl_warp_reduce_{kind}({{0}})" for kind in ("sum", "max", "min", "bitand", "bitor")},
        **PHILOX_FORMATS,
    }
    for op in ("add2", "sub2", "mul2", "max2", "min2", "abs2", "fma2"):
        arity = {"abs2": 1, "fma2": 3}.get(op, 2)
        # tl_cuda_threads.h: the raw words read as the native vector type, the result back as a word
        for dtype, native in (("float16x2", "__half2"), ("bfloat16x2", "__nv_bfloat162"), ("float32x2", "float2")):
            args = ", ".join(f"tl_as<{native}>({{{i}}})" for i in range(arity))
            formats[(f"tl.{op}", dtype)] = f"tl_word(tl::{op}({args}))"
    # tl_cuda_threads.h's overloads pick CUDA's float (`__fadd_rn`) or double (`__dadd_rn`) form
    for mode in ("rn", "rz", "ru", "rd"):
        formats[("tl.ieee_add", mode)] = f"tl_ieee_add_{mode}({{0}}, {{1}})"
        formats[("tl.ieee_sub", mode)] = f"tl_ieee_sub_{mode}({{0}}, {{1}})"
        formats[("tl.ieee_mul", mode)] = f"tl_ieee_mul_{mode}({{0}}, {{1}})"
        formats[("tl.ieee_fdiv", mode)] = f"tl_ieee_div_{mode}({{0}}, {{1}})"
        formats[("tl.ieee_fmaf", mode)] = f"tl_ieee_fma_{mode}({{0}}, {{1}}, {{2}})"
        formats[("tl.ieee_frcp", mode)] = f"tl_ieee_rcp_{mode}({{0}})"
        formats[("tl.ieee_fsqrt", mode)] = f"tl_ieee_sqrt_{mode}({{0}})"
    return formats


def _external_source(func) -> dict | None:
    """The {"source", "entry"} of T.CUDASourceCodeKernel in `func`, if it has one."""
    import json

    from tilelang_core.transform import walk

    found = []
    walk(func.body, lambda a: found.append(a) if a.attr_key == "tl.cuda_source" else None, (tirx.AttrStmt,))
    return json.loads(str(found[0].value.value)) if found else None


class CUDACodegen(GPUCodegen):
    """CUDA C++ for sm_80 and newer; see the module docstring for the shape of the output."""

    language = "cuda"
    kernel_prefix = 'extern "C" __global__ '
    restrict = "__restrict__"
    preamble = ('#include "tl_cuda_common.h"',)
    helper_qualifier = "static __device__ __forceinline__"
    barrier = "__syncthreads();"
    shared_qualifier = "__shared__ "
    dyn_shared_name = "tl_dyn_smem"
    dyn_shared_decl = "extern __shared__ __align__({align}) unsigned char {name}[];"
    dyn_shared_alignment = 128
    unroll_pragma = "#pragma unroll"
    type_map = CUDA_TYPES
    storage_types = CUDA_STORAGE_TYPES
    math_ops = CUDA_MATH_OPS
    fast_math_ops = CUDA_FAST_MATH_OPS
    # bit patterns: NVRTC has no <math.h> macros and CUDART_INF_F needs math_constants.h
    inf_literal = "__int_as_float(0x7f800000)"
    nan_literal = "__int_as_float(0x7fffffff)"
    atomic_ops = _atomic_ops()
    printf_name = "printf"
    reinterpret_format = "__builtin_bit_cast({2}, {0})"
    shuffle_xor_format = "__shfl_xor_sync(0xffffffffu, {0}, {1})"
    intrinsic_formats = _intrinsic_formats()
    dp4a_format = "tl_dp4a({0}, {1}, {2})"  # tl_cuda_common.h: __dp4a
    addressed_local_format = "__align__(16) "
    reserved_names = GPUCodegen.reserved_names + (
        "blockDim", "gridDim", "warpSize", "tl", "half", "half_t", "bfloat16_t", "half2_t",
        "bfloat162_t", "fp8_e4_t", "fp8_e5_t", "dim3", "uint", "memcpy", "__syncthreads")
    calling_convention = ('extern "C" __global__ void entry(buffer pointers..., scalars...) in '
                          'parameter order; dynamic shared memory of KernelSource.shared_memory bytes')

    def __init__(self, target=None, options=None) -> None:
        super().__init__(target, options)
        if options is not None and getattr(options, "fast_math", False):
            self.math_ops = self.fast_math_ops

    # -- launch ---------------------------------------------------------------------------

    def launch_bounds(self, launch) -> str:
        """Nothing before the signature: the bounds go inside it (see `kernel_signature`)."""
        return ""

    def kernel_signature(self, entry: str, params: list[tuple]) -> str:
        # `extern "C" __global__ void __launch_bounds__(n) f(...)`: after the return type, the
        # one place both nvcc and NVRTC accept it with C linkage
        decls = [self.param_decl(kind, var) for kind, var in params]
        # TMA descriptors follow every other parameter, by value in the parameter space
        decls += [f"const __grid_constant__ tl::tensor_map {TENSOR_MAP_PARAM.format(i)}"
                  for i in range(len(self.tensor_maps))]
        bounds = self.thread_bounds(self.launch)
        if bounds and self._moves_registers:  # setmaxnreg needs a register cap at entry: one block per SM
            bounds = bounds.replace(") ", ", 1) ")
        elif bounds and self._min_blocks:  # T.Kernel(..., min_blocks_per_sm=n)
            bounds = bounds.replace(") ", f", {self._min_blocks}) ")
        return f"{self.kernel_prefix}{self.kernel_return_type} {self.cluster_dims()}{bounds}{entry}({', '.join(decls)})"

    def cluster_dims(self) -> str:
        """`__cluster_dims__(x, y, z) ` for `T.ClusterKernel` (T.Kernel(cluster_dims=)), checked
        against the target's "cluster" feature and the grid; "" without clusters."""
        dims = kernel_hints(self.func).get("cluster_dims") if self.func is not None else None
        if not dims:
            return ""
        if self.target is not None and "cluster" not in self.target.capabilities.features:
            raise CodegenError(f"the kernel launches thread-block clusters {tuple(dims)} (T.ClusterKernel), which "
                               f"{self.target} lacks (capability feature 'cluster', sm_90); use T.Kernel")
        for axis, (extent, size) in enumerate(zip(self.launch.grid, dims)):
            if isinstance(extent, int) and extent % size:
                raise CodegenError(f"grid extent {extent} along {'xyz'[axis]} is not a multiple of the cluster's "
                                   f"{size} (T.ClusterKernel cluster_dims={tuple(dims)})")
        return f"__cluster_dims__({dims[0]}, {dims[1]}, {dims[2]}) "

    def render(self, module):
        source = super().render(module)
        external = _external_source(self.func)
        if external is not None:  # T.CUDASourceCodeKernel: the user's entry in place of ours
            import dataclasses

            tensors = [i for i, p in enumerate(self.func.params) if tirx.is_buffer_var(p)]
            extra = {**source.extra, "written_params": ",".join(str(i) for i in tensors)}
            return dataclasses.replace(source, source=external["source"], entry=external["entry"], line_map={},
                                       extra=extra)
        if self.tensor_maps:
            names = {str(p.name): self.var_names[p] for p in self.func.params if p in self.var_names}
            maps = [{**m, "shape": [d if isinstance(d, int) else names[d] for d in m["shape"]]}
                    for m in self.tensor_maps]
            source.extra["tensor_maps"] = json.dumps(maps)
        window = self._l2_access_policy()
        if window is not None:
            source.extra["l2_access_policy"] = json.dumps(window)
        return source

    def _l2_access_policy(self) -> dict | None:
        """The `T.annotate_l2_hit_ratio` of the kernel as {"param", "hit_ratio"} for the
        runtime's access policy window (one address range per launch), or None."""
        from tilelang_core.ir import ATTR_L2_HIT_RATIO
        from tilelang_core.transform import walk

        found: dict = {}

        def visit(attr):
            if attr.attr_key == ATTR_L2_HIT_RATIO:
                found[attr.value.__chandle__()] = (attr.value, float(attr.node.value))

        walk(self.func.body, visit, (tirx.AttrStmt,))
        if not found:
            return None
        if len(found) > 1:
            names = ", ".join(sorted(str(b.name) for b, _ in found.values()))
            raise CodegenError(f"T.annotate_l2_hit_ratio names {names}; CUDA keeps one address range per launch "
                               f"in L2 (the stream's access policy window): annotate one tensor")
        (buffer, ratio), = found.values()
        params = [i for i, p in enumerate(self.func.params) if p.same_as(buffer)]
        if not params:
            raise CodegenError(f"T.annotate_l2_hit_ratio: {buffer.name} is not a tensor parameter of the kernel")
        return {"param": params[0], "hit_ratio": ratio}

    def check_launch(self, launch) -> None:
        limit = self.target.capabilities.max_threads_per_block if self.target is not None else 1024
        threads = 1
        for extent in launch.block:
            threads = threads * extent if isinstance(extent, int) and isinstance(threads, int) else None
        if threads is not None and threads > limit:
            raise CodegenError(f"the kernel asks for {threads} threads per block ({launch.block}) but "
                               f"{self.target or 'CUDA'} allows {limit}; pass fewer threads to T.Kernel")
        for tag, limit in (("blockIdx.y", 65535), ("blockIdx.z", 65535)):
            extent = launch.extents.get(tag)
            if isinstance(extent, tirx.IntImm) and extent.value > limit:
                raise CodegenError(f"grid dimension {tag} is {extent.value}, past CUDA's limit of "
                                   f"{limit}; put the largest grid dimension first in T.Kernel")

    @staticmethod
    def thread_bounds(launch) -> str:
        """`__launch_bounds__(threads) ` when the block size is a constant, else nothing."""
        threads = 1
        for extent in launch.block:
            if not isinstance(extent, int):
                return ""
            threads *= extent
        return f"__launch_bounds__({threads}) "

    def visit_thread_extent(self, s) -> None:
        var = s.node.var
        if var not in self.var_names and var.__chandle__() not in self._used_vars:
            # named but not declared: an unused `int bx = blockIdx.x;` only draws warnings
            self.var_names[var] = self.names.get(var)
            return self.visit(s.body)
        super().visit_thread_extent(s)

    # -- header ---------------------------------------------------------------------------

    def note_call(self, op_name: str, call) -> None:
        super().note_call(op_name, call)
        if op_name in ("tirx.call_extern", "tirx.call_pure_extern"):
            if str(call.args[0].value).startswith(MMA_HEADER_PREFIXES):
                self.used_helpers.add("mma")
            if str(call.args[0].value).startswith(WGMMA_HEADER_PREFIXES):
                self.used_helpers.add("wgmma")
            if str(call.args[0].value).startswith(TMA_HEADER_PREFIXES):
                self.used_helpers.add("tma")
            if str(call.args[0].value).startswith(PTX_HELPER_PREFIXES):
                self.used_helpers.add("threads")
        elif op_name in PTX_OPS:  # TVM's PTX builtins print as tl_cuda_mma.h helpers
            self.used_helpers.add("mma")

    def file_header(self) -> list[str]:
        head = super().file_header()
        if "mma" in self.used_helpers:
            head.insert(head.index(self.preamble[0]) + 1, '#include "tl_cuda_mma.h"')
        if "wgmma" in self.used_helpers:
            head.insert(head.index(self.preamble[0]) + 1, '#include "tl_cuda_wgmma.h"')
        if "tma" in self.used_helpers:
            head.insert(head.index(self.preamble[0]) + 1, '#include "tl_cuda_tma.h"')
        if self.used_intrinsics or "threads" in self.used_helpers:
            at = head.index(self.preamble[0]) + 1
            head.insert(at, '#include "tl_cuda_threads.h"')
            if "tl.sync_grid" in self.used_intrinsics:
                head.insert(at, "#define TL_GRID_SYNC 1")
        return head

    def plan_allocations(self, allocs: list) -> None:
        # a wgmma descriptor's swizzle is taken from the absolute shared address: tiles it
        # reads start on a 1024-byte boundary (one 128-byte swizzle pattern, 8 rows)
        wgmma = _calls_extern(self.func, "tl::wgmma_desc")
        self.dyn_shared_alignment = WGMMA_SHARED_ALIGNMENT if wgmma else type(self).dyn_shared_alignment
        super().plan_allocations(allocs)
        limit = self.target.capabilities.shared_memory_optin if self.target is not None else None
        infos = [buffer_info(a.buffer) for a in allocs]
        static = sum((info.const_size() or 0) * self.dtype_bytes(info.dtype)
                     for info in infos if info.scope in ("shared", SCOPE_BARRIER))
        if limit is not None and self.dyn_shared_bytes + static > limit:
            raise CodegenError(
                f"the kernel needs {self.dyn_shared_bytes} bytes of dynamic shared memory after aligning its "
                f"tiles for the tensor cores (and {static} bytes of static shared memory: barriers) but "
                f"{self.target} allows {limit} per block (capability shared_memory_optin); use smaller tiles "
                f"or fewer stages")

    def shared_alignment(self, nbytes: int) -> int:
        # a swizzled tile repeats its pattern every 256, 512 or 1024 bytes (32/64/128-byte
        # swizzle) and its size is a multiple of that pattern: a buffer gets the largest power
        # of two dividing its size, up to the kernel's alignment, so small buffers (row
        # statistics) do not each round the packed array up to the next 1024 bytes
        base = type(self).dyn_shared_alignment
        if self.dyn_shared_alignment <= base:
            return self.dyn_shared_alignment
        return max(base, min(self.dyn_shared_alignment, nbytes & -nbytes))

    # -- loops ----------------------------------------------------------------------------

    def _reset(self) -> None:
        super()._reset()
        self._unrolled: list[int] = []  # constant trip counts of the enclosing unrolled loops
        self._used_vars: set[int] = set()
        self.tensor_maps: list[dict] = []  # `lower_tma.TensorMap` dicts, one parameter each
        self._moves_registers = False  # the kernel calls setmaxnreg
        self._min_blocks = None  # T.Kernel(..., min_blocks_per_sm=n)

    def _analyze(self, body) -> None:
        super()._analyze(body)
        from .lower_tma import tensor_maps_of

        self.tensor_maps = tensor_maps_of(self.func)
        self._min_blocks = kernel_hints(self.func).get("min_blocks_per_sm") if self.func is not None else None
        if self._min_blocks is None and self.func is not None and self.func.attrs is not None \
                and self.func.attrs.get("tl.min_blocks_per_sm") is not None:  # T.annotate_min_blocks_per_sm
            self._min_blocks = int(self.func.attrs["tl.min_blocks_per_sm"])
        from tilelang_core.transform import walk

        required = []  # T.wgmma_gemm's markers (tilelang_cuda.language.ATTR_REQUIRE_WGMMA)
        walk(body, lambda a: required.append(a) if a.attr_key == "tl.require_wgmma" else None, (tirx.AttrStmt,))
        uses_wgmma = any(isinstance(e, ir.Call) and getattr(e.op, "name", None) == "tirx.call_extern"
                         and str(e.args[0].value).startswith("tl::wgmma_m") for e in iter_exprs(body))
        if required and not uses_wgmma:
            raise CodegenError(f"the kernel calls T.wgmma_gemm, but its GEMM did not lower to wgmma on {self.target} "
                               f"(a target without wgmma, or operands wgmma does not take: see kernel.explain()); "
                               f"use T.gemm to allow mma.sync")
        self._moves_registers = any(
            isinstance(e, ir.Call) and getattr(e.op, "name", None) == "tirx.call_extern"
            and str(e.args[0].value).startswith("tl::setmaxnreg") for e in iter_exprs(body))
        for i in range(len(self.tensor_maps)):
            self.names.reserve(TENSOR_MAP_PARAM.format(i))
        self._used_vars = {e.__chandle__() for e in iter_exprs(body) if isinstance(e, ir.Var)}

    def loop_pragmas(self, s) -> list[str]:
        pragmas = super().loop_pragmas(s)
        if pragmas or not self._unrolled or not isinstance(s.extent, tirx.IntImm):
            return pragmas
        # A counted loop inside fully unrolled ones (the k loop of the portable GEMM inside
        # the per-thread slot loop): NVVM unrolls it first, then the outer pragma copies the
        # result, and ptxas spends minutes on one huge block (128 slots x 32 k: 105 s).
        # Cap the product of the unroll factors instead.
        copies = 1
        for n in self._unrolled:
            copies *= n
        return [f"#pragma unroll {max(1, min(int(s.extent.value), UNROLL_BUDGET // copies))}"]

    def enter_loop(self, s) -> None:
        if int(s.kind) == int(tirx.ForKind.UNROLLED):
            self._unrolled.append(int(s.extent.value) if isinstance(s.extent, tirx.IntImm) else 8)

    def exit_loop(self, s) -> None:
        if int(s.kind) == int(tirx.ForKind.UNROLLED):
            self._unrolled.pop()

    # -- statements -----------------------------------------------------------------------

    def vector_type(self, base: str, lanes: int) -> str:
        """A vector of 4, 8 or 16 bytes moves as raw words (`unsigned int`, `uint2`, `uint4`):
        vectors are only ever copied (a Ramp load stored at a Ramp), and a word vector is what
        the 16-byte `ld.global.v4` / `st.global.v4` take. The address must be aligned to the
        vector's size; the kernel that writes the Ramp guarantees it."""
        nbytes = self.dtype_bytes(base) * lanes
        words = {4: "unsigned int", 8: "uint2", 16: "uint4"}
        if nbytes not in words:
            raise CodegenError(f"vector dtype {base}x{lanes} ({nbytes} bytes) is not supported by the cuda "
                               f"dialect: vectors of 4, 8 or 16 bytes are")
        return words[nbytes]

    def visit_store(self, s) -> None:
        dtype = buffer_info(s.buffer).dtype
        value = s.value
        if isinstance(value, ir.TensorLoad) and tirx.is_buffer_var(value.source) and s.indices \
                and isinstance(s.indices[-1], tirx.Ramp) and buffer_info(value.source).dtype == dtype:
            # a vector copy moves bits, whatever the element type computes in
            return self.emit(f"{self.buffer_ref(s.buffer, s.indices)} = "
                             f"{self.buffer_ref(value.source, value.indices)};")
        raw = self.storage_value(s.value, dtype) if dtype in self.storage_types else None
        if raw is None:
            return super().visit_store(s)
        self.emit(f"{self.buffer_ref(s.buffer, s.indices)} = {raw};")

    def storage_value(self, e, dtype: str) -> str | None:
        """`e`, of the storage-only `dtype`, as a value of its storage type without a trip
        through float (a copy of half_t stays a 16-bit move); None where `e` computes."""
        if dtype_of(e) != dtype:
            return None
        if isinstance(e, ir.TensorLoad):
            return self.buffer_ref(e.source, e.indices) if buffer_info(e.source).dtype == dtype else None
        if isinstance(e, tirx.Cast):
            if dtype_of(e.value) == dtype:
                return self.storage_value(e.value, dtype)
            if self.value_dtype(dtype_of(e.value)) == self.value_dtype(dtype):
                return self.store_value(dtype, self.expr(e.value))  # one rounding, not two
            return None
        if isinstance(e, tirx.FloatImm):
            return self.store_value(dtype, self.expr(e))
        branches = None
        if isinstance(e, tirx.Select):
            branches = (e.condition, e.true_value, e.false_value)
        elif isinstance(e, ir.Call) and isinstance(e.op, ir.Op) and str(e.op.name) in ("tirx.if_then_else", "prim.if_then_else"):
            branches = tuple(e.args)
        if branches is None:
            return None
        cond, a, b = branches
        a_text, b_text = self.storage_value(a, dtype), self.storage_value(b, dtype)
        if a_text is None or b_text is None:
            return None
        return f"({self.expr(cond)}) ? {a_text} : {b_text}"

    # -- expressions ----------------------------------------------------------------------

    # TVM's warp shuffles (TileLang's `T.tvm_warp_shuffle[_up|_down](mask, value, lane or
    # delta, width, warp_size)`), spelled as TVM's CUDA codegen spells them; warp_size is
    # the target's and is not passed on
    WARP_SHUFFLES = {
        "tirx.tvm_warp_shuffle": "__shfl_sync",
        "tirx.tvm_warp_shuffle_up": "__shfl_up_sync",
        "tirx.tvm_warp_shuffle_down": "__shfl_down_sync",
    }

    def call_handlers(self) -> dict:
        handlers = dict(super().call_handlers())
        handlers["tl.sync_group"] = self._sync_group
        for name in ("tirx.call_extern", "tirx.call_pure_extern"):
            handlers[name] = self._call_extern_with_maps(handlers[name])
        handlers.update(ptx_call_handlers(self))
        for op_name, function in self.WARP_SHUFFLES.items():
            handlers[op_name] = lambda e, function=function: self._warp_shuffle(function, e)
        return handlers

    def _call_extern_with_maps(self, base):
        """`base`, except that the calls of `TENSOR_MAP_CALLS` name their tensor map (a
        parameter of the kernel) by its number."""
        def handler(e) -> tuple[str, int]:
            name = str(e.args[0].value)
            if name not in TENSOR_MAP_CALLS:
                return base(e)
            index = int(e.args[1].value)
            if not 0 <= index < len(self.tensor_maps):
                raise CodegenError(f"{name} names tensor map {index}, but the kernel has {len(self.tensor_maps)}")
            args = [f"&{TENSOR_MAP_PARAM.format(index)}", *(self.expr(a) for a in e.args[2:])]
            return f"{name}({', '.join(args)})", PREC_ATOM
        return handler

    def _sync_group(self, e) -> tuple[str, int]:
        barrier_id, count = (int(a.value) for a in e.args)
        # 16 named barriers per block, 0 is __syncthreads'; the count is in whole warps
        if not 1 <= barrier_id <= 15:
            raise CodegenError(f"the kernel needs named barrier {barrier_id} for its T.ws ranges, but CUDA has "
                               f"ids 1..15 besides __syncthreads; use fewer distinct T.ws ranges")
        if count % 32:
            raise CodegenError(f"bar.sync over {count} threads: CUDA counts whole warps (a multiple of 32)")
        return f'asm volatile("bar.sync {barrier_id}, {count};" ::: "memory")', PREC_ATOM

    def declare_buffer(self, info, stmt) -> None:
        if info.scope == SCOPE_BARRIER:
            name = self.bound_name(self.buffer_names, stmt.buffer)
            self.emit(f"__shared__ __align__(8) {self.type_name(info.dtype)} {name}[{info.const_size()}];")
            return
        super().declare_buffer(info, stmt)

    def _warp_shuffle(self, function: str, e) -> tuple[str, int]:
        mask, value, lane, width = e.args[:4]
        mask_text = (f"{int(mask.value) & 0xFFFFFFFF:#x}u" if isinstance(mask, tirx.IntImm)
                     else f"(unsigned)({self.expr(mask)})")
        return f"{function}({mask_text}, {self.expr(value)}, {self.expr(lane)}, {self.expr(width)})", PREC_ATOM

    def emit_assert(self, cond, message: str) -> None:
        # the core puts the user's file:line into the message; the kernel's name says which one
        self.emit(f"tl_device_assert({self.expr(cond)}, {c_string_literal(message)}, "
                  f"{c_string_literal(self.entry)});")
