"""Compile errors that point at the line of the user's kernel."""
from __future__ import annotations

import linecache

__all__ = ["TileLangCompileError", "CapabilityError", "LowerAgain", "format_source"]


def format_source(source: tuple[str, int] | None) -> str:
    """`  file:line\n    <the line>` for a (file, line) pair, or "" when unknown."""
    if not source:
        return ""
    path, line = source
    text = linecache.getline(path, line).rstrip()
    out = f"\n  at {path}:{line}"
    if text:
        out += f"\n    {text.strip()}"
    return out


class TileLangCompileError(ValueError):
    """A kernel the compiler cannot accept; the message names the line and the fix."""

    def __init__(self, message: str, source: tuple[str, int] | None = None) -> None:
        self.source = source
        self.bare_message = message
        super().__init__(message + format_source(source))


class CapabilityError(TileLangCompileError):
    """The kernel needs a capability the target does not declare."""


class LowerAgain(Exception):
    """Raised by a pass that cannot take a program in the form an option chose (say warp
    specialization) but knows the form that can: `lower()` runs the pipeline again from the
    start with `changes` applied to the compile options (`dataclasses.replace`) and records
    `reason`, which `Kernel.explain()` shows. Never a refusal of a program another form runs."""

    def __init__(self, reason: str, **changes) -> None:
        super().__init__(reason)
        self.reason = reason
        self.changes = changes
