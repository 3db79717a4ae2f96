"""`AutoTuner`: pick the fastest config of a kernel function (TileLang's class and names).

    result = (AutoTuner.from_kernel(kernel=matmul_factory, configs=configs)
              .set_compile_args(out_idx=[-1], target="auto")
              .set_profile_args(ref_prog=ref_program, supply_type=tilelang.TensorSupplyType.Auto)
              .run(warmup=3, rep=20))
    result.config, result.latency, result.kernel

`fn` is a `@tilelang.jit` function or a plain function returning a `T.prim_func`; each config
is a dict of keyword arguments for it (plus, optionally, `"pass_configs"`), and `configs` may
be a callable returning the list from the function's other arguments.

A run, in order:
1. the best config of an earlier identical run is looked up, in this process and then on
   disk (see `cache.py` for what "identical" covers); a hit returns at once;
2. each config's kernel IR is built, then compiled by this process and compile workers in
   parallel (see `candidates.py`); a config that fails either way (Python error, a resource
   the target lacks such as shared memory or threads per block, a toolchain error, the
   `timeout`) is skipped with the reason;
3. each compiled candidate is checked against `ref_prog` (unless `skip_check`) and timed
   with its Profiler (`warmup`, `rep` calls), one at a time on the device; a wrong result or
   a failed run skips it;
4. the fastest one wins; a summary names it and every skipped config with its reason; if
   none is left, `AutotuneError` lists them all. The result is stored on disk.

Compile here, time there: on a machine whose device has no compiler (the runtime half
only), the same split applies as for `kernel.export` / `tilelang_core.load`: compile every
candidate on a machine with the compiler (steps 1-2, which fill the kernel cache), export
them, and time the exported kernels on the device machine with their Profilers (step 3).
This class runs both halves in one process; it does not yet ship candidates between machines.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable

from ..utils.tensor import TensorSupplyType
from .bench import CandidateBench, InputsNeeded
from .cache import TuningCache, tuning_key
from .candidates import RESERVED_CONFIG_KEYS, CandidateCompiler
from .capture import get_autotune_inputs
from .limits import deadline, describe_error
from .param import AutotuneError, AutotuneResult, CandidateOutcome, CompileArgs, ProfileArgs
from .progress import TuningProgress, make_console, print_summary

__all__ = ["AutoTuner"]

def disk_cache_enabled() -> bool:
    """Whether tuning results may be read from and written to disk, and compile workers
    share kernels through it: off after `tilelang.disable_cache()`."""
    from ..compat.cache_switch import is_cache_enabled

    return is_cache_enabled()


class AutoTuner:
    """Tunes `fn` over `configs` (see the module doc). Chain `set_compile_args` and
    `set_profile_args`, then `run()`; `max_workers` caps the compile processes (default: the
    CPU cores this process may use)."""

    # results of this process's runs, by tuning key
    _memory: dict[str, AutotuneResult] = {}

    def __init__(self, fn: Callable, configs: list[dict[str, Any]] | Callable[..., list[dict[str, Any]]],
                 *, max_workers: int | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"AutoTuner(fn=...) takes a @tilelang.jit function or a function returning a T.prim_func, "
                            f"got {type(fn).__name__}")
        if max_workers is not None and (isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1):
            raise ValueError(f"max_workers must be an int >= 1 (compile processes), got {max_workers!r}")
        self.fn = fn
        self.configs = configs
        self.max_workers = max_workers
        self.compile_args: CompileArgs | None = None
        self.profile_args = ProfileArgs()
        self.call_args: tuple[tuple, dict[str, Any]] = ((), {})
        self.do_not_specialize: tuple[str, ...] = ()

    @classmethod
    def from_kernel(cls, kernel: Callable, configs: Any) -> "AutoTuner":
        """`AutoTuner(kernel, configs)`, TileLang's spelling."""
        return cls(kernel, configs)

    def set_compile_args(self, out_idx: int | list[int] | None = None, target: Any = None,
                         execution_backend: str | None = None, target_host: Any = None,
                         verbose: bool | None = None, pass_configs: dict[str, Any] | None = None) -> "AutoTuner":
        """How candidates compile (`tilelang.compile`'s keywords); None keeps the value of the
        `@tilelang.jit` function being tuned (or `compile`'s default)."""
        self.compile_args = CompileArgs(out_idx, target, execution_backend, target_host, verbose, pass_configs)
        return self

    def set_profile_args(self, warmup: int = 25, rep: int = 100, timeout: float = 30,
                         supply_type: TensorSupplyType = TensorSupplyType.Auto, ref_prog: Callable | None = None,
                         supply_prog: Callable | None = None, rtol: float = 1e-2, atol: float = 1e-2,
                         max_mismatched_ratio: float = 0.01, skip_check: bool = False,
                         manual_check_prog: Callable | None = None, cache_input_tensors: bool = False,
                         backend: str = "event") -> "AutoTuner":
        """How candidates are checked and timed (see `ProfileArgs`)."""
        self.profile_args = ProfileArgs(warmup, rep, timeout, supply_type, ref_prog, supply_prog, rtol, atol,
                                        max_mismatched_ratio, skip_check, manual_check_prog, cache_input_tensors, backend)
        return self

    def set_call_args(self, *args: Any, **kwargs: Any) -> "AutoTuner":
        """The arguments every candidate shares (the function's untuned parameters)."""
        self.call_args = (args, kwargs)
        return self

    # -- the run ------------------------------------------------------------------------------

    def run(self, warmup: int | None = None, rep: int | None = None, timeout: float | None = None, *,
            early_stop: bool = False, early_stop_factor: float = 2.0,
            enable_grouped_compile: bool | None = None, group_compile_size: int | None = None) -> AutotuneResult:
        """Tune (see the module doc). `warmup`, `rep` and `timeout` given here replace those of
        `set_profile_args`. With `early_stop`, a candidate whose first estimate is above
        `early_stop_factor` times the best so far is not timed further. TileLang's
        `enable_grouped_compile` / `group_compile_size` (batching candidates into one module)
        are accepted and change nothing: candidates here always compile in parallel processes."""
        if early_stop and not early_stop_factor >= 1.0:
            raise ValueError(f"early_stop_factor must be >= 1.0, got {early_stop_factor!r}")
        profile = dataclasses.replace(self.profile_args, **{k: v for k, v in
                                      {"warmup": warmup, "rep": rep, "timeout": timeout}.items() if v is not None})
        jit = self._jit_function()
        args, kwargs = self.call_args
        configs = self.resolve_configs(jit, args, kwargs)
        target = _parse_target(jit.target)
        out_idx = _out_idx_of(jit)
        key = self._key(jit, args, kwargs, configs, target, out_idx, profile, early_stop_factor if early_stop else None)
        cached = self._lookup(key, configs)
        if cached is not None:
            return cached

        name = getattr(jit.orig_func, "__qualname__", "kernel")
        outcomes = [CandidateOutcome(i, config) for i, config in enumerate(configs)]
        compiler = CandidateCompiler(jit, args, kwargs, target, out_idx, profile.timeout,
                                     share_through_disk=disk_cache_enabled())
        bench = CandidateBench(profile, early_stop_factor if early_stop else None)
        console = make_console()
        with TuningProgress(name, len(configs), console) as bar:
            compiler.build(outcomes, bar)
            compiler.compile(outcomes, bar, self.max_workers)
            bar.skip_benchmarks(len(configs) - len(compiler.kernels))
            for index in sorted(compiler.kernels):
                _measure(bench, compiler.kernels[index], outcomes[index], profile.timeout)
                bar.benched(bench.best_latency)
        if compiler.startup_errors:
            console.print(f"autotune {name}: compile workers did not start, so this process compiled the candidates: "
                          f"{compiler.startup_errors[0]}", highlight=False, soft_wrap=True)
        finished = [o for o in outcomes if o.status == "ok"]
        best = min(finished, key=lambda o: o.latency) if finished else None
        print_summary(console, name, outcomes, best, bench.ref_latency)
        if best is None:
            reasons = "\n".join(f"  [{o.index}] {o.config}: {o.reason}" for o in outcomes)
            raise AutotuneError(f"autotune {name}: no config survived ({len(outcomes)} tried)\n{reasons}")
        result = self._finish(compiler, best, outcomes, bench.ref_latency)
        if key is not None:
            AutoTuner._memory[key] = result
            if disk_cache_enabled():
                TuningCache().save(key, result, best.index)
        return result

    __call__ = run

    # -- pieces ---------------------------------------------------------------------------------

    def _jit_function(self):
        """The `JITFunction` to tune: `fn` itself, or one made with the compile args."""
        from ..jit.function import JITFunction

        options: dict[str, Any] = {}
        func = self.fn
        if isinstance(self.fn, JITFunction):
            if self.compile_args is None:
                return self.fn
            func = self.fn.orig_func
            options = {"out_idx": self.fn.out_idx, "target": self.fn.target, "pass_configs": self.fn.pass_configs,
                       "execution_backend": self.fn.execution_backend, "verbose": self.fn.verbose,
                       **self.fn.compile_kwargs}
        args = self.compile_args or CompileArgs()
        for field in dataclasses.fields(args):
            value = getattr(args, field.name)
            if value is not None:
                options[field.name] = value
        jit = JITFunction(func, **options)
        if jit.is_prim_func:
            raise TypeError("autotune: a T.prim_func has nothing to tune; decorate the function that builds it "
                            "from the tuned parameters")
        return jit

    def resolve_configs(self, jit: Any, args: tuple, kwargs: dict[str, Any]) -> list[dict[str, Any]]:
        """The configs as a list of dicts, checked against the function's parameters."""
        configs = self.configs(*args, **kwargs) if callable(self.configs) else self.configs
        if isinstance(configs, dict) or not isinstance(configs, (list, tuple)):
            raise TypeError(f"autotune configs= must be a list of dicts (or a callable returning one), "
                            f"got {type(configs).__name__}")
        configs = list(configs)
        if not configs:
            raise ValueError("autotune configs= is empty: give at least one dict of parameter values")
        params = inspect.signature(jit.orig_func).parameters
        open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        for i, config in enumerate(configs):
            if not isinstance(config, dict):
                raise TypeError(f"autotune configs[{i}] must be a dict of parameter values, got {type(config).__name__}")
            unknown = [k for k in config if k not in params and k not in RESERVED_CONFIG_KEYS]
            if unknown and not open_ended:
                raise ValueError(f"autotune configs[{i}] names {', '.join(map(repr, unknown))}, which "
                                 f"{jit.orig_func.__qualname__} does not take; its parameters: {', '.join(params)}")
        return configs

    def _key(self, jit: Any, args: tuple, kwargs: dict[str, Any], configs: list[dict[str, Any]], target: Any,
             out_idx: Any, profile: ProfileArgs, early_stop_factor: float | None) -> str | None:
        from ..jit.options import CompileOptions
        from ..plugin import hooks_for

        if not disk_cache_enabled():
            return None
        skip = set(self.do_not_specialize)
        bound = _bind(jit.orig_func, args, kwargs)
        shared = {k: v for k, v in bound.items() if k not in skip}
        compile_kwargs = {k: v for k, v in jit.compile_kwargs.items() if k != "debug_root_path"}
        return tuning_key({
            "function": jit.orig_func,
            "arguments": shared,
            "configs": configs,
            "target": [str(target), target.options],
            "backend": hooks_for(target).cache_key(CompileOptions.from_pass_configs(jit.pass_configs)),
            "compile": [out_idx, jit.pass_configs, compile_kwargs],
            "profile": [[getattr(profile, f.name) for f in dataclasses.fields(profile)], early_stop_factor],
            "inputs": get_autotune_inputs(),
        })

    def _lookup(self, key: str | None, configs: list[dict[str, Any]]) -> AutotuneResult | None:
        if key is None:
            return None
        hit = AutoTuner._memory.get(key)
        if hit is None:
            hit = TuningCache().load(key, configs)
            if hit is not None:
                AutoTuner._memory[key] = hit
        return hit

    @staticmethod
    def _finish(compiler: CandidateCompiler, best: CandidateOutcome, outcomes: list[CandidateOutcome],
                ref_latency: float | None) -> AutotuneResult:
        kernel = compiler.kernels[best.index]
        kernel.config, kernel.latency, kernel.ref_latency = best.config, best.latency, ref_latency
        return AutotuneResult(latency=best.latency, config=best.config, ref_latency=ref_latency,
                              libcode=kernel.get_kernel_source(), func=compiler.prims[best.index], kernel=kernel,
                              outcomes=tuple(outcomes))


def _measure(bench: CandidateBench, kernel: Any, outcome: CandidateOutcome, timeout: float) -> None:
    try:
        with deadline(timeout, "checking and timing"):
            outcome.latency = bench.measure(kernel)
    except InputsNeeded:
        raise
    except AssertionError as err:
        outcome.skip("check", describe_error(err))
    except Exception as err:
        outcome.skip("benchmark", describe_error(err))
    else:
        outcome.status = "ok"


def _parse_target(target: Any) -> Any:
    from ..plugin import get_plugin_manager

    return get_plugin_manager().parse_target(target)


def _out_idx_of(jit: Any) -> Any:
    """The outputs of the kernels `jit` builds: its `out_idx`, or for an eager-style function
    the positions of its returned `T.empty` tensors (the JIT object keeps those privately)."""
    if jit.is_eager:
        return list(jit._eager.out_idx) or None
    return jit.out_idx


def _bind(func: Callable, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments by parameter name (keywords the signature lacks, such as an eager
    function's `T.const` values, kept under their own names)."""
    signature = inspect.signature(func)
    known = {k: v for k, v in kwargs.items() if k in signature.parameters}
    bound = signature.bind_partial(*args, **known).arguments
    return {**bound, **{k: v for k, v in kwargs.items() if k not in known}}
