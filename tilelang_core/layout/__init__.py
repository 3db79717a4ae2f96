"""Layouts: where a fragment's elements live in the block's registers.

`Fragment` is the layout model (element of a tile -> thread and register slot, with
replication); `FragmentLayouts` holds what whole-kernel layout inference decided for one
kernel (see `tilelang_core.transform.layout_inference`). A target's `tilelang_infer_layout`
hook gives the layouts its matrix instructions need, as `Fragment`s; a target whose matrix
instructions tile C in squares, one per group of lanes, describes them with a `TiledGemmPlan`
(and splits C's tiles over the groups with `split_tiles`).
"""
from __future__ import annotations

from .fragment_model import Fragment, FragmentError, cyclic_fragment, replicated_fragment, row_fragment, xor
from .placement import FragmentDecision, FragmentLayouts
from .plot import plot_layout
from .tiled_gemm import TiledGemmPlan, split_tiles

# TileLang's named layouts (its `tilelang.layout.swizzle`), in `tilelang_core.language.swizzle`
_SWIZZLE = ("SwizzleMode", "make_full_bank_swizzled_layout", "make_half_bank_swizzled_layout",
            "make_quarter_bank_swizzled_layout", "make_linear_layout", "make_gemm_fragment_8x8",
            "make_gemm_fragment_8x8_transposed", "make_fully_replicated_layout_fragment")

__all__ = ["Fragment", "FragmentError", "FragmentDecision", "FragmentLayouts", "cyclic_fragment",
           "plot_layout", "replicated_fragment", "row_fragment", "split_tiles", "TiledGemmPlan", "xor", "Layout",
           "make_swizzled_layout", *_SWIZZLE]

# TileLang's `tilelang.layout` also holds the user-facing shared-memory layouts, which live in
# the language (they need TVM): resolved on first access so this package stays TVM-free.
_FROM_LANGUAGE = {"Layout": "layout", "make_swizzled_layout": "layout", **{name: "swizzle" for name in _SWIZZLE}}


def __getattr__(name: str):
    if name in _FROM_LANGUAGE:
        import importlib

        return getattr(importlib.import_module(f"..language.{_FROM_LANGUAGE[name]}", __name__), name)
    raise AttributeError(f"module 'tilelang_core.layout' has no attribute {name!r}")
