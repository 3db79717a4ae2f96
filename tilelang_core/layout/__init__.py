"""Layouts that lowering passes agree on: where a fragment's elements live in registers.

A target's `tilelang_infer_layout` hook imposes a `FragmentLayout` on a fragment (e.g. the
accumulator layout of a matrix instruction); the core's `infer_layout` pass records it in a
`FragmentLayouts`, tile-op lowerings address the fragment's per-thread register array
(`FragmentLayouts.register_buffer`), and the SIMT placement runs `T.Parallel` nests over it
slot by slot (see `tilelang_core.transform.simt`).
"""
from __future__ import annotations

from .fragment import FragmentLayout, FragmentLayouts

__all__ = ["FragmentLayout", "FragmentLayouts"]
