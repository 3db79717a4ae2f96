"""Tools for kernel authors, at TileLang's `tilelang.tools` paths:

- `plot_layout(layout, save_directory=, name=, formats=)`: a picture of a `T.Layout` (each
  element of the tile labelled with where it lives) or of a `T.Fragment` (which thread holds
  each element, in which register slot); SVG and PNG, no plotting library needed;
- `Analyzer.analysis(func, device)`: FLOPs of the `T.gemm`s and bytes of the global `T.copy`s a
  kernel does over its whole grid, and the time a roofline of `device` gives them.

TileLang's instruments of its own C++ pass pipeline (lowering traces, pass timing, the pass
visualizer) have no counterpart: they observe passes tilelang-core does not run.
"""
from __future__ import annotations

from .analyzer import AnalysisResult, Analyzer
from .plot import plot_layout

__all__ = ["AnalysisResult", "Analyzer", "plot_layout"]
