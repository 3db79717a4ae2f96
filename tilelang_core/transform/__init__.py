"""The core's passes, and the part of them a backend may use (its public API).

A backend's own lowerings and passes (`tilelang_lower_tile_op`, `tilelang_pipeline`) build
TIR with the helpers below; every other module of this package is internal and may change.
Names resolve on first access, so importing this package loads no pass.

- IR building and rewriting (`irutil`): `seq`, `const`, `loop_nest`, `substitute`, `walk`,
  `map_stmts`, `in_bounds`, `region_indices`, `squeeze_extents`, `analyzer`;
- errors that name the user's line (`errors`): `TileLangCompileError`, `CapabilityError`, and
  `LowerAgain` (a pass asks for the pipeline to run again with other options, with the reason);
- the launch of a kernel (`kernel_info`): `launch_info`, `LaunchInfo`, and the keywords
  installed backends add to `T.Kernel` that it passed, `kernel_hints`;
- reductions as the portable lowering writes them (`portable`): `reduce_init`, `reduce_combine`;
- user-synchronized regions and barrier-op helpers (`barrier_ops`): `user_sync`, `as_copy`;
- `T.ws` thread ranges (`thread_ranges`): `ranges_of`;
- shared-memory placement as the core plans it (`storage`): `place_buffers`,
  `ATTR_SHARED_LIFETIMES` (a printer that lays out its own shared memory, e.g. Metal's), and
  `shared_bytes` (what a kernel needs, for a pass that adds a shared buffer) and
  `map_top_level` (the statements its lifetimes count in, for placing such a buffer);
- variable ranges a pass knows (`guards`): `VAR_RANGES`, the `ctx.facts` key under which a pass
  that binds a variable records {var: extent} (value in [0, extent)), so later passes prove
  bounds guards away;
- `T.gemm` on matrix instructions that tile C in squares, one per group of lanes
  (`tiled_gemm`, with `tilelang_core.layout.TiledGemmPlan`): `plan_tiled_gemm`,
  `infer_tiled_gemm_layout`, `feeds_from_another_layout`, `lower_tiled_gemm`;
- TileLang's names at this path: `simplify_prim_func`, `apply_simplify` and TVM's
  `PassContext` (`simplify`), and `PassConfigKey` (the keys of `pass_configs`, from
  `tilelang_core.jit.options`);
- TileLang's names for TVM's standard passes (`tvm_passes`): `Simplify`, `FlattenBuffer`,
  `VectorizeLoop`, `UnrollLoop`, `MakePackedAPI`, `SplitHostDevice`, `LowerOpaqueBlock`,
  `InjectSoftwarePipeline`, `ThreadSync`, each apache-tvm 0.27's pass of that name;
- `LegalizeNegativeIndex` (`negative_index`): the core's pass that counts negative indices
  from the end of their dimension, as a TVM pass;
- `LegalizeSafeMemoryAccess` (`safe_access`): the core's run-time guards of global accesses
  that may leave their tensor, as a TVM pass;
- `LoopUnswitching` (`loop_unswitching`): loop-invariant conditions hoisted out of loops;
- `VerifyBufferInit` (`buffer_init`): the core's check that reports on-chip buffers read
  before anything writes them, as a TVM pass.
"""
from __future__ import annotations

import importlib
from typing import Any

# public name -> the module of this package that defines it
_PUBLIC = {
    **{name: "irutil" for name in ("seq", "const", "loop_nest", "substitute", "walk", "map_stmts", "in_bounds",
                                    "region_indices", "squeeze_extents", "analyzer")},
    "TileLangCompileError": "errors",
    "CapabilityError": "errors",
    "LowerAgain": "errors",
    "launch_info": "kernel_info",
    "LaunchInfo": "kernel_info",
    "kernel_hints": "kernel_info",
    "reduce_init": "portable",
    "reduce_combine": "portable",
    "user_sync": "barrier_ops",
    "as_copy": "barrier_ops",
    "ranges_of": "thread_ranges",
    "place_buffers": "storage",
    "shared_bytes": "storage",
    "map_top_level": "storage",
    "ATTR_SHARED_LIFETIMES": "storage",
    "VAR_RANGES": "guards",
    **{name: "simplify" for name in ("simplify_prim_func", "apply_simplify", "PassContext")},
    "PassConfigKey": "..jit.options",
    **{name: "tvm_passes" for name in ("Simplify", "FlattenBuffer", "VectorizeLoop", "UnrollLoop", "MakePackedAPI",
                                        "SplitHostDevice", "LowerOpaqueBlock", "InjectSoftwarePipeline", "ThreadSync")},
    "LegalizeNegativeIndex": "negative_index",
    "VerifyBufferInit": "buffer_init",
    "LegalizeSafeMemoryAccess": "safe_access",
    "LoopUnswitching": "loop_unswitching",
    **{name: "tiled_gemm" for name in ("plan_tiled_gemm", "infer_tiled_gemm_layout", "feeds_from_another_layout",
                                        "lower_tiled_gemm")},
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'tilelang_core.transform' has no attribute {name!r}")
    path = f"{__name__}.{module}" if not module.startswith(".") else f"tilelang_core{module[1:]}"
    value = getattr(importlib.import_module(path), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
