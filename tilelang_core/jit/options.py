"""Compile options: frozen, hashable, strict (an unknown key is an error listing the valid ones)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["CompileOptions", "PassConfigKey", "OptionsError"]


class OptionsError(ValueError):
    """An unknown or ill-typed compile option."""


class PassConfigKey:
    """TileLang's pass-config names, accepted as keys of `pass_configs`."""

    TL_DISABLE_TMA_LOWER = "tl.disable_tma_lower"
    TL_DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
    TL_DISABLE_FAST_MATH = "tl.disable_fast_math"
    TL_ENABLE_FAST_MATH = "tl.enable_fast_math"
    TL_DEBUG_DUMP = "tl.debug_dump"


@dataclass(frozen=True)
class CompileOptions:
    """Everything besides the program and the target that changes the generated binary."""

    fast_math: bool = False
    disable_tma: bool = False
    disable_warp_specialized: bool = False
    debug_dump: bool = False
    extra_flags: tuple[str, ...] = ()

    _ALIASES = {
        PassConfigKey.TL_DISABLE_TMA_LOWER: "disable_tma",
        PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: "disable_warp_specialized",
        PassConfigKey.TL_ENABLE_FAST_MATH: "fast_math",
        PassConfigKey.TL_DEBUG_DUMP: "debug_dump",
    }

    @classmethod
    def from_pass_configs(cls, configs: Mapping[str, Any] | None) -> "CompileOptions":
        if not configs:
            return cls()
        fields = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for key, value in configs.items():
            if key == PassConfigKey.TL_DISABLE_FAST_MATH:
                values["fast_math"] = not bool(value)
                continue
            name = cls._ALIASES.get(key, key)
            if name not in fields:
                valid = sorted(fields | set(cls._ALIASES) | {PassConfigKey.TL_DISABLE_FAST_MATH})
                raise OptionsError(f"unknown pass config {key!r}; valid keys: {', '.join(valid)}")
            values[name] = tuple(value) if name == "extra_flags" else bool(value)
        return cls(**values)

    def key(self) -> str:
        return repr(sorted(dataclasses.asdict(self).items()))
