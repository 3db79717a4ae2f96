"""The operator registry: each operator's kernels, its config table, and how a config is chosen.

An `Operator` is data: named kernel builders (each a function `build(problem, config)` that
returns a `T.prim_func` specialised to one problem), a config table (`ConfigRule`s, the first
whose condition the target's capabilities meet gives the defaults) and a reference
implementation. Which kernel and which tile sizes run on a target is decided here, in this
order, each step overriding the one before:

1. the op's config table, read against the target's capabilities (never its name);
2. the owning backend's `tilelang_op_config` hook (a vendor's own table or kernel);
3. a config found by `tilelang_core.ops.tune` for this problem on this target (kept on disk).

A config's `warps` becomes `threads` (warps x the target's warp size, at most its block limit),
and `max_warps` becomes `max_threads`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

__all__ = ["ConfigRule", "Operator", "OpConfigError", "register", "operators", "get", "resolve_config",
           "rule_matches"]


class OpConfigError(ValueError):
    """A config (from a table, a backend or a tuning run) that the operator cannot take."""


@dataclass(frozen=True)
class ConfigRule:
    """One row of a config table: `config` applies where `when` holds for the target.

    `when` is "any"; an execution model ("simt", "block-serial"); a capability name the table
    declares (`Capabilities.has`: a matrix family such as "wgmma", a copy engine, a dtype, a
    feature); or "warp_size=N".
    """

    when: str
    config: Mapping[str, Any]


@dataclass(frozen=True)
class Operator:
    """One ready operator: kernels, config table, reference, and the candidate space to tune.

    `outputs` are the kernel parameters allocated per call (`out_idx`); `example` is a
    representative problem (what `tilelang ops` shows configs for, and the compile tests build).
    """

    name: str
    summary: str
    kernels: Mapping[str, Callable]
    table: tuple[ConfigRule, ...]
    reference: Callable
    outputs: tuple[int, ...]
    example: Mapping[str, Any]
    tune_space: Mapping[str, tuple] = field(default_factory=dict)

    @property
    def config_keys(self) -> frozenset[str]:
        keys = {"kernel", "threads"}
        for rule in self.table:
            keys.update(rule.config)
        return frozenset(keys)


_OPERATORS: dict[str, Operator] = {}


def register(op: Operator) -> Operator:
    """Add `op` to the registry (a second operator of the same name is an error)."""
    if op.name in _OPERATORS:
        raise ValueError(f"operator {op.name!r} is registered twice")
    for rule in op.table:
        kernel = rule.config.get("kernel")
        if kernel is not None and kernel not in op.kernels:
            raise ValueError(f"operator {op.name!r}: table rule {rule.when!r} names kernel {kernel!r}, "
                             f"which is not one of {sorted(op.kernels)}")
    _OPERATORS[op.name] = op
    return op


def operators() -> dict[str, Operator]:
    """Every registered operator, by name (importing `tilelang_core.ops` registers them)."""
    return dict(_OPERATORS)


def get(name: str) -> Operator:
    try:
        return _OPERATORS[name]
    except KeyError:
        raise KeyError(f"no operator {name!r}; known: {', '.join(sorted(_OPERATORS))}") from None


def rule_matches(when: str, caps) -> bool:
    """Whether a `ConfigRule.when` holds for a capability table."""
    if when == "any":
        return True
    if when in ("simt", "block-serial"):
        return caps.execution_model == when
    if when.startswith("warp_size="):
        return caps.warp_size == int(when.partition("=")[2])
    return caps.has(when)


def _check_keys(op: Operator, config: Mapping[str, Any], where: str) -> None:
    unknown = sorted(set(config) - op.config_keys)
    if unknown:
        raise OpConfigError(f"{where} gives operator {op.name!r} unknown config keys {unknown}; "
                            f"valid keys: {sorted(op.config_keys)}")
    kernel = config.get("kernel")
    if kernel is not None and not callable(kernel) and kernel not in op.kernels:
        raise OpConfigError(f"{where} names kernel {kernel!r} for operator {op.name!r}; "
                            f"its kernels: {sorted(op.kernels)} (or pass a callable builder)")


def resolve_config(op: Operator, target, problem: Mapping[str, Any], tuned: Mapping | None = None,
                   manager=None) -> tuple[dict[str, Any], str]:
    """The config `op` runs with on `target` for `problem`, and where it came from.

    :returns: (config, source) where config has "kernel" (a name or a builder) and the
        kernel's tile parameters, with "warps" turned into "threads"; source says which steps
        contributed ("table[wgmma]", "+backend", "+tuned").
    """
    caps = target.capabilities
    config: dict[str, Any] = {}
    source = "table[none]"
    for rule in op.table:
        if rule_matches(rule.when, caps):
            config = dict(rule.config)
            source = f"table[{rule.when}]"
            break
    if manager is None:
        from ..plugin import get_plugin_manager

        manager = get_plugin_manager()
    override = manager.hook_for(target, "tilelang_op_config")(target=target, op=op.name, problem=dict(problem),
                                                               config=dict(config))
    if override:
        _check_keys(op, override, f"the backend of {target} (tilelang_op_config)")
        config.update(override)
        source += "+backend"
    if tuned:
        _check_keys(op, tuned, "a tuned config")
        config.update(tuned)
        source += "+tuned"
    config.setdefault("kernel", next(iter(op.kernels)))
    for key in [k for k in config if k.endswith("warps")]:
        config[key[:-5] + "threads"] = min(int(config.pop(key)) * caps.warp_size, caps.max_threads_per_block)
    return config, source

