"""Names shared by the parser and the lowering passes: scopes, access masks, annotation keys.

This module imports nothing (not even TVM), so anything may read these names cheaply.
"""
from __future__ import annotations

__all__ = [
    "ACCESS_READ",
    "ACCESS_READ_WRITE",
    "ACCESS_WRITE",
    "ANN_NUM_STAGES",
    "ANN_PARALLEL_COALESCED_WIDTH",
    "ANN_PIPELINE_GROUP",
    "ANN_PIPELINE_ORDER",
    "ANN_PIPELINE_STAGE",
    "ANN_PIPELINE_SYNC",
    "ATTR_LAYOUT",
    "ATTR_SAFE_VALUE",
    "ATTR_L2_HIT_RATIO",
    "ATTR_FRAGMENT_REPLICATE",
    "ATTR_SYNC_PLACED",
    "ATTR_SYNC_RESUME",
    "ATTR_THREAD_GROUPS",
    "ATTR_THREAD_RANGE",
    "ATTR_USER_SYNC",
    "ATTR_KERNEL_HINTS",
    "ATTR_THREAD_EXTENT",
    "GEMM_POLICIES",
    "LAYOUT_SWIZZLED",
    "REDUCE_KINDS",
    "NAN_PROPAGATING_KINDS",
    "ATOMIC_KINDS",
    "SCOPE_BARRIER",
    "SCOPE_FRAGMENT",
    "SCOPE_GLOBAL",
    "SCOPE_LOCAL",
    "SCOPE_SHARED",
    "SCOPE_VAR",
    "SPARSE_GROUPS",
    "TILE_OP_NAMES",
]

# Storage scopes of buffers in the tile IR.
SCOPE_GLOBAL = "global"  # kernel parameters (T.Tensor / T.Buffer)
SCOPE_SHARED = "shared.dyn"  # T.alloc_shared
SCOPE_FRAGMENT = "local.fragment"  # T.alloc_fragment: a block-wide tile split across threads
SCOPE_LOCAL = "local"  # T.alloc_local: private to each thread
SCOPE_VAR = "local.var"  # T.alloc_var: one scalar per thread, shape (1,)
SCOPE_BARRIER = "shared.barrier"  # T.alloc_barrier: 64-bit barrier words in shared memory

# Access masks carried by every `tl.region` argument.
ACCESS_READ = 1
ACCESS_WRITE = 2
ACCESS_READ_WRITE = 3

# AttrStmt keys.
ATTR_THREAD_EXTENT = "thread_extent"  # T.Kernel: one launch_thread per block/thread dim
ATTR_LAYOUT = "tl.layout"  # T.annotate_layout: node = IndexMap | "swizzled", value = buffer
ATTR_L2_HIT_RATIO = "tl.l2_hit_ratio"  # T.annotate_l2_hit_ratio: node = FloatImm ratio, value = buffer
ATTR_SAFE_VALUE = "tl.safe_value"  # T.annotate_safe_value: node = the value (buffer's dtype), value = buffer
# a T.Fragment in T.annotate_layout: a tl.layout attr whose IndexMap takes (*index, rep) to
# (thread, slot), inside this attr: node = IntImm(replicate), value = buffer
ATTR_FRAGMENT_REPLICATE = "tl.fragment_replicate"
LAYOUT_SWIZZLED = "swizzled"  # the node of a tl.layout attr made by T.make_swizzled_layout
# Around lowered code that places its own barriers (e.g. a software pipeline over
# asynchronous copies): the core's barrier insertion adds none inside it.
ATTR_SYNC_PLACED = "tl.sync_placed"
# inside a sync-placed region: a part where the core places barriers again (e.g. the compute
# of a software-pipelined loop, which may exchange data through shared memory)
ATTR_SYNC_RESUME = "tl.sync_resume"
# T.ws(g, ...): the body runs on the threads of groups g .. g + n - 1 only (node = n, an int,
# value = IntImm(g)); a group is `thread_group_size` threads of the target (a capability).
# Tile ops and T.Parallel inside are partitioned over those threads, and barriers the core
# places inside are barriers of that range, never of the whole block.
ATTR_THREAD_GROUPS = "tl.thread_groups"
# A range of threads given in threads, not groups (node = IntImm(extent), value =
# IntImm(begin)): what `if T.get_thread_binding() < 32: ... else: ...` around tile ops becomes
# (transform/thread_branches.py). The passes treat it as they treat T.ws.
ATTR_THREAD_RANGE = "tl.thread_range"
# Around code whose shared-memory writes other threads see only through the user's own
# barriers (T.tma_copy, published by an mbarrier): the core adds no barrier for them.
ATTR_USER_SYNC = "tl.user_sync"
# Around the body of a kernel whose T.Kernel got keywords an installed backend offers
# (`tilelang_language_keywords`): value = StringImm of their JSON object. Only the backend that
# offers a keyword reads it (`tilelang_core.transform.kernel_hints`).
ATTR_KERNEL_HINTS = "tl.kernel_hints"

# For-loop annotation keys.
ANN_NUM_STAGES = "num_stages"  # T.Pipelined
ANN_PIPELINE_ORDER = "tl_pipeline_order"
ANN_PIPELINE_STAGE = "tl_pipeline_stage"
ANN_PIPELINE_SYNC = "tl_pipeline_sync"
ANN_PIPELINE_GROUP = "tl_pipeline_group"
ANN_PARALLEL_COALESCED_WIDTH = "coalesced_width"  # T.Parallel(..., coalesced_width=)

# Values of the StringImm / int arguments of tile ops.
GEMM_POLICIES = ("Square", "FullRow", "FullCol")  # index = the policy int of tl.gemm
REDUCE_KINDS = ("max", "min", "sum", "abssum", "absmax", "bitand", "bitor", "bitxor")
# `nan_propagate=True` on these kinds: the kind string tl.reduce carries instead (a NaN among
# the float operands makes the result NaN; the plain kinds return the non-NaN operand)
NAN_PROPAGATING_KINDS = {"max": "max_nan", "min": "min_nan", "absmax": "absmax_nan"}
ATOMIC_KINDS = ("add", "max", "min", "or")  # "or": tl.atomic_elem only
# T.gemm_sp's structured sparsity, per dtype of A: (values kept, group size) along K
# (TileLang's GROUP_CONFIG: 2:4, and 1:2 for 32-bit types)
SPARSE_GROUPS = {
    "float32": (1, 2),
    "float16": (2, 4),
    "bfloat16": (2, 4),
    "int8": (2, 4),
    "uint8": (2, 4),
    "float8_e4m3fn": (2, 4),
    "float8_e5m2": (2, 4),
}

# Every tile op, by its registered name. `tl.region` is an argument, not a statement.
TILE_OP_NAMES = (
    "tl.copy",
    "tl.transpose",
    "tl.fill",
    "tl.gemm",
    "tl.gemm_sp",
    "tl.reduce",
    "tl.cumsum",
    "tl.cummax",
    "tl.atomic",
    "tl.atomic_elem",
    "tl.use_swizzle",
    "tl.print",
    "tl.device_assert",
    "tl.reducer_info",
    "tl.finalize_reducer",
    "tl.init_barriers",
    "tl.barrier_wait",
    "tl.barrier_arrive",
    "tl.tma_copy",
)
