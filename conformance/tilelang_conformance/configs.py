"""Pass configs for a conformance run: `--pass-config KEY=VALUE`, checked by the core, given to
every case's compile, and what they switch off.

The keys are TileLang's (`tilelang_core.PassConfigKey`); `CompileOptions.from_pass_configs`
is the one place that knows them, so an unknown key gets the core's error with the valid ones.

A pass config may switch off a path the target declares: `tl.disable_wgmma` the warpgroup
matrix families, `tl.disable_tma_lower` the TMA copy engine, `tl.disable_warp_specialized`
the producer/consumer register rebalancing (`setmaxnreg`) of automatic warp specialization.
A case that probes (`claims`) a capability switched off this way is N/A, with the config as
its reason: it cannot be that capability's evidence in this run. Explicit code keeps its
meaning: a kernel that allocates barriers itself still gets them (`gemm.warp_specialized`).
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["PassConfigError", "parse_pass_configs", "compile_options", "describe", "switched_off", "disabled_claims"]

_TRUE, _FALSE = ("true", "on", "yes"), ("false", "off", "no")


class PassConfigError(ValueError):
    """A `--pass-config` that is malformed, unknown, or has a value its key cannot take."""


def _value(text: str) -> Any:
    """JSON when it parses (1, 0, true, 2.5, ["-lineinfo"]), on/off/yes/no as booleans, else the text."""
    try:
        return json.loads(text)
    except ValueError:
        low = text.strip().lower()
        return True if low in _TRUE else False if low in _FALSE else text


def _is_switch(key: str) -> bool:
    """Whether `key` turns a compile option on or off (True and False give different options)."""
    from tilelang_core.jit.options import CompileOptions

    try:
        return CompileOptions.from_pass_configs({key: True}) != CompileOptions.from_pass_configs({key: False})
    except (TypeError, ValueError):
        return False


def parse_pass_configs(items: Iterable[str]) -> dict[str, Any]:
    """`["tl.disable_wgmma=1", ...]` -> `{"tl.disable_wgmma": 1, ...}`, checked by the core.

    Raises `PassConfigError` for an item without `=`, a key given twice, a key the core does
    not know (listing the valid ones), or a switch given a value other than 0/1/true/false.
    """
    configs: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise PassConfigError(f"--pass-config {item!r}: expected KEY=VALUE, e.g. --pass-config tl.disable_wgmma=1")
        if key in configs:
            raise PassConfigError(f"--pass-config {key} is given twice ({configs[key]!r} and {text!r}); give it once")
        configs[key] = _value(text)
    compile_options(configs)
    for key, value in configs.items():
        if _is_switch(key) and not (isinstance(value, bool) or value in (0, 1)):
            raise PassConfigError(f"--pass-config {key}={value!r}: {key} is a switch; give 1, 0, true or false")
    return configs


def compile_options(configs: Mapping[str, Any] | None) -> Any:
    """The core's `CompileOptions` for `configs`; its unknown-key error becomes a `PassConfigError`."""
    from tilelang_core.jit.options import CompileOptions, OptionsError

    try:
        return CompileOptions.from_pass_configs(dict(configs or {}))
    except OptionsError as exc:
        raise PassConfigError(f"--pass-config: {exc}") from exc


def describe(configs: Mapping[str, Any] | None) -> str:
    """`tl.disable_tma_lower=1, tl.disable_wgmma=1` (sorted; JSON values), or "none"."""
    if not configs:
        return "none"
    return ", ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in sorted(configs.items()))


# CompileOptions field -> the capabilities it switches off, by what the core documents the option to
# mean (a family is named by its scope: whatever the target calls its warpgroup instructions)
_SWITCHES: dict[str, tuple[str, ...]] = {
    "disable_tma": ("tma",),
    "disable_warp_specialized": ("setmaxnreg",),
}


def switched_off(caps: Any, configs: Mapping[str, Any] | None) -> dict[str, str]:
    """The declared capabilities of `caps` that `configs` switch off, each with the config that
    does it (e.g. `{"wgmma": "tl.disable_wgmma=1"}`). Empty without configs."""
    if not configs:
        return {}
    options = compile_options(configs)
    given = {k: describe({k: v}) for k, v in configs.items()}

    def reason(field: str) -> str:
        keys = [text for key, text in given.items() if getattr(compile_options({key: configs[key]}), field)]
        return ", ".join(keys) or field

    off: dict[str, str] = {}
    if options.disable_wgmma:
        for family in caps.matrix_instructions:
            if family.scope == "warpgroup":
                off[family.family] = reason("disable_wgmma")
    for field, names in _SWITCHES.items():
        if getattr(options, field):
            off.update({n: reason(field) for n in names if caps.has(n)})
    return off


def disabled_claims(claims: Sequence[str], off: Mapping[str, str]) -> list[str]:
    """The claims of a case that are switched off, as "tma (tl.disable_tma_lower=1)"."""
    return [f"{c} ({off[c]})" for c in claims if c in off]
