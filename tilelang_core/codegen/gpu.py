"""The SIMT layer of the C-family printer, shared by GPU dialects that want it.

`GPUCodegen` is `CStyleCodegen` for targets whose blocks run many threads (the
"simt" execution model): a kernel binds block and thread indices, meets at a block barrier,
places "shared" buffers in the block's shared memory and is refused at codegen when it asks
for more threads per block than the target's capabilities allow (`max_threads_per_block`).

Its spellings are data, the ones CUDA, HIP and MUSA share (`__shared__`, `__syncthreads()`,
`blockIdx.x`, `atomicAdd`, `__restrict__`, `#pragma unroll`); they are exactly the defaults
`CStyleCodegen` had before it became neutral, so a dialect written against that base moves
here by changing its base class, with byte-identical output. The kernel qualifier and the
helpers' qualifier stay the base's (`kernel_prefix = ""`, `helper_qualifier = "static
inline"`): set them (`'extern "C" __global__ '`, `"static __device__ __forceinline__"`).
A dialect with other spellings sets the same attributes
(OpenCL: `get_group_id(0)`, `__local`, `barrier(CLK_LOCAL_MEM_FENCE)`). A dialect with another
launch model (a block as one thread of execution) subclasses `CStyleCodegen` instead.
"""
from __future__ import annotations

from tvm import ir, tirx

from .analysis import CodegenError, LaunchInfo, buffer_info, dtype_of
from .cstyle import CStyleCodegen

__all__ = ["GPUCodegen", "SIMT_INDEX_FORMATS", "SIMT_THREAD_INDEX"]

# launch tag -> the spelling of the C++ GPU dialects (CUDA, HIP, MUSA)
SIMT_THREAD_INDEX = {
    "blockIdx.x": "blockIdx.x", "blockIdx.y": "blockIdx.y", "blockIdx.z": "blockIdx.z",
    "threadIdx.x": "threadIdx.x", "threadIdx.y": "threadIdx.y", "threadIdx.z": "threadIdx.z",
}


# lane, warp and group queries of builtins.INTRINSIC_OPS over the block-linear thread index,
# in the spelling of the C++ GPU dialects (threadIdx / blockDim)
_LINEAR = "((int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)))"
SIMT_INDEX_FORMATS = {
    "tl.get_lane_idx": f"({_LINEAR} % ({{0}}))",
    "tl.get_warp_idx": f"({_LINEAR} / ({{0}}))",
    "tl.get_warp_idx_sync": f"({_LINEAR} / ({{0}}))",
    "tl.get_warp_group_idx": f"({_LINEAR} / (({{0}}) * ({{1}})))",
    "tl.shuffle_elect": f"(({{0}}) == 0 ? {_LINEAR} == 0 : {_LINEAR} % ({{0}}) == 0)",
}


class GPUCodegen(CStyleCodegen):
    """A SIMT dialect: thread indices, a block barrier, shared memory, launch limits.

    Attributes a GPU dialect usually sets: `kernel_prefix`, `helper_qualifier`, `thread_index`, `barrier`,
    `shared_qualifier`, `dyn_shared_decl`, `atomic_ops`, `shuffle_xor_format`, `preamble`.
    """

    restrict = "__restrict__"
    barrier = "__syncthreads();"
    thread_index = SIMT_THREAD_INDEX
    shared_qualifier = "__shared__ "
    dyn_shared_decl = "extern __shared__ __align__({align}) unsigned char {name}[];"
    unroll_pragma = "#pragma unroll"
    atomic_ops: dict = {"add": "atomicAdd({0}, {1})", "max": "atomicMax({0}, {1})",
                        "min": "atomicMin({0}, {1})"}
    reserved_names: tuple[str, ...] = ("blockIdx", "threadIdx", "blockDim", "gridDim", "printf",
                                       "min", "max", "assert")
    # a value converted to float before a storage-only type's `store` conversion
    float_cast_format = "(float)({0})"

    def visit_store(self, s) -> None:
        """A store to a storage-only dtype (one held in a wider type, `storage_types`: e.g.
        float16/bfloat16 kept as 16-bit words and computed in float) skips the trip through
        float where it changes nothing: a copy of an element of the same dtype moves its bits
        (`A[i] = B[j]`), and a value just cast to the stored dtype is rounded once (converted
        to float with `float_cast_format` when it is not one already, then the `store`
        conversion). Every other store is the base printer's."""
        dtype = buffer_info(s.buffer).dtype
        value = s.value
        if dtype in self.storage_types and not self.is_vector_intrinsic(value):
            if isinstance(value, ir.TensorLoad) and tirx.is_buffer_var(value.source) \
                    and buffer_info(value.source).dtype == dtype:
                return self.emit(f"{self.buffer_ref(s.buffer, s.indices)} = "
                                 f"{self.buffer_ref(value.source, value.indices)};")
            if isinstance(value, tirx.Cast) and dtype_of(value) == dtype:
                text = self.expr(value.value)
                if self.value_dtype(dtype_of(value.value)) != "float32":
                    text = self.float_cast_format.format(text)
                return self.emit(f"{self.buffer_ref(s.buffer, s.indices)} = {self.store_value(dtype, text)};")
        super().visit_store(s)

    @staticmethod
    def block_threads(launch: LaunchInfo) -> int | None:
        """Threads per block when every block extent is a constant, else None."""
        total = 1
        for extent in launch.block:
            if not isinstance(extent, int):
                return None
            total *= extent
        return total

    def check_launch(self, launch: LaunchInfo) -> None:
        """Refuse more threads per block than the target's `max_threads_per_block`."""
        limit = self.target.capabilities.max_threads_per_block if self.target is not None else 1024
        threads = self.block_threads(launch)
        if threads is not None and threads > limit:
            raise CodegenError(f"the kernel launches {threads} threads per block ({launch.block}); "
                               f"{self.target or self.language} allows {limit} (capability "
                               f"max_threads_per_block); pass fewer threads to T.Kernel")
