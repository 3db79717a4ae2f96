"""Timing a kernel on fresh random inputs with the runtime's own timer (events on GPUs)."""
from __future__ import annotations

import statistics
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["Profiler", "random_array"]


def random_array(shape: Sequence[int], dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Random values of a dtype, never all zeros: floats in [-1, 1), ints in [-8, 8)."""
    if dtype.startswith(("float", "bfloat")):
        data = rng.uniform(-1.0, 1.0, size=tuple(shape))
        if dtype == "bfloat16":
            import ml_dtypes

            return data.astype(ml_dtypes.bfloat16)
        return data.astype(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, size=tuple(shape)).astype(bool)
    low = 0 if dtype.startswith("uint") else -8
    return rng.integers(low, 8, size=tuple(shape)).astype(dtype)


class Profiler:
    """`kernel.get_profiler()`: `do_bench()` returns the median time of one call in ms."""

    def __init__(self, kernel) -> None:
        self.kernel = kernel
        self.runtime = kernel.runtime

    def make_inputs(self, values: dict[str, int] | None = None, seed: int = 0) -> list[Any]:
        rng = np.random.default_rng(seed)
        values = values or {}
        inputs = []
        meta = self.kernel.meta
        for i in self.kernel._inputs:
            p = meta.params[i]
            if p.kind != "tensor":
                raise ValueError(f"do_bench cannot invent scalar argument {p.name!r}; pass input_tensors")
            shape = [values[d] if isinstance(d, str) else d for d in p.shape]
            inputs.append(self.runtime.from_numpy(random_array(shape, p.dtype, rng)))
        return inputs

    def do_bench(self, func: Callable | None = None, warmup: int = 5, rep: int = 20,
                 input_tensors: Sequence[Any] | None = None, flush_l2: bool = True,
                 values: dict[str, int] | None = None) -> float:
        """Median milliseconds per call over `rep` timed calls after `warmup` untimed ones."""
        args = list(input_tensors) if input_tensors is not None else self.make_inputs(values)
        call = func if func is not None else (lambda: self.kernel(*args))
        for _ in range(warmup):
            call()
        self.runtime.synchronize()
        times = []
        for _ in range(rep):
            if flush_l2:
                self.runtime.flush_l2()
            timer = self.runtime.make_timer()
            timer.start()
            call()
            timer.stop()
            times.append(timer.elapsed_ms())
        return statistics.median(times)
