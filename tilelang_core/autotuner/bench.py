"""Checking and timing compiled candidates, one at a time, through each kernel's Profiler."""
from __future__ import annotations

from typing import Any

from .capture import get_autotune_inputs
from .param import ProfileArgs

__all__ = ["CandidateBench", "InputsNeeded"]


class InputsNeeded(ValueError):
    """The kernel takes values the tensor supply cannot make (scalars): the same for every
    candidate, so tuning stops with it rather than counting a failure per config."""


class CandidateBench:
    """Runs `measure(kernel)` for each candidate of one tuning run, sharing what they share:
    the inputs (with `cache_input_tensors`, or from `set_autotune_inputs`), the reference
    latency (measured once, on the first candidate's inputs) and the best latency so far
    (for `early_stop`)."""

    def __init__(self, profile: ProfileArgs, early_stop_factor: float | None = None) -> None:
        self.profile = profile
        self.early_stop_factor = early_stop_factor
        self.captured = get_autotune_inputs()
        self.ref_latency: float | None = None
        self.best_latency: float | None = None
        self._cached: tuple[tuple, list[Any]] | None = None

    def measure(self, kernel: Any) -> float:
        """Check `kernel` against the reference (unless `skip_check`) and return its latency
        in ms. Raises AssertionError on a wrong result, anything else on a failed run."""
        p = self.profile
        profiler = kernel.get_profiler(tensor_supply_type=p.supply_type)
        inputs = self._inputs(profiler)
        if p.ref_prog is not None and not p.skip_check:
            if p.manual_check_prog is not None:
                profiler.manual_assert_close(p.ref_prog, input_tensors=inputs, manual_check_prog=p.manual_check_prog)
            else:
                profiler.assert_allclose(p.ref_prog, input_tensors=inputs, rtol=p.rtol, atol=p.atol,
                                         max_mismatched_ratio=p.max_mismatched_ratio)
        baseline = None
        if self.early_stop_factor is not None and self.best_latency is not None:
            baseline = self.best_latency * self.early_stop_factor
        latency = float(profiler.do_bench(n_warmup=p.warmup, n_repeat=p.rep, input_tensors=inputs, backend=p.backend,
                                          early_stop_baseline=baseline))
        if p.ref_prog is not None and self.ref_latency is None:
            self.ref_latency = float(profiler.do_bench(p.ref_prog, n_warmup=p.warmup, n_repeat=p.rep,
                                                       input_tensors=inputs, backend=p.backend))
        if self.best_latency is None or latency < self.best_latency:
            self.best_latency = latency
        return latency

    def _inputs(self, profiler: Any) -> list[Any]:
        if self.captured is not None:
            return list(self.captured)
        params = [param for i, param in enumerate(profiler.params) if i not in profiler.result_idx]
        signature = tuple((param.dtype, tuple(param.shape)) for param in params)
        if self.profile.cache_input_tensors and self._cached is not None and self._cached[0] == signature:
            return self._cached[1]
        if self.profile.supply_prog is not None:
            inputs = list(self.profile.supply_prog(params))
        elif any(getattr(param, "kind", "tensor") != "tensor" for param in params):
            scalars = [getattr(param, "name", "?") for param in params if getattr(param, "kind", "tensor") != "tensor"]
            raise InputsNeeded(
                f"the kernel takes scalar parameters ({', '.join(map(str, scalars))}) that the tensor supply "
                f"cannot make: give the tuning inputs with `with set_autotune_inputs(...)` (or supply_prog=)")
        else:
            inputs = list(profiler.get_input_tensors())
        self._cached = (signature, inputs)
        return inputs
