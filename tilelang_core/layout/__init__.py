"""Layouts: where a fragment's elements live in the block's registers.

`Fragment` is the layout model (element of a tile -> thread and register slot, with
replication); `FragmentLayouts` holds what whole-kernel layout inference decided for one
kernel (see `tilelang_core.transform.layout_inference`). A target's `tilelang_infer_layout`
hook gives the layouts its matrix instructions need, as `Fragment`s.
"""
from __future__ import annotations

from .fragment import Fragment, FragmentError, cyclic_fragment, row_fragment, xor
from .placement import FragmentDecision, FragmentLayouts
from .plot import plot_layout

__all__ = ["Fragment", "FragmentError", "FragmentDecision", "FragmentLayouts", "cyclic_fragment",
           "plot_layout", "row_fragment", "xor"]
