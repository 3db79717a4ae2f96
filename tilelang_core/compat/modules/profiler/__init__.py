"""TileLang's `tilelang.profiler` package: `Profiler` (from `kernel.get_profiler()`) and
`do_bench`, with `bench.do_bench` at TileLang's path. Both are the core's
(`tilelang_core.runtime.profiler`)."""
from __future__ import annotations

from ....runtime.profiler import Profiler, do_bench
from . import bench

__all__ = ["Profiler", "bench", "do_bench"]
