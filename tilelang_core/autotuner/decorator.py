"""`@tilelang.autotune(configs=...)`, stacked on `@tilelang.jit` (TileLang's decorator).

    @tilelang.autotune(configs=get_configs(), warmup=10, rep=10)
    @tilelang.jit(out_idx=[3])
    def flashattn(batch, heads, seq_len, dim, block_M=64, block_N=64, num_stages=1, threads=128):
        ...

    kernel = flashattn(1, 32, 4096, 128)      # tunes block_M, ..., threads; the best kernel
    kernel.config, kernel.latency, kernel.ref_latency
    kernel = flashattn(1, 32, 4096, 128, block_M=128, block_N=64, num_stages=2, threads=256)
                                              # a tuned parameter given: no tuning, that kernel

A lazy-style function returns the best kernel; `.compile(...)` does the same for either
style (an eager-style function's `T.const` values as keywords, e.g. `.compile(N=1024, K=512)`);
calling an eager-style function with its tensors tunes for their shapes and runs the best
kernel on them. Each distinct set of arguments is tuned once per process, and the best config
is kept on disk for the next process (see `AutoTuner`).
"""
from __future__ import annotations

import functools
import json
from typing import Any, Callable, Sequence

from ..utils.tensor import TensorSupplyType
from .cache import UnstableValue, stable_value
from .candidates import RESERVED_CONFIG_KEYS
from .param import AutotuneResult, ProfileArgs
from .tuner import AutoTuner, _bind

__all__ = ["AutotunedFunction", "autotune"]


class AutotunedFunction:
    """A `@tilelang.jit` function with a tuning space: what `@autotune(...)` returns."""

    def __init__(self, jit_fn: Any, configs: Any, profile: ProfileArgs, *, do_not_specialize: Sequence[str] = (),
                 early_stop: bool = False, early_stop_factor: float = 2.0, max_workers: int | None = None) -> None:
        self.jit_fn = jit_fn
        self.configs = configs
        self.profile = profile
        self.do_not_specialize = tuple(do_not_specialize or ())
        self.early_stop = early_stop
        self.early_stop_factor = early_stop_factor
        self.max_workers = max_workers
        # call key (the arguments less `do_not_specialize`) -> its tuning result, or the kernel
        # of a call that gave a tuned parameter itself (TileLang's `_tuner_cache`)
        self._tuner_cache: dict[str, Any] = {}
        functools.update_wrapper(self, jit_fn.orig_func)

    def tuner(self, *args: Any, **kwargs: Any) -> AutoTuner:
        """The `AutoTuner` for these arguments (not run)."""
        tuner = AutoTuner(self.jit_fn, self.configs, max_workers=self.max_workers)
        tuner.profile_args = self.profile
        tuner.do_not_specialize = self.do_not_specialize
        return tuner.set_call_args(*args, **kwargs)

    def tune(self, *args: Any, **kwargs: Any) -> AutotuneResult | None:
        """The tuning result for these arguments (memoized), or None when they give a tuned
        parameter themselves (then there is nothing to tune)."""
        tuner = self.tuner(*args, **kwargs)
        configs = tuner.resolve_configs(self.jit_fn, args, kwargs)
        tuner.configs = configs
        tuned = {k for config in configs for k in config if k not in RESERVED_CONFIG_KEYS}
        bound = _bind(self.jit_fn.orig_func, args, kwargs)
        if tuned & set(bound):
            return None
        memo = self._memo_key(bound)
        result = self._tuner_cache.get(memo) if memo is not None else None
        if result is None:
            result = tuner.run(early_stop=self.early_stop, early_stop_factor=self.early_stop_factor)
            if memo is not None:
                self._tuner_cache[memo] = result
        return result

    def compile(self, *args: Any, **kwargs: Any) -> Any:
        """The best kernel for these arguments (tuning first if needed); with a tuned
        parameter given, the kernel for exactly these arguments (kept under their call key)."""
        result = self.tune(*args, **kwargs)
        if result is not None:
            return result.kernel
        memo = self._memo_key(_bind(self.jit_fn.orig_func, args, kwargs))
        kernel = self._tuner_cache.get(memo) if memo is not None else None
        if kernel is None:
            kernel = self.jit_fn.compile(*args, **kwargs)
            if memo is not None:
                self._tuner_cache[memo] = kernel
        return kernel

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self.jit_fn.is_eager:
            return self.compile(*args, **kwargs)
        result = self.tune(*args, **kwargs)
        if result is None:
            return self.jit_fn(*args, **kwargs)
        return _run_with(result.kernel, self.jit_fn.orig_func, args, kwargs)

    def get_tir(self, *args: Any, **kwargs: Any) -> Any:
        return self.jit_fn.get_tir(*args, **kwargs)

    def _memo_key(self, bound: dict[str, Any]) -> str | None:
        try:
            shared = {k: v for k, v in bound.items() if k not in self.do_not_specialize}
            return json.dumps(stable_value(shared), sort_keys=True)
        except UnstableValue:
            return None

    def __repr__(self) -> str:
        return f"<AutotunedFunction {getattr(self.jit_fn.orig_func, '__qualname__', 'kernel')}, {len(self._tuner_cache)} tuned>"


def _run_with(kernel: Any, func: Callable, args: tuple, kwargs: dict[str, Any]) -> Any:
    """Run `kernel` on the tensors and scalars of an eager-style call, found by parameter name."""
    given = _bind(func, args, kwargs)
    meta = kernel.meta
    n_user = len(meta.params) - len(meta.symbols)
    names = [p.name for i, p in enumerate(meta.params[:n_user]) if i not in meta.out_idx]
    missing = [n for n in names if n not in given]
    if missing:
        raise TypeError(f"{func.__qualname__}: missing argument(s) {', '.join(missing)}; to get the tuned kernel "
                        f"without running it use {func.__name__}.compile(...)")
    return kernel(*(given[n] for n in names))


def autotune(func: Callable | None = None, *, configs: Any, warmup: int = 25, rep: int = 100, timeout: float = 100,
             supply_type: TensorSupplyType = TensorSupplyType.Auto, ref_prog: Callable | None = None,
             supply_prog: Callable | None = None, rtol: float = 1e-2, atol: float = 1e-2,
             max_mismatched_ratio: float = 0.01, skip_check: bool = False, manual_check_prog: Callable | None = None,
             cache_input_tensors: bool = False, do_not_specialize: Sequence[str] | None = None,
             early_stop: bool = False, early_stop_factor: float = 2.0, backend: str = "event",
             out_idx: int | Sequence[int] | None = None, target: Any = None,
             pass_configs: dict[str, Any] | None = None, max_workers: int | None = None):
    """Decorate a `@tilelang.jit` function (or a plain function returning a `T.prim_func`,
    then with `out_idx`, `target`, `pass_configs` here) with a tuning space.

    `configs`: a list of dicts of parameter values, or a callable returning one from the
    function's other arguments. `warmup` / `rep`: untimed / timed calls per candidate.
    `timeout`: seconds per candidate to compile, and again to check and time. The check and
    input options are `ProfileArgs`'s; `do_not_specialize` names arguments left out of the
    tuning key (tuned once for all their values); `early_stop` stops timing a candidate whose
    first estimate exceeds `early_stop_factor` times the best so far; `max_workers` caps the
    compile processes. See `AutoTuner` for what a run does.
    """
    profile = ProfileArgs(warmup, rep, timeout, supply_type, ref_prog, supply_prog, rtol, atol, max_mismatched_ratio,
                          skip_check, manual_check_prog, cache_input_tensors, backend)

    def decorate(fn: Callable) -> AutotunedFunction:
        return AutotunedFunction(_as_jit_function(fn, out_idx, target, pass_configs), configs, profile,
                                 do_not_specialize=do_not_specialize or (), early_stop=early_stop,
                                 early_stop_factor=early_stop_factor, max_workers=max_workers)

    return decorate(func) if func is not None else decorate


def _as_jit_function(fn: Any, out_idx: Any, target: Any, pass_configs: Any) -> Any:
    from ..jit.function import JITFunction

    if isinstance(fn, JITFunction):
        given = [name for name, value in (("out_idx", out_idx), ("target", target), ("pass_configs", pass_configs))
                 if value is not None]
        if given:
            raise TypeError(f"autotune({', '.join(given)}=...) on a @tilelang.jit function: give them to "
                            f"@tilelang.jit instead (they are for a plain function returning a T.prim_func)")
        jit_fn = fn
    elif callable(fn) and not hasattr(fn, "script"):
        jit_fn = JITFunction(fn, out_idx=out_idx, target=target, pass_configs=pass_configs)
    else:
        raise TypeError(f"@autotune decorates a @tilelang.jit function (or a function returning a T.prim_func), "
                        f"got {type(fn).__name__}")
    if jit_fn.is_prim_func:
        raise TypeError("@autotune on a T.prim_func: there is nothing to tune; decorate the function that builds it "
                        "from the tuned parameters")
    return jit_fn
