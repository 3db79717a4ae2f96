"""Small names TileLang exports at its top level: `cdiv`, `next_power_of_2`, `DataType`, `tvm`,
`set_log_level` and `logger` (tilelang-core's root logger, whose level it sets).

`cdiv` and `next_power_of_2` are TileLang's `tilelang.math`. `DataType` and `tvm` are the
apache-tvm we compile with, imported on first access (importing `tilelang_core` stays cheap).
"""
from __future__ import annotations

import importlib
import logging
import numbers
from typing import Any

__all__ = ["cdiv", "next_power_of_2", "DataType", "tvm", "set_log_level", "logger"]

logger = logging.getLogger("tilelang_core")


def cdiv(a: Any, b: Any) -> Any:
    """`a / b` rounded up, for non-negative `a` and positive `b`: Python ints, or TIR
    expressions (then the result is an expression, as with `T.ceildiv`)."""
    if isinstance(b, numbers.Integral) and b <= 0:
        raise ValueError(f"cdiv: the divisor b must be positive, got {b}")
    return (a + b - 1) // b


def next_power_of_2(x: int) -> int:
    """The smallest power of two >= `x`, for a positive int `x` (1 for 1, 64 for 33)."""
    if not isinstance(x, numbers.Integral) or isinstance(x, bool) or x < 1:
        raise ValueError(f"next_power_of_2: x must be a positive int, got {x!r}")
    return 1 << (int(x) - 1).bit_length()


_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def set_log_level(level: str | int) -> None:
    """Set the level of tilelang-core's loggers (`logging.getLogger("tilelang_core")` and
    those below it): a level name ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL", any
    case) or a `logging` level number."""
    if isinstance(level, str):
        if level.upper() not in _LEVELS:
            raise ValueError(f"set_log_level: unknown level {level!r}; use one of {', '.join(_LEVELS)} "
                             "or a logging level number")
        level = getattr(logging, level.upper())
    elif not isinstance(level, int) or isinstance(level, bool):
        raise TypeError(f"set_log_level: level must be a level name or an int, got {type(level).__name__}")
    logger.setLevel(level)


def __getattr__(name: str) -> Any:
    if name == "tvm":
        return importlib.import_module("tvm")
    if name == "DataType":
        return importlib.import_module("tvm").DataType
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
