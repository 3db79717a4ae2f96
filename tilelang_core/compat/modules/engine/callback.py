"""TileLang's `tilelang.engine.callback`: post-processing callbacks on generated device source
(`tilelang_core.jit.postproc`), under TileLang's names for every target kind a backend declares:

    register_<kind>_postproc(func, override=True)
    @register_<kind>_postproc_callback            # or (), or (override=False)

`<kind>` is any spelling the installed backends accept for a target (TileLang's programs say
`cuda` and `hip`); `func(source, target)` returns the source the device compiler builds. A
kernel compiled while a callback is registered for its kind bypasses the kernel cache.
TileLang's `register_c_postproc` edits its host C wrapper, which tilelang-core does not
generate: a kind no backend declares is a clear error naming the ones that exist.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from ....jit.postproc import register_postproc

__all__: list[str] = []

_NAME = re.compile(r"register_(\w+?)_postproc(_callback)?")


def _kind(spelling: str) -> str:
    from ....plugin import get_plugin_manager

    return get_plugin_manager().parse_target(spelling).kind


def _register(spelling: str) -> Callable[..., None]:
    def register(func: Callable[[str, Any], str], override: bool = True) -> None:
        register_postproc(_kind(spelling), func, override)

    register.__name__ = f"register_{spelling}_postproc"
    return register


def _decorator(spelling: str) -> Callable[..., Any]:
    def decorator(func: Callable | bool | None = None, override: bool = True) -> Any:
        if callable(func):
            register_postproc(_kind(spelling), func, override)
            return func
        if func is None or isinstance(func, bool):
            keep = func if isinstance(func, bool) else override

            def wrap(fn: Callable[[str, Any], str]) -> Callable[[str, Any], str]:
                register_postproc(_kind(spelling), fn, keep)
                return fn

            return wrap
        raise TypeError(f"@register_{spelling}_postproc_callback takes a function, or () / (override=...), "
                        f"got {type(func).__name__}")

    decorator.__name__ = f"register_{spelling}_postproc_callback"
    return decorator


def __getattr__(name: str) -> Any:
    match = _NAME.fullmatch(name)
    if match is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return (_decorator if match.group(2) else _register)(match.group(1))
