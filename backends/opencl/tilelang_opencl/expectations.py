"""Known gaps of the OpenCL backend, as strict xfails with reasons (conformance suite)."""
from __future__ import annotations

__all__ = ["expectations"]

# case name -> reason, for every arch
_ALL: dict[str, str] = {}


def expectations(arch: str) -> dict[str, str]:
    return dict(_ALL)
