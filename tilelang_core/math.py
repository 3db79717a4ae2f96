"""Integer helpers for kernel factories (TileLang's `tilelang.math`): block sizes from problem
sizes, on the host, with plain Python ints."""
from __future__ import annotations

__all__ = ["cdiv", "next_power_of_2"]


def next_power_of_2(x: int) -> int:
    """The smallest power of two at least `x` (1 for `x` <= 1)."""
    x = int(x)
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    """`a / b` rounded up, for positive `b`."""
    return -(-int(a) // int(b))
