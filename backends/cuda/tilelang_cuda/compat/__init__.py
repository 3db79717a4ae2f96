"""TileLang's `tilelang.cuda` namespace, as far as this backend provides it.

The core's import aliasing maps `tilelang.cuda[.x]` here (through this backend's
`tilelang_compat_modules` hook), so a TileLang program's `from tilelang.cuda.intrinsics import
make_mma_swizzle_layout` finds `tilelang_cuda.compat.intrinsics`. Provided so far:

| TileLang module | names |
|---|---|
| `tilelang.cuda.intrinsics` | `make_mma_swizzle_layout`, `get_swizzle_layout`, `TensorCoreIntrinEmitter` |
| `tilelang.cuda.intrinsics.layout[.mma_layout]` | the same two |
| `tilelang.cuda.intrinsics.macro[.mma_macro_generator]` | `TensorCoreIntrinEmitter` (mma.sync GEMMs over `T.alloc_local` registers), `TensorCoreIntrinEmitterWithLadderTransform` (operands BitBLAS's ladder transform pre-permuted); `INT4TensorCoreIntrinEmitter`, gone from TileLang since its PR #2063, fails to import with that reason |
| `tilelang.cuda.intrinsics.layout.mma_layout` | also the mma.sync operand register layouts (`shared_16x{8,16,32}_to_mma_32x{4,8,16}_layout_{sr,rs}_{a,b}`) |
| `tilelang.cuda.intrinsics.layout[.utils]` | `get_mma_micro_size` |
| `tilelang.cuda.intrinsics.sparse_layout` | `GROUP_CONFIG`, `get_e_factor`, `get_e_replicate_factor` (2:4 sparsity metadata factors; `T.gemm_sp` is the core's) |
| `tilelang.tools.cuda.iket` (claimed separately, from `compat.tools`) | IKET instrumentation: `mark`, `range`, `payload`, `session`, ... |

TileLang's `T.ptx_mma` and `T.ptx_ldmatrix`, which the emitter emits, come from
`tilelang_cuda.language` (offered to the core's `T` by the `tilelang_language_names` hook).

A module of TileLang's namespace that is not here fails to import with a message naming this
package; a name that is not here fails as Python's `ImportError` does.
"""
from __future__ import annotations

from . import intrinsics as intrinsics

__all__ = ["intrinsics"]
