"""Building and compiling the candidates of a tuning run.

Each config's kernel IR is built here (`JITFunction.get_tir` with the config's values), then
compiled by up to `workers` processes at once: this process, which starts compiling at once,
and `workers - 1` compile workers (`worker.py`) that join once they have imported the
compiler. A worker compiles from the IR's text into the shared disk cache; this process then
compiles the same IR, which is a cache hit. Every candidate ends either with a kernel or
skipped with the reason (the build or the compile failed, or ran past `timeout`).
"""
from __future__ import annotations

import json
import os
import queue
import time
from dataclasses import dataclass, field
from typing import Any

from .limits import deadline, describe_error
from .param import CandidateOutcome
from .progress import TuningProgress
from .worker import CompilePool

__all__ = ["RESERVED_CONFIG_KEYS", "CandidateCompiler", "available_cores", "config_pass_configs", "config_values"]

RESERVED_CONFIG_KEYS = ("pass_configs",)  # a config may carry its own pass configs (TileLang)


def available_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def config_values(config: dict[str, Any]) -> dict[str, Any]:
    """The config's values for the function's parameters (its reserved keys left out)."""
    return {k: v for k, v in config.items() if k not in RESERVED_CONFIG_KEYS}


def config_pass_configs(base: dict[str, Any] | None, config: dict[str, Any]) -> dict[str, Any] | None:
    """The pass configs of one candidate: the function's, updated by the config's own."""
    own = config.get("pass_configs")
    if not own:
        return base
    return {**(base or {}), **own}


@dataclass
class CandidateCompiler:
    """Compiles the candidates of one run. `jit` is the `JITFunction`; `args` / `kwargs` the
    arguments every candidate shares; `target` the parsed target; `out_idx` the outputs."""

    jit: Any
    args: tuple
    kwargs: dict[str, Any]
    target: Any
    out_idx: Any
    timeout: float
    share_through_disk: bool = True  # False when the kernel cache is off: no workers
    prims: dict[int, Any] = field(default_factory=dict)
    kernels: dict[int, Any] = field(default_factory=dict)
    startup_errors: list[str] = field(default_factory=list)

    # -- building the IR ------------------------------------------------------------------------

    def build(self, outcomes: list[CandidateOutcome], bar: TuningProgress) -> None:
        """The kernel IR of every config; a config whose IR cannot be built is skipped."""
        for outcome in outcomes:
            try:
                with deadline(self.timeout, "building the kernel IR"):
                    self.prims[outcome.index] = self.jit.get_tir(*self.args, **{**self.kwargs, **config_values(outcome.config)})
            except Exception as err:
                outcome.skip("build", describe_error(err))
                bar.compiled()

    # -- compiling ------------------------------------------------------------------------------

    def compile(self, outcomes: list[CandidateOutcome], bar: TuningProgress, max_workers: int | None) -> None:
        """Compile every built candidate (see the module doc); fills `self.kernels`."""
        by_index = {o.index: o for o in outcomes}
        local = list(self.prims)
        workers = min(max_workers or available_cores(), len(self.prims))
        pool = None
        if self.share_through_disk and workers > 1:
            jobs = [self.job_for(index, prim, by_index[index].config) for index, prim in self.prims.items()]
            local = [index for index, job in zip(self.prims, jobs) if job is None]
            pool = CompilePool(workers - 1)
            for job in jobs:
                if job is not None:
                    pool.submit(job)
        pending = set(self.prims)
        try:
            while pending:
                index = local.pop(0) if local else self._take(pool)
                if index is not None:
                    self._compile_here(by_index[index], bar, from_worker=False)
                    pending.discard(index)
                    continue
                reply = self._next_reply(pool, pending)
                if reply is not None:
                    self._settle(reply, by_index[reply["id"]], bar)
                    pending.discard(reply["id"])
        finally:
            if pool is not None:
                pool.close()
                self.startup_errors = pool.startup_errors

    def job_for(self, index: int, prim: Any, config: dict[str, Any]) -> dict[str, Any] | None:
        """The worker job for a candidate, or None when its settings do not travel as JSON."""
        job = {"id": index, "text": prim.script(show_meta=True), "out_idx": self.out_idx, "target": str(self.target),
               "target_options": dict(self.target.options), "timeout": self.timeout,
               "pass_configs": config_pass_configs(self.jit.pass_configs, config),
               "compile_kwargs": {"execution_backend": self.jit.execution_backend, **self.jit.compile_kwargs}}
        try:
            json.dumps(job)
        except (TypeError, ValueError):
            return None
        return job

    @staticmethod
    def _take(pool: CompilePool | None) -> int | None:
        job = pool.take() if pool is not None else None
        return job["id"] if job is not None else None

    def _next_reply(self, pool: CompilePool | None, pending: set[int]) -> dict[str, Any] | None:
        if pool is None:
            raise RuntimeError(f"autotuner: candidates {sorted(pending)} have no compile job left (internal error)")
        try:
            return pool.results.get(timeout=0.05)
        except queue.Empty:
            return None

    def _settle(self, reply: dict[str, Any], outcome: CandidateOutcome, bar: TuningProgress) -> None:
        """A worker's reply: a kernel it built is loaded here (a disk hit when the IR text read
        back exactly); a failure to compile is the candidate's; a failure to read the job is
        not, so this process compiles that one itself."""
        if reply["ok"] or reply["stage"] != "compile":
            self._compile_here(outcome, bar, from_worker=bool(reply["ok"]))
            if outcome.compiled_by == "worker":
                outcome.compile_seconds = reply["seconds"]
            return
        outcome.skip("compile", reply["error"])
        bar.compiled()

    def _compile_here(self, outcome: CandidateOutcome, bar: TuningProgress, from_worker: bool) -> None:
        """Compile one candidate in this process: a disk-cache hit after a worker built it."""
        from ..jit.api import compile as compile_prim

        start = time.perf_counter()
        try:
            with deadline(self.timeout, "compiling"):
                kernel = compile_prim(self.prims[outcome.index], out_idx=self.out_idx, target=self.target,
                                      pass_configs=config_pass_configs(self.jit.pass_configs, outcome.config),
                                      execution_backend=self.jit.execution_backend, verbose=self.jit.verbose,
                                      **self.jit.compile_kwargs)
        except Exception as err:
            outcome.skip("compile", describe_error(err))
        else:
            self.kernels[outcome.index] = kernel
            outcome.compiled_by = "worker" if from_worker and kernel.cache_hit else "tuner"
            outcome.compile_seconds = time.perf_counter() - start
        bar.compiled()
