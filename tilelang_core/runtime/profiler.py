"""TileLang's profiler: time a kernel (or a reference) on supplied inputs, and check a kernel
against a reference program.

Every measurement uses the kernel's runtime timer (`runtime.make_timer()`: device events on
GPUs, the host clock on the host runtime), and `runtime.flush_l2()` before each timed call.
`do_bench` at module level times any callable on the default target's runtime.
"""
from __future__ import annotations

import statistics
from functools import partial
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..utils.tensor import TensorSupplyType, get_tensor_supply, torch_assert_close

__all__ = ["Profiler", "do_bench"]

_BACKENDS = ("event", "cupti", "cudagraph")
_RETURN_MODES = ("min", "max", "mean", "median")
_GRAPH_REPLAYS = 10  # timed batches for backend="cudagraph", as TileLang replays its graph


def _default_runtime() -> Any:
    """The runtime of the default target (`TILELANG_TARGET`, else the best detected one)."""
    from ..plugin.facade import hooks_for
    from ..plugin.manager import get_plugin_manager

    return hooks_for(get_plugin_manager().parse_target(None)).runtime()


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a whole number of calls >= 0 (0: from the time budget), got {value!r}")
    return int(value)


def _budget(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not value >= 0:
        raise ValueError(f"{name} must be a time budget in milliseconds >= 0, got {value!r}")
    return float(value)


def do_bench(
    fn: Callable[[], Any],
    warmup: float = 25,
    rep: float = 100,
    _n_warmup: int = 0,
    _n_repeat: int = 0,
    quantiles: Sequence[float] | None = None,
    fast_flush: bool = True,
    backend: str = "event",
    return_mode: str = "mean",
    device: Any = None,
    cache_size: int = 256,
    early_stop_baseline: float | None = None,
    *,
    runtime: Any = None,
    flush_l2: bool = True,
) -> float | list[float]:
    """Milliseconds per call of `fn()` (TileLang's `tilelang.profiler.do_bench`).

    One call, then five calls under one timer estimate the time per call (L2 flush included).
    `warmup` and `rep` are budgets in milliseconds: `warmup / estimate` untimed calls, then
    `rep / estimate` timed ones (at least one each); `_n_warmup` / `_n_repeat` > 0 give the
    counts instead. With `early_stop_baseline`, an estimate above it is returned at once.

    `backend` says how the timed calls are measured, always with `runtime.make_timer()`:
    - "event": each call between its own timer marks, the L2 flushed before it; the
      result is `return_mode` ("mean", "median", "min", "max") of those times, or the
      `quantiles` of them (one value, or a list).
    - "cupti": TileLang reads kernel durations from a CUPTI trace. The runtime contract has
      no kernel trace, so this is the mean of the per-call device-timer times of "event",
      which also count the launch gap a trace would leave out. `quantiles` and
      `return_mode` are ignored, as TileLang ignores them here.
    - "cudagraph": TileLang replays a captured graph of `_n_repeat` calls. The contract has
      no graph capture, so the calls run back to back between one pair of marks (the L2
      flushed once before each batch), ten batches, per-call time of each batch; host launch
      overhead a graph would hide counts when the device outruns the host.

    `fast_flush` and `cache_size` size TileLang's own flush buffer; here `runtime.flush_l2()`
    evicts the whole last-level cache (`flush_l2=False` skips it), so they change nothing.
    `device` must be None: the runtime times on its own device. `runtime` defaults to the
    default target's (`TILELANG_TARGET`, else the best detected device).
    """
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(_BACKENDS)}, got {backend!r}")
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(_RETURN_MODES)}, got {return_mode!r}")
    if device is not None:
        raise ValueError(f"device={device!r}: the runtime times on the device it runs kernels on; "
                         f"choose it with the kernel's target and pass device=None")
    if quantiles is not None and not all(0 <= q <= 1 for q in quantiles):
        raise ValueError(f"quantiles must lie in [0, 1], got {list(quantiles)!r}")
    warmup, rep = _budget("warmup", warmup), _budget("rep", rep)
    n_warmup, n_repeat = _count("n_warmup", _n_warmup), _count("n_repeat", _n_repeat)
    runtime = _default_runtime() if runtime is None else runtime
    flush = runtime.flush_l2 if flush_l2 else (lambda: None)

    fn()
    runtime.synchronize()
    timer = runtime.make_timer()
    timer.start()
    for _ in range(5):
        flush()
        fn()
    timer.stop()
    estimate = timer.elapsed_ms() / 5
    if early_stop_baseline is not None and estimate > early_stop_baseline:
        return [estimate] * len(quantiles) if quantiles is not None else estimate
    per_call = max(estimate, 1e-6)  # a host clock can read 0 for a very short call
    n_warmup = n_warmup or max(1, int(warmup / per_call))
    n_repeat = n_repeat or max(1, int(rep / per_call))
    for _ in range(n_warmup):
        fn()
    if backend == "cudagraph":
        times = _time_batches(fn, runtime, flush, n_repeat)
    else:
        times = _time_calls(fn, runtime, flush, n_repeat)
    if backend == "cupti":
        return statistics.fmean(times)
    if quantiles is not None:
        values = [float(v) for v in np.quantile(np.asarray(times), list(quantiles))]
        return values[0] if len(values) == 1 else values
    return {"min": min, "max": max, "mean": statistics.fmean, "median": statistics.median}[return_mode](times)


def _time_calls(fn: Callable[[], Any], runtime: Any, flush: Callable[[], None], n: int) -> list[float]:
    """Each call between its own timer marks; read after one synchronize, as events are."""
    timers = [runtime.make_timer() for _ in range(n)]
    for timer in timers:
        flush()
        timer.start()
        fn()
        timer.stop()
    runtime.synchronize()
    return [timer.elapsed_ms() for timer in timers]


def _time_batches(fn: Callable[[], Any], runtime: Any, flush: Callable[[], None], n: int) -> list[float]:
    """`n` calls back to back per timed batch; the per-call time of each batch."""
    timers = [runtime.make_timer() for _ in range(_GRAPH_REPLAYS)]
    for timer in timers:
        flush()
        timer.start()
        for _ in range(n):
            fn()
        timer.stop()
    runtime.synchronize()
    return [timer.elapsed_ms() / n for timer in timers]


def _as_list(outputs: Any) -> list[Any]:
    if outputs is None:
        return []
    if isinstance(outputs, (tuple, list)):
        return list(outputs)
    return [outputs]


class Profiler:
    """`kernel.get_profiler(tensor_supply_type)`: TileLang's Profiler over one compiled kernel.

    Inputs come from the tensor supply (`TensorSupplyType.Auto` by default, as in TileLang),
    made once per set of symbolic sizes and reused (`get_input_tensors`), unless a call
    passes `input_tensors`. Attributes as in TileLang: `params` (the kernel's parameters,
    `ParamSpec`s), `result_idx` (the output positions), `supply_type`, `supply`, `adapter`
    and `func` (what runs when no function is given: the kernel).
    """

    def __init__(self, kernel: Any, tensor_supply_type: TensorSupplyType | None = None) -> None:
        meta, runtime = getattr(kernel, "meta", None), getattr(kernel, "runtime", None)
        if meta is None or runtime is None:
            raise TypeError(f"Profiler(kernel) takes a compiled kernel (tilelang.compile(...) or "
                            f"kernel.get_profiler()), got {type(kernel).__name__}")
        if tensor_supply_type is None:
            tensor_supply_type = TensorSupplyType.Auto
        elif isinstance(tensor_supply_type, str) and tensor_supply_type in TensorSupplyType.__members__:
            tensor_supply_type = TensorSupplyType[tensor_supply_type]
        elif not isinstance(tensor_supply_type, TensorSupplyType):
            names = ", ".join(TensorSupplyType.__members__)
            raise TypeError(f"tensor_supply_type must be a TensorSupplyType ({names}), got {tensor_supply_type!r}")
        self.kernel = kernel
        self.adapter = kernel
        self.runtime = runtime
        self.supply_type = tensor_supply_type
        self.supply = get_tensor_supply(tensor_supply_type)
        self.params = list(meta.params[: len(meta.params) - len(meta.symbols)])
        self.result_idx = list(meta.out_idx)
        self._inputs: dict[tuple, list[Any]] = {}

    # -- what runs --------------------------------------------------------------------------

    @property
    def func(self) -> Any:
        if self.adapter is None:
            raise ValueError("this profiler has no kernel to run: pass func=, or set one with with_default_adapter(kernel)")
        return self.adapter

    def with_default_adapter(self, adapter: Any) -> "Profiler":
        """Run `adapter` (a kernel or any callable) when no function is given."""
        self.adapter = adapter
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    # -- inputs -----------------------------------------------------------------------------

    def _get_inputs(self, with_output: bool = False,
                    dynamic_symbolic_constraints: Mapping[str, int] | None = None) -> list[Any]:
        """Fresh supplied tensors for the inputs (and the outputs too, `with_output`), in
        parameter order. `dynamic_symbolic_constraints` sizes the symbolic dimensions."""
        return [self.supply(param, self.runtime, dynamic_symbolic_constraints)
                for i, param in enumerate(self.params) if with_output or i not in self.result_idx]

    def get_input_tensors(self, dynamic_symbolic_constraints: Mapping[str, int] | None = None) -> list[Any]:
        """The inputs this profiler uses, supplied on first use per set of symbolic sizes."""
        key = tuple(sorted((dynamic_symbolic_constraints or {}).items()))
        if key not in self._inputs:
            self._inputs[key] = self._get_inputs(dynamic_symbolic_constraints=dynamic_symbolic_constraints)
        return self._inputs[key]

    def _inputs_for(self, input_tensors: Sequence[Any] | None,
                    constraints: Mapping[str, int] | None = None) -> list[Any]:
        if input_tensors is not None:
            return list(input_tensors)
        return self.get_input_tensors(constraints)

    def _output_name(self, k: int) -> str:
        if k < len(self.result_idx):
            return f"output {self.params[self.result_idx[k]].name!r}"
        return f"output {k}"

    # -- checks -----------------------------------------------------------------------------

    def _run_both(self, reference_program: Callable, input_tensors: Sequence[Any] | None) -> tuple[list, list]:
        ins = self._inputs_for(input_tensors)
        ref_outs = _as_list(reference_program(*ins))
        self.runtime.synchronize()
        lib_outs = _as_list(self.func(*ins))
        self.runtime.synchronize()
        if len(lib_outs) != len(ref_outs):
            raise AssertionError(f"the kernel returned {len(lib_outs)} output(s) and the reference "
                                 f"{len(ref_outs)}; the reference must return one value per output")
        return lib_outs, ref_outs

    def assert_allclose(self, reference_program: Callable, input_tensors: Sequence[Any] | None = None,
                        atol: float = 1e-2, rtol: float = 1e-2, max_mismatched_ratio: float = 0.01) -> None:
        """Run the reference and the kernel on the same inputs and compare each output,
        element by element (see `torch_assert_close`: shape, device and dtype must match; at
        most `max_mismatched_ratio` of the elements may lie outside atol + rtol * |ref|).
        A reference output of None is not compared. Raises AssertionError naming the
        output, the worst element and the tolerance."""
        lib_outs, ref_outs = self._run_both(reference_program, input_tensors)
        for k, (lhs, rhs) in enumerate(zip(lib_outs, ref_outs)):
            if lhs is None or rhs is None:
                continue
            torch_assert_close(lhs, rhs, rtol=rtol, atol=atol, max_mismatched_ratio=max_mismatched_ratio,
                               base_name=f"kernel {self._output_name(k)}", ref_name="reference")

    def manual_assert_close(self, reference_program: Callable, input_tensors: Sequence[Any] | None = None,
                            manual_check_prog: Callable | None = None) -> None:
        """Run both on the same inputs, then `manual_check_prog(kernel_outputs, reference_outputs)`."""
        if manual_check_prog is None:
            raise ValueError("manual_assert_close needs manual_check_prog(kernel_outputs, reference_outputs)")
        lib_outs, ref_outs = self._run_both(reference_program, input_tensors)
        manual_check_prog(lib_outs, ref_outs)

    def assert_consistent(self, repeat: int = 10) -> None:
        """Run the kernel `repeat` more times on the same inputs: every run must match the
        first (rtol 1e-5, atol 1e-8), which catches races."""
        ins = self.get_input_tensors()
        first = _as_list(self.func(*ins))
        for run in range(repeat):
            again = _as_list(self.func(*ins))
            for k, (lhs, rhs) in enumerate(zip(again, first)):
                torch_assert_close(lhs, rhs, rtol=1e-5, atol=1e-8, max_mismatched_ratio=0,
                                   base_name=f"run {run + 2} {self._output_name(k)}", ref_name="run 1")

    # -- running and timing -----------------------------------------------------------------

    def run_once(self, func: Callable | None = None) -> Any:
        """`func(*inputs)` (the kernel by default) once on the supplied inputs; its result."""
        return (func if func is not None else self.func)(*self.get_input_tensors())

    def do_bench(
        self,
        func: Callable | None = None,
        warmup: float = 25,
        rep: float = 100,
        n_warmup: int = 0,
        n_repeat: int = 0,
        input_tensors: Sequence[Any] | None = None,
        backend: str = "event",
        quantiles: Sequence[float] | None = None,
        return_mode: str = "mean",
        dynamic_symbolic_constraints: Mapping[str, int] | None = None,
        device: Any = None,
        early_stop_baseline: float | None = None,
        flush_l2: bool = True,
        values: Mapping[str, int] | None = None,
    ) -> float | list[float]:
        """Milliseconds per call of `func(*inputs)`: the kernel by default, or any callable
        taking the same inputs (a reference program, another kernel).

        `warmup`/`rep` are time budgets in ms, `n_warmup`/`n_repeat` (> 0) call counts that
        override them; `backend` "event", "cupti" or "cudagraph", `quantiles` and
        `return_mode` as in the module's `do_bench`, which says what each backend measures
        here. Inputs: `input_tensors`, else the profiler's supplied ones, sized by
        `dynamic_symbolic_constraints` (`values` is the older name of the same thing).
        """
        if values is not None and dynamic_symbolic_constraints is not None:
            raise ValueError("pass the symbolic sizes once: dynamic_symbolic_constraints= (values= is its older name)")
        constraints = dynamic_symbolic_constraints if dynamic_symbolic_constraints is not None else values
        call = partial(func if func is not None else self.func, *self._inputs_for(input_tensors, constraints))
        return do_bench(call, warmup=warmup, rep=rep, _n_warmup=n_warmup, _n_repeat=n_repeat,
                        quantiles=quantiles, backend=backend, return_mode=return_mode, device=device,
                        early_stop_baseline=early_stop_baseline, runtime=self.runtime, flush_l2=flush_l2)
