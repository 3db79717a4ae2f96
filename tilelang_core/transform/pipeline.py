"""The core pass pipeline: a flat, named list of passes where backends insert their own.

A pass is a function `(func: PrimFunc, ctx: PassContext) -> PrimFunc`. Backends edit the
pipeline through the `tilelang_pipeline` hook with `insert_before/insert_after/replace`; the
core never branches on a target's name, only on its capabilities.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..plugin.target import Target

__all__ = ["PassContext", "Pipeline", "PipelineError", "default_pipeline", "POINTS", "PASS_OBSERVERS"]

# Callables `(name, before, after)` that see every pass of every pipeline run (the pass-diff hook
# of tilelang_core.utils.pass_diff_hook adds one); empty, a run costs nothing more.
PASS_OBSERVERS: list[Callable[[str, Any, Any], None]] = []

# Named points of the default pipeline, in order. Backends insert passes relative to them.
POINTS = (
    "inline_constants",  # scalars bound to constants (`rows, cols = s.shape` in a T.macro) inlined
    "legalize_negative_index",  # provably negative indices count from the end (A[-1] is the last)
    "widen_fragments",   # fragments indexed past their declared shape take the range used (TileLang)
    "expand_sparse_gemm",  # T.gemm_sp -> the dense A rebuilt from its values and metadata, then T.gemm
    "check",             # semantic checks with the user's source lines
    "verify_buffer_init",  # on-chip buffers read before anything writes them: a warning on stderr
    "guard_memory_access",  # global accesses that may leave their tensor: loads read 0, stores skipped
    "scope_thread_branches",  # tile ops under `if tx < C` run on that branch's threads (SIMT)
    "hoist_allocations",  # buffers allocated in loops move before the outermost loop
    "infer_layout",      # fragment and shared layouts (asks tilelang_infer_layout)
    "plan_pipeline",     # T.Pipelined: stages, or a plain loop where the target has no async copy
    "lower_tile_ops",    # tile ops -> loops (asks tilelang_lower_tile_op, else portable)
    "lower_thread_allreduce",  # T.tvm_thread_allreduce -> shuffles and shared memory (SIMT targets)
    "split_uniform_selects",  # a nest's affine if_then_else decided once where the whole tile agrees
    "partition_parallel",  # T.Parallel -> thread-partitioned or whole-tile loops
    "lower_threads",     # block-serial targets: explicit thread indices emulated or rejected
    "simplify_guards",   # bounds guards the loop, thread and block ranges prove true are dropped
    "vectorize",         # mark contiguous innermost loops
    "plan_storage",      # shared-memory budget against the capability table
    "insert_barriers",   # barriers between shared-memory writes and reads (SIMT targets)
    "finalize",          # symbolic dims become scalar params; launch metadata
)

PassFn = Callable[[Any, "PassContext"], Any]


class PipelineError(ValueError):
    """A pipeline edit that names no pass or point."""


@dataclass
class PassContext:
    """What passes share: the target, its capabilities, options, and facts found on the way."""

    target: Target
    options: Any = None
    hooks: Any = None
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def caps(self):
        return self.target.capabilities

    @property
    def block_serial(self) -> bool:
        return self.caps.execution_model == "block-serial"


class Pipeline:
    """An ordered list of (name, pass) with edit operations for backends."""

    def __init__(self, passes: list[tuple[str, PassFn]]) -> None:
        self.passes: list[tuple[str, PassFn]] = list(passes)

    def names(self) -> list[str]:
        return [n for n, _ in self.passes]

    def _index(self, name: str) -> int:
        for i, (n, _) in enumerate(self.passes):
            if n == name:
                return i
        raise PipelineError(f"no pass named {name!r}; passes are: {', '.join(self.names())}")

    def insert_before(self, point: str, name: str, fn: PassFn) -> None:
        self.passes.insert(self._index(point), (name, fn))

    def insert_after(self, point: str, name: str, fn: PassFn) -> None:
        self.passes.insert(self._index(point) + 1, (name, fn))

    def replace(self, name: str, fn: PassFn) -> None:
        self.passes[self._index(name)] = (name, fn)

    def remove(self, name: str) -> None:
        del self.passes[self._index(name)]

    def run(self, func, ctx: PassContext, dump: Callable[[str, Any], None] | None = None):
        for name, fn in self.passes:
            before, func = func, fn(func, ctx)
            for observe in PASS_OBSERVERS:
                observe(name, before, func)
            if dump is not None:
                dump(name, func)
        return func


def default_pipeline() -> Pipeline:
    """The core's passes at every named point, before any backend edits."""
    from . import (
        barriers,
        buffer_init,
        check,
        finalize,
        guards,
        hoist,
        inline_constants,
        layout_inference,
        lower_tile_ops,
        negative_index,
        parallel,
        pipeline_planning,
        safe_access,
        sparse_gemm,
        storage,
        thread_branches,
        thread_allreduce,
        threads,
        uniform_selects,
        vectorize,
        widen_fragments,
    )

    return Pipeline([
        ("inline_constants", inline_constants.inline_constants),
        ("legalize_negative_index", negative_index.legalize_negative_index),
        ("widen_fragments", widen_fragments.widen_overindexed_fragments),
        ("expand_sparse_gemm", sparse_gemm.expand_sparse_gemm),
        ("check", check.check),
        ("verify_buffer_init", buffer_init.verify_buffer_init),
        ("guard_memory_access", safe_access.guard_memory_access),
        ("scope_thread_branches", thread_branches.scope_thread_branches),
        ("hoist_allocations", hoist.hoist_allocations),
        ("infer_layout", layout_inference.infer_layout),
        ("plan_pipeline", pipeline_planning.plan_pipeline),
        ("lower_tile_ops", lower_tile_ops.lower_tile_ops),
        ("lower_thread_allreduce", thread_allreduce.lower_thread_allreduce),
        ("split_uniform_selects", uniform_selects.split_uniform_selects),
        ("partition_parallel", parallel.partition_parallel),
        ("lower_threads", threads.lower_threads),
        ("simplify_guards", guards.simplify_guards),
        ("vectorize", vectorize.vectorize),
        ("plan_storage", storage.plan_storage),
        ("insert_barriers", barriers.insert_barriers),
        ("finalize", finalize.finalize),
    ])
