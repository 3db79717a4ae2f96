"""Inputs, poisoned outputs, tolerances and the element-by-element check.

Host arrays are NumPy arrays; dtypes NumPy lacks (bfloat16, float8) come from `ml_dtypes`
where it is installed. Arrays travel (in `--export` directories) as their raw bits plus the
dtype name, so a machine without `ml_dtypes` can still rebuild them as torch tensors.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "FLOAT_DTYPES",
    "INT_DTYPES",
    "BITS_DTYPES",
    "numpy_dtype",
    "random_array",
    "poison_value",
    "tolerance",
    "to_bits",
    "from_bits",
    "Mismatch",
    "compare",
]

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
                "float8_e4m3fnuz", "float8_e5m2fnuz")
INT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")

# (rtol, atol) by output dtype: about one rounding of the output plus a few of the math
# (a float8 e4m3 value has 3 mantissa bits: half an ulp is 2**-4 of the value).
_TOLERANCE = {
    "float64": (1e-10, 1e-10),
    "float32": (1e-5, 1e-5),
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
    "float8_e4m3fn": (7e-2, 2e-2),
    "float8_e4m3fnuz": (7e-2, 2e-2),
    "float8_e5m2": (1.3e-1, 4e-2),
    "float8_e5m2fnuz": (1.3e-1, 4e-2),
}

# raw-bits carrier of each dtype numpy may lack
_BITS = {"bfloat16": np.uint16, "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8,
         "float8_e4m3fnuz": np.uint8, "float8_e5m2fnuz": np.uint8}
BITS_DTYPES = tuple(_BITS)


def numpy_dtype(name: str) -> np.dtype | None:
    """The NumPy dtype of `name`, through `ml_dtypes` for bfloat16/float8; None if unavailable."""
    if name in _BITS:
        try:
            import ml_dtypes
        except ImportError:
            return None
        return np.dtype(getattr(ml_dtypes, name))
    try:
        return np.dtype(name)
    except TypeError:
        return None


def random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, low: float = 0.25,
                 high: float = 1.0, signed: bool = True, int_high: int = 8,
                 integral: bool = False) -> np.ndarray:
    """Fresh random values, never zero: floats with magnitude in [low, high] and a random
    sign; integers (and floats when `integral`) nonzero in [-int_high, int_high] (positive
    for unsigned or not `signed`); bool random."""
    np_dtype = numpy_dtype(dtype)
    if np_dtype is None:
        raise RuntimeError(f"cannot make {dtype} host arrays here: pip install ml_dtypes")
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    sign = rng.choice(np.array([-1, 1]), shape) if signed and not dtype.startswith("uint") else 1
    if dtype in INT_DTYPES or integral:
        return (sign * rng.integers(1, int_high + 1, shape)).astype(np_dtype)
    values = sign * rng.uniform(low, high, shape)
    out = np.asarray(values).astype(np_dtype)
    # a tiny magnitude may round to zero in a narrow dtype: nudge those to `low`
    zeros = out.astype(np.float64) == 0
    if np.any(zeros):
        out[zeros] = np.asarray(low).astype(np_dtype)
    return out


def poison_value(dtype: str) -> Any:
    """What an output holds before the run: NaN for floats, an unlikely sentinel otherwise."""
    if dtype in FLOAT_DTYPES:
        return float("nan")
    if dtype == "bool":
        return True
    info = np.iinfo(dtype)
    return int(info.min) + 7 if info.min < 0 else int(info.max) - 7


def tolerance(dtype: str) -> tuple[float, float]:
    """(rtol, atol) for an output of `dtype`; integers and bool compare exactly."""
    return _TOLERANCE.get(dtype, (0.0, 0.0))


def to_bits(array: np.ndarray, dtype: str) -> np.ndarray:
    """The raw bits of a host array (unchanged for dtypes NumPy has natively)."""
    carrier = _BITS.get(dtype)
    return np.ascontiguousarray(array).view(carrier) if carrier is not None else np.ascontiguousarray(array)


def from_bits(bits: np.ndarray, dtype: str) -> np.ndarray:
    """Undo `to_bits`: needs `ml_dtypes` for bfloat16/float8 (else returns the bits)."""
    if dtype not in _BITS:
        return bits
    np_dtype = numpy_dtype(dtype)
    return bits.view(np_dtype) if np_dtype is not None else bits


@dataclass(frozen=True)
class Mismatch:
    """Why an output does not match its reference."""

    name: str
    bad: int
    total: int
    unwritten: int
    max_abs: float
    index: tuple[int, ...]
    got: float
    want: float
    rtol: float
    atol: float

    def __str__(self) -> str:
        tail = f"; {self.unwritten} still hold the poison (never written)" if self.unwritten else ""
        return (f"{self.name}: {self.bad}/{self.total} elements off (rtol={self.rtol:g}, "
                f"atol={self.atol:g}); first at {list(self.index)}: got {self.got!r}, "
                f"want {self.want!r}; max |err| {self.max_abs:.3g}{tail}")


def compare(name: str, out: np.ndarray, ref: np.ndarray, dtype: str,
            tol: tuple[float, float] | None = None, poison: Any = None) -> Mismatch | None:
    """Check every element of `out` (float64) against `ref`; None when all match."""
    rtol, atol = tol if tol is not None else tolerance(dtype)
    out = np.asarray(out, dtype=np.float64)
    ref = np.broadcast_to(np.asarray(ref, dtype=np.float64), out.shape)
    if out.shape != ref.shape:
        return Mismatch(name, out.size, out.size, 0, float("inf"), (), float("nan"), float("nan"), rtol, atol)
    err = np.abs(out - ref)
    bad = ~(err <= atol + rtol * np.abs(ref))  # NaN compares False: counted as bad
    if not bad.any():
        return None
    if poison is None or (isinstance(poison, float) and np.isnan(poison)):
        unwritten = int(np.isnan(out).sum())
    else:
        unwritten = int((out == float(poison)).sum())
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    finite = err[np.isfinite(err)]
    return Mismatch(name, int(bad.sum()), int(out.size), unwritten,
                    float(finite.max()) if finite.size else float("nan"), first,
                    float(out[first]), float(ref[first]), rtol, atol)
