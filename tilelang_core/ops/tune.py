"""`tune`: find the fastest config of an operator for one problem on one target with the
autotuner, and keep it, so every later call of that problem there (in this process or a
later one) runs with it.

The candidates are the operator's table config with each combination of its `tune_space`
values; each is checked against the table config's kernel on the call's own inputs and timed
on the call's device (`tilelang_core.autotuner.AutoTuner`: parallel compiles, results on disk).
"""
from __future__ import annotations

import itertools
from typing import Any

from .launch import OpError, capture, pass_configs, store_tuned
from .registry import get, resolve_config

__all__ = ["tune", "tuning_candidate"]


def tuning_candidate(op_name: str, problem: tuple, base: tuple, **changes: Any):
    """The `T.prim_func` of operator `op_name` for `problem` (its items) with config `base`
    (its items) updated by `changes`: the function the autotuner compiles per candidate."""
    op = get(op_name)
    config = {**dict(base), **changes}
    return op.kernels[config["kernel"]](dict(problem), config)


def _candidates(op, base: dict, caps, limit: int) -> list[dict[str, Any]]:
    """Each combination of the tuning space's values for the keys this config has (thread
    counts only on SIMT targets, where they matter)."""
    warp_size, max_threads = caps.warp_size, caps.max_threads_per_block
    simt = caps.execution_model == "simt"
    keys = [k for k in op.tune_space if k in base or (k == "warps" and simt and "threads" in base)]
    out: list[dict[str, Any]] = [{}]  # the table's own config: tuning never keeps a slower one
    for values in itertools.product(*(op.tune_space[k] for k in keys)):
        changes = dict(zip(keys, values))
        if "warps" in changes:
            threads = changes.pop("warps") * warp_size
            if threads > max_threads:
                continue
            changes["threads"] = threads
        if changes and changes != {k: base.get(k) for k in changes}:
            out.append(changes)
    return out[:limit]


def tune(name: str, *args: Any, warmup: int = 3, rep: int = 20, max_candidates: int = 64, **kwargs: Any):
    """Tune operator `name` for the problem of the call `tilelang_core.ops.<name>(*args,
    **kwargs)` on the target that call runs on; keep the best config and return it.

    :returns: the config later calls of this problem on this target use.
    """
    from .. import ops
    from ..autotuner import AutoTuner
    from ..jit.api import compile as compile_kernel

    op = get(name)
    call = getattr(ops, name)
    rec = capture(call, *args, **kwargs)
    base, _ = resolve_config(op, rec.target, rec.problem)
    if not isinstance(base["kernel"], str):
        raise OpError(f"tune {name}: the backend of {rec.target} ships its own kernel for it "
                      f"(tilelang_op_config); tune that kernel with the autotuner directly")
    caps = rec.target.capabilities
    configs = _candidates(op, base, caps, max_candidates)
    if not configs:
        raise OpError(f"tune {name}: the operator has no tuning space on {rec.target}")
    inputs = list(rec.inputs)
    reference = compile_kernel(op.kernels[base["kernel"]](rec.problem, base), out_idx=list(op.outputs),
                               target=rec.target, pass_configs=pass_configs(base))
    problem_items = tuple(sorted(rec.problem.items()))
    base_items = tuple(sorted(base.items()))
    result = (AutoTuner(tuning_candidate, configs)
              .set_compile_args(out_idx=list(op.outputs), target=rec.target, pass_configs=pass_configs(base))
              .set_profile_args(warmup=warmup, rep=rep, supply_prog=lambda params: inputs,
                                ref_prog=lambda *ins: reference(*ins))
              .set_call_args(name, problem_items, base_items)
              .run())
    # the winner's values of every key tuned (the table's own when it won), kept as tuned
    chosen = {**base, **result.config}
    best = {k: chosen[k] for k in (*op.tune_space, "threads")
            if k in chosen and (k in op.config_keys or k == "threads")}
    store_tuned(name, rec.target, rec.problem, best)
    return {**base, **best}
