"""`tilelang.profiler.bench.do_bench`: time a callable on the default target's runtime (the
core's `tilelang_core.runtime.profiler.do_bench`)."""
from __future__ import annotations

from ....runtime.profiler import do_bench

__all__ = ["do_bench"]
