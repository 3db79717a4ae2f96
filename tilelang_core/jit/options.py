"""Compile options: frozen, hashable, strict (an unknown key is an error listing the valid ones).

`pass_configs` take TileLang's keys (`PassConfigKey`). The keys that change what we generate map
to `CompileOptions` fields; TileLang's other keys (tuning knobs of passes we do not have, IR
dumps) are accepted and recorded in `CompileOptions.ignored`, which `compile(verbose=True)`
prints; they do not change the binary or the cache key. Any other key is an error.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["CompileOptions", "PassConfigKey", "OptionsError"]


class OptionsError(ValueError):
    """An unknown or ill-typed compile option."""


# TileLang's pass-config keys (attribute name -> key), as its `tilelang.PassConfigKey` names them.
_TILELANG_KEYS = {
    "TL_SIMPLIFY": "tl.Simplify",
    "TL_SIMPLIFY_TRANSITIVELY_PROVE_INEQUALITIES": "transitively_prove_inequalities",
    "TL_SIMPLIFY_CONVERT_BOOLEAN_TO_AND_OF_ORS": "convert_boolean_to_and_of_ors",
    "TL_SIMPLIFY_APPLY_CONSTRAINTS_TO_BOOLEAN_BRANCHES": "apply_constraints_to_boolean_branches",
    "TL_SIMPLIFY_PROPAGATE_KNOWNS_TO_PROVE_CONDITIONAL": "propagate_knowns_to_prove_conditional",
    "TL_SIMPLIFY_PROPAGATE_KNOWNS_TO_SIMPLIFY_EXPRESSIONS": "propagate_knowns_to_simplify_expressions",
    "TL_SIMPLIFY_ENABLE_LET_INLINE": "enable_simplify_let_inline",
    "TL_DISABLE_BUFFER_INIT_CHECK": "tl.disable_buffer_init_check",
    "TL_DISABLE_DATA_RACE_CHECK": "tl.disable_data_race_check",
    "TL_DISABLE_PRELOWER_SEMANTIC_CHECK": "tl.disable_prelower_semantic_check",
    "TL_DISABLE_WARP_SPECIALIZED": "tl.disable_warp_specialized",
    "TL_ENABLE_FAST_MATH": "tl.enable_fast_math",
    "TL_PTXAS_REGISTER_USAGE_LEVEL": "tl.ptxas_register_usage_level",
    "TL_DEVICE_COMPILE_FLAGS": "tl.device_compile_flags",
    "TL_EMIT_LINE_DIRECTIVES": "tl.emit_line_directives",
    "TL_CONFIG_INDEX_BITWIDTH": "tl.config_index_bitwidth",
    "TL_ENABLE_REDUCER_PLAN_VERBOSE": "tl.enable_reducer_plan_verbose",
    "TL_LAYOUT_COST_MODEL": "tl.layout_cost_model",
    "TL_REDUCER_FORCE_BASELINE": "tl.reducer_force_baseline",
    "TL_DISABLE_TMA_LOWER": "tl.disable_tma_lower",
    "TL_DISABLE_SAFE_MEMORY_ACCESS": "tl.disable_safe_memory_legalize",
    "TL_DISABLE_VECTORIZE_256": "tl.disable_vectorize_256",
    "TL_ENABLE_ASYNC_COPY": "tl.enable_async_copy",
    "TL_ENABLE_LOWER_LDGSTG": "tl.enable_lower_ldgstg",
    "TL_ENABLE_LOWER_LDGSTG_PREDICATED": "tl.enable_lower_ldgstg_predicated",
    "TL_ENABLE_VECTORIZE_PLANNER_VERBOSE": "tl.enable_vectorize_planner_verbose",
    "TL_DISABLE_WGMMA": "tl.disable_wgmma",
    "TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS": "tl.debug_merge_shared_memory_allocations",
    "TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE": "tl.enable_aggressive_shared_memory_merge",
    "TL_DISABLE_SHARED_MEMORY_REUSE": "tl.disable_shared_memory_reuse",
    "TL_DISABLE_SHUFFLE_ELECT": "tl.disable_shuffle_elect",
    "TL_DISABLE_LOOP_UNSWITCHING": "tl.disable_loop_unswitching",
    "TL_LOOP_UNSWITCHING_ALLOW_NON_TRIVIAL_ELSE": "tl.loop_unswitching_allow_non_trivial_else",
    "TL_IF_STMT_BINDING_INLINE_REPLAYABLE_BINDS": "tl.if_stmt_binding_inline_replayable_binds",
    "TL_DISABLE_THREAD_STORAGE_SYNC": "tl.disable_thread_storage_sync",
    "TL_FORCE_LET_INLINE": "tl.force_let_inline",
    "TL_AST_PRINT_ENABLE": "tl.ast_print_enable",
    "TL_LAYOUT_VISUALIZATION_ENABLE": "tl.layout_visualization_enable",
    "TL_LAYOUT_VISUALIZATION_FORMATS": "tl.layout_visualization_formats",
    "TL_STORAGE_REWRITE_DETECT_INPLACE": "tl.storage_rewrite_detect_inplace",
    "TIR_ENABLE_EQUIV_TERMS_IN_CSE": "tir.enable_equiv_terms_in_cse_tir",
    "TIR_DISABLE_CSE": "tirx.disable_cse_tir",
    "TIR_SIMPLIFY": "tirx.Simplify",
    "TIR_DISABLE_STORAGE_REWRITE": "tirx.disable_storage_rewrite",
    "TIR_DISABLE_VECTORIZE": "tirx.disable_vectorize",
    "TIR_USE_ASYNC_COPY": "tirx.use_async_copy",
    "TIR_ENABLE_DEBUG": "tirx.enable_debug",
    "TIR_MERGE_STATIC_SMEM": "tirx.merge_static_smem",
    "TIR_ADD_LOWER_PASS": "tirx.add_lower_pass",
    "TIR_NOALIAS": "tirx.noalias",
    "TL_DISABLE_OUT_OF_BOUND_WARNING": "tl.disable_out_of_bound_warning",
    "TL_ENABLE_DUMP_IR": "tl.enable_dump_ir",
    "TL_DUMP_IR_DIR": "tl.dump_ir_path",
    "TL_PASS_PROFILE": "tl.pass_profile",
    "TL_PASS_PROFILE_THRESHOLD_MS": "tl.pass_profile_threshold_ms",
}


class PassConfigKey:
    """TileLang's pass-config names, accepted as keys of `pass_configs` (see the module doc)."""

    TL_DISABLE_FAST_MATH = "tl.disable_fast_math"
    TL_DEBUG_DUMP = "tl.debug_dump"
    # ours: a backend may run a kernel's tiles on persistent blocks (one per processor); this
    # keeps one tile per block
    TL_DISABLE_PERSISTENT = "tl.disable_persistent"
    # ours: a backend may overlap two chained gemms of a pipelined loop across iterations (and
    # its warpgroups' turns, as FlashAttention-3 does); this keeps each iteration's order
    TL_DISABLE_OVERLAP = "tl.disable_overlap"
    # ours: the kernel is written to be correct when a tensor it writes shares memory with
    # another of its tensor arguments (e.g. in place); without it such a call is refused
    TL_MAY_ALIAS = "tl.may_alias"


class _ConfigKey(str):
    """A pass-config name that also reads as TileLang's enum member (its `PassConfigKey` is a
    string enum): `PassConfigKey.TL_SIMPLIFY.value == "tl.Simplify"`."""

    @property
    def value(self) -> str:
        return str(self)


for _name, _key in _TILELANG_KEYS.items():
    setattr(PassConfigKey, _name, _key)
for _name in [n for n in vars(PassConfigKey) if n.isupper()]:
    setattr(PassConfigKey, _name, _ConfigKey(getattr(PassConfigKey, _name)))

# key -> (CompileOptions field, converter)
_MEANINGFUL: dict[str, tuple[str, Any]] = {
    PassConfigKey.TL_DISABLE_TMA_LOWER: ("disable_tma", bool),
    PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: ("disable_warp_specialized", bool),
    PassConfigKey.TL_DISABLE_PERSISTENT: ("disable_persistent", bool),
    PassConfigKey.TL_DISABLE_OVERLAP: ("disable_overlap", bool),
    PassConfigKey.TL_DISABLE_WGMMA: ("disable_wgmma", bool),
    PassConfigKey.TL_ENABLE_FAST_MATH: ("fast_math", bool),
    PassConfigKey.TL_DISABLE_FAST_MATH: ("fast_math", lambda v: not bool(v)),
    PassConfigKey.TL_DEBUG_DUMP: ("debug_dump", bool),
    PassConfigKey.TL_MAY_ALIAS: ("may_alias", bool),
    PassConfigKey.TL_DEVICE_COMPILE_FLAGS: ("extra_flags", lambda v: (v,) if isinstance(v, str) else tuple(v)),
    PassConfigKey.TL_DISABLE_SAFE_MEMORY_ACCESS: ("disable_safe_memory_access", bool),
    PassConfigKey.TL_DISABLE_OUT_OF_BOUND_WARNING: ("disable_out_of_bound_warning", bool),
    PassConfigKey.TL_DISABLE_SHARED_MEMORY_REUSE: ("disable_shared_memory_reuse", bool),
    PassConfigKey.TL_DISABLE_THREAD_STORAGE_SYNC: ("disable_thread_storage_sync", bool),
    PassConfigKey.TL_DISABLE_BUFFER_INIT_CHECK: ("disable_buffer_init_check", bool),
}


@dataclass(frozen=True)
class CompileOptions:
    """Everything besides the program and the target that changes the generated binary."""

    fast_math: bool = False
    disable_tma: bool = False
    disable_warp_specialized: bool = False
    disable_persistent: bool = False  # one tile per block, never persistent blocks
    disable_overlap: bool = False  # chained gemms keep each iteration's order
    disable_wgmma: bool = False  # a target's warpgroup matrix instructions are not used
    debug_dump: bool = False
    # global accesses that may leave their tensor are not guarded (TileLang's key)
    disable_safe_memory_access: bool = False
    # no warning for shared/local indices the compiler cannot bound
    disable_out_of_bound_warning: bool = False
    # every shared buffer gets storage of its own, even where lifetimes do not overlap
    disable_shared_memory_reuse: bool = False
    # no block barriers are inserted around shared-memory accesses: the kernel places its own
    # (T.sync_threads); barriers a tile op's lowering places for itself stay
    disable_thread_storage_sync: bool = False
    disable_buffer_init_check: bool = False  # no warning for on-chip buffers read before written
    extra_flags: tuple[str, ...] = ()
    may_alias: bool = False  # calls may pass overlapping tensors where the kernel writes one
    # TileLang keys given that have no effect here (not part of equality or the cache key)
    ignored: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def from_pass_configs(cls, configs: Mapping[str, Any] | None) -> "CompileOptions":
        if not configs:
            return cls()
        fields = {f.name for f in dataclasses.fields(cls)} - {"ignored"}
        known = set(_TILELANG_KEYS.values())
        values: dict[str, Any] = {}
        ignored = []
        for key, value in configs.items():
            if key in _MEANINGFUL:
                name, convert = _MEANINGFUL[key]
                values[name] = convert(value)
            elif key in fields:
                values[key] = tuple(value) if key == "extra_flags" else bool(value)
            elif key in known:
                ignored.append(key)
            else:
                valid = sorted(fields | set(_MEANINGFUL) | known)
                raise OptionsError(f"unknown pass config {key!r}; valid keys: {', '.join(valid)}")
        return cls(**values, ignored=tuple(ignored))

    def key(self) -> str:
        return repr(sorted((k, v) for k, v in dataclasses.asdict(self).items() if k != "ignored"))
