"""Keywords installed backends add to calls of the core's language (`tilelang_language_keywords`).

`T.copy(..., force_async_copy=True)` or `T.Kernel(..., producer_threads=128)` are accepted
only when a loaded backend offers the keyword; its check function validates the value and the
core records the result on the IR (`TileOp.hints` of a copy; `kernel_hints(func)` of a
kernel). Only the offering backend reads it; every other backend compiles the kernel as if
the keyword were absent (an extension steers code generation, never what a kernel computes).
"""
from __future__ import annotations

from typing import Any

__all__ = ["check_extension_keywords"]


def check_extension_keywords(call: str, given: dict[str, Any]) -> dict[str, Any]:
    """The checked values of the extension keywords `given` to `T.<call>`; a TypeError for a
    keyword no installed backend offers, the backend's own error (naming it) for a bad value."""
    if not given:
        return {}
    from tilelang_core.plugin import get_plugin_manager

    offered, withheld = get_plugin_manager().language_keywords()
    checked = {}
    for word, value in given.items():
        key = f"{call}.{word}"
        if key in withheld:
            raise TypeError(withheld[key])
        entry = offered.get(call, {}).get(word)
        if entry is None:
            known = ", ".join(sorted(offered.get(call, {}))) or "none"
            failed = f"; {withheld['']}" if "" in withheld else ""
            raise TypeError(f"T.{call}() got an unexpected keyword argument {word!r}: neither tilelang-core nor an "
                            f"installed backend defines it (keywords installed backends add to T.{call}: {known}"
                            f"{failed}); `tilelang backends` lists the installed backends")
        check, backend = entry
        try:
            checked[word] = check(value)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"T.{call}({word}={value!r}), a keyword of backend {backend!r}: {exc}") from exc
    return checked
