"""Kernel inputs and output checks, as TileLang's `tilelang.utils.tensor` offers them.

- `TensorSupplyType` and `get_tensor_supply`: make an input tensor for a kernel parameter,
  filled the way the supply type says, in the array library and on the device the kernel's
  runtime accepts (the runtime's `from_numpy` decides: torch tensors, on the host too when
  torch is installed, as TileLang's reference programs expect; NumPy arrays without torch).
- `map_torch_type` / `numpy_dtype`: our dtype names (and TileLang's spellings) to torch and
  NumPy dtypes; bfloat16, float8 and float4 live in `ml_dtypes` on the NumPy side.
- `torch_assert_close`: closeness with a tolerated share of mismatches, for NumPy arrays and
  torch tensors alike (the two may be mixed).

Importing this module imports NumPy only: torch and TVM load when first needed.
"""
from __future__ import annotations

import operator
from enum import Enum
from typing import Any, Callable, Mapping

import numpy as np

from ..runtime.tensors import array_library, dtype_name, view_of

__all__ = [
    "TensorSupplyType",
    "get_tensor_supply",
    "map_torch_type",
    "numpy_dtype",
    "is_float8_dtype",
    "torch_assert_close",
]


class TensorSupplyType(Enum):
    """How `get_tensor_supply` fills an input (TileLang's members and meanings).

    Integer: small integers (-2..2; 0..2 unsigned; 0/1 bool; -128..127 rounded for float8).
    Uniform: uniform in [-1, 1). Normal: normal with mean -1 and standard deviation 1 (as
    TileLang draws it). Int8 inputs get all ones under Uniform and Normal (as in TileLang).
    Randn: standard normal. Zero: zeros. One: ones.
    Auto: uniform in [-1, 1) for float16, bfloat16 and float32; Integer's values otherwise.
    """

    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


# names NumPy itself knows (and torch.from_numpy accepts)
_STANDARD = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float16", "float32", "float64"}
# names that only ml_dtypes has on the NumPy side
_EXTENDED = {"bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
             "float8_e8m0fnu", "float4_e2m1fn", "int4", "uint4"}


def _canonical(dtype: Any) -> str:
    """Our dtype name for a string (ours or TileLang's spelling), a `T.float16`-style object,
    or a NumPy / torch dtype."""
    name = dtype_name(dtype)
    if name in _STANDARD or name in _EXTENDED:
        return name
    from ..language.dtypes import to_dtype  # TileLang spellings ("e4m3_float8"); imports TVM

    return str(to_dtype(name))


def numpy_dtype(dtype: Any) -> np.dtype:
    """The NumPy dtype holding `dtype`; bfloat16 / float8 / float4 / int4 come from ml_dtypes."""
    name = _canonical(dtype)
    if name in _STANDARD:
        return np.dtype(name)
    try:
        import ml_dtypes
    except ImportError:
        raise TypeError(f"NumPy has no {name}: pip install ml_dtypes (or use torch tensors)") from None
    found = getattr(ml_dtypes, name, None)
    if found is None:
        raise TypeError(f"dtype {name!r} has no NumPy equivalent (not in NumPy nor ml_dtypes {ml_dtypes.__version__})")
    return np.dtype(found)


def map_torch_type(intype: Any) -> Any:
    """The torch dtype for a dtype name (ours or TileLang's spelling, e.g. "float8_e4m3").

    As in TileLang, int4 and float4 values without a torch dtype of their own are stored in
    torch.int8. Raises TypeError when this torch has no such dtype.
    """
    import torch

    if isinstance(intype, torch.dtype):
        return intype
    name = _canonical(intype)
    if name == "int4" or (name.startswith("float4") and not hasattr(torch, name)):
        return torch.int8
    found = getattr(torch, name, None)
    if not isinstance(found, torch.dtype):
        raise TypeError(f"torch {torch.__version__} has no dtype {name!r}; upgrade torch or use another dtype")
    return found


def is_float8_dtype(dtype: Any) -> bool:
    """True for the float8 dtypes (given as a name, a torch dtype or a NumPy dtype)."""
    try:
        return dtype_name(dtype).startswith("float8")
    except Exception:  # noqa: BLE001 - anything that is not a dtype is not a float8 dtype
        return False


# -- the supply ----------------------------------------------------------------------------


def _param_name(param: Any) -> str:
    return repr(getattr(param, "name", "") or "?")


def _concrete_shape(param: Any, values: Mapping[str, int] | None) -> tuple[int, ...]:
    """The parameter's shape with each symbolic dimension replaced from `values`."""
    shape = []
    for dim in getattr(param, "shape", ()):
        try:
            shape.append(operator.index(dim))
            continue
        except TypeError:
            pass
        symbol = dim if isinstance(dim, str) else getattr(dim, "name", str(dim))
        if values is None or symbol not in values:
            given = f" (given: {sorted(values)})" if values else ""
            raise ValueError(
                f"parameter {_param_name(param)} has the symbolic dimension {symbol!r}, so its size "
                f"is unknown{given}: pass dynamic_symbolic_constraints={{{symbol!r}: <size>}} "
                f"(or your own input_tensors)")
        shape.append(int(values[symbol]))
    return tuple(shape)


def _carrier_dtype(name: str) -> str:
    """The standard NumPy dtype the values are drawn in before the final cast."""
    if name in _STANDARD:
        return name
    return "int8" if name in ("int4", "uint4") else "float32"


def _draw(kind: TensorSupplyType, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Values of `name` as TileLang's supply draws them, in a standard NumPy dtype. Uses
    NumPy's global generator, so `tilelang_core.testing.set_random_seed` fixes them."""
    carrier = _carrier_dtype(name)
    rand = np.random
    if kind in (TensorSupplyType.Zero, TensorSupplyType.One):
        return (np.zeros if kind is TensorSupplyType.Zero else np.ones)(shape, dtype=carrier)
    if kind in (TensorSupplyType.Uniform, TensorSupplyType.Normal) and name == "int8":
        return np.ones(shape, dtype=carrier)
    if kind is TensorSupplyType.Uniform:
        return rand.uniform(-1.0, 1.0, size=shape).astype(carrier)
    if kind is TensorSupplyType.Normal:
        return rand.normal(-1.0, 1.0, size=shape).astype(carrier)
    if kind is TensorSupplyType.Randn:
        return rand.standard_normal(size=shape).astype(carrier)
    if kind is TensorSupplyType.Auto and name in ("float16", "bfloat16", "float32"):
        return rand.uniform(-1.0, 1.0, size=shape).astype(carrier)
    # Integer, and Auto for every other dtype
    if name == "bool":
        low, high = 0, 2
    elif name.startswith("uint"):
        low, high = 0, 3
    elif name.startswith("float8"):
        low, high = -128, 128
    elif name.startswith("float4"):
        low, high = -6, 7  # the integers e2m1 holds, up to its largest magnitude
    else:
        low, high = -2, 3
    return rand.randint(low, high, size=shape).astype(carrier)


_DEVICE_DRAW_MIN = 1 << 16  # elements: below this, drawing on the host costs nothing


def _draw_on_device(kind: TensorSupplyType, name: str, shape: tuple[int, ...], runtime: Any,
                    host_too: bool = False) -> Any:
    """The same distribution as `_draw`, drawn by torch on the runtime's device when the runtime
    hands out torch tensors there (None otherwise, or for small tensors). Drawing tens of
    millions of values with NumPy and copying them over took seconds per input, per candidate
    of an autotuning run. The seed comes from NumPy's global generator, so
    `set_random_seed` still fixes the values."""
    count = 1
    for d in shape:
        count *= int(d)
    if count < _DEVICE_DRAW_MIN:
        return None
    carrier = _carrier_dtype(name)
    probe = runtime.from_numpy(np.zeros(1, carrier))
    if array_library(type(probe)) != "torch" or (probe.is_cpu and not host_too):
        return None
    import torch

    generator = torch.Generator(device=probe.device)
    generator.manual_seed(int(np.random.randint(0, 2 ** 31 - 1)))
    out = torch.empty(shape, dtype=probe.dtype, device=probe.device)
    if kind in (TensorSupplyType.Zero, TensorSupplyType.One):
        return out.fill_(0 if kind is TensorSupplyType.Zero else 1)
    if kind in (TensorSupplyType.Uniform, TensorSupplyType.Normal) and name == "int8":
        return out.fill_(1)
    if kind is TensorSupplyType.Uniform or (kind is TensorSupplyType.Auto and name in ("float16", "bfloat16", "float32")):
        return out.uniform_(-1.0, 1.0, generator=generator)
    if kind is TensorSupplyType.Normal:
        return out.normal_(-1.0, 1.0, generator=generator)
    if kind is TensorSupplyType.Randn:
        return out.normal_(0.0, 1.0, generator=generator)
    low, high = (0, 2) if name == "bool" else (0, 3) if name.startswith("uint") else \
        (-128, 128) if name.startswith("float8") else (-6, 7) if name.startswith("float4") else (-2, 3)
    return out.random_(low, high, generator=generator)


def _cast(array: Any, name: str) -> Any:
    """`array` in dtype `name`, in its own array library."""
    library = array_library(type(array))
    if library == "torch":
        wanted = map_torch_type(name)
        return array if array.dtype == wanted else array.to(wanted)
    if library == "numpy":
        wanted = numpy_dtype(name)
        return array if array.dtype == wanted else array.astype(wanted)
    raise TypeError(f"the runtime's from_numpy returned a {type(array).__name__}; expected a NumPy array or a torch tensor")


def get_tensor_supply(supply_type: TensorSupplyType = TensorSupplyType.Integer) -> Callable[..., Any]:
    """A function `supply(param, runtime=None, values=None)` returning a fresh input for
    `param` filled as `supply_type` says.

    `param` is a `ParamSpec` (or anything with `shape` and `dtype`; `kind` "scalar" is
    refused: scalars are the caller's to choose). `values` maps symbolic dimension names to
    sizes. With a `runtime` the array is made by its `from_numpy` (a torch tensor on its
    device when torch is installed, else a NumPy array on the host) and then cast to the dtype
    in that library; without one it is a NumPy array (ml_dtypes for bfloat16 and float8).
    """
    if not isinstance(supply_type, TensorSupplyType):
        raise TypeError(f"supply_type must be a TensorSupplyType (e.g. TensorSupplyType.Auto), got {supply_type!r}")

    def supply(param: Any, runtime: Any = None, values: Mapping[str, int] | None = None) -> Any:
        if getattr(param, "kind", "tensor") != "tensor":
            raise ValueError(
                f"parameter {_param_name(param)} is a scalar ({param.dtype}): the tensor supply makes "
                f"tensors only; pass the inputs yourself (input_tensors=[...])")
        name = _canonical(param.dtype)
        shape = _concrete_shape(param, values)
        if runtime is not None:
            drawn = _draw_on_device(supply_type, name, shape, runtime)
            if drawn is not None:
                return _cast(drawn, name)
        host = _draw(supply_type, name, shape)
        array = host if runtime is None else runtime.from_numpy(host)
        return _cast(array, name)

    supply.supply_type = supply_type
    return supply


# -- closeness -----------------------------------------------------------------------------


def _as_tensor(x: Any) -> Any:
    """A NumPy array or torch tensor for `x` (Python numbers and lists become NumPy)."""
    return x if view_of(x) is not None else np.asarray(x)


def _as_float64(x: Any) -> np.ndarray:
    """Host float64 copy of a NumPy array or torch tensor, any dtype (bf16/fp8 included)."""
    if array_library(type(x)) == "torch" or type(x).__module__.startswith("torch"):
        import torch

        x = x.detach().cpu()  # a host copy
        if x.layout != torch.strided:
            x = x.to_dense()
        return x.to(torch.float64).numpy()
    return np.asarray(x).astype(np.float64)


def _fmt_index(flat: int, shape: tuple[int, ...]) -> str:
    return str(tuple(int(i) for i in np.unravel_index(flat, shape))) if shape else "()"


def _check_attributes(a: Any, b: Any, check_device: bool, check_dtype: bool, check_layout: bool,
                      check_stride: bool, names: str) -> None:
    va, vb = view_of(a), view_of(b)
    if tuple(a.shape) != tuple(b.shape):
        raise AssertionError(f"{names}: shapes differ: {tuple(a.shape)} != {tuple(b.shape)}")
    if check_layout and va.library == vb.library == "torch" and a.layout != b.layout:
        raise AssertionError(f"{names}: layouts differ: {a.layout} != {b.layout}")
    if check_stride and va.strides != vb.strides:
        raise AssertionError(f"{names}: strides differ: {va.strides} != {vb.strides}")
    if check_device and (va.device_type, va.device_index) != (vb.device_type, vb.device_index):
        raise AssertionError(f"{names}: devices differ (DLPack device {va.device_type}:{va.device_index} "
                             f"!= {vb.device_type}:{vb.device_index}); move both to one device")
    if check_dtype and va.dtype != vb.dtype:
        raise AssertionError(f"{names}: dtypes differ: {va.dtype} != {vb.dtype}")


def torch_assert_close(
    tensor_a: Any,
    tensor_b: Any,
    rtol: float = 1e-2,
    atol: float = 1e-3,
    max_mismatched_ratio: float = 0.001,
    verbose: bool = False,
    equal_nan: bool = True,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    base_name: str = "LHS",
    ref_name: str = "RHS",
) -> bool:
    """Assert `tensor_a` is close to `tensor_b`, tolerating a share of mismatched elements.

    An element mismatches when |a - b| > atol + rtol * |b| (NaNs equal when `equal_nan`).
    Raises AssertionError when more than int(numel * max_mismatched_ratio) elements mismatch,
    naming the count, the first and the worst element (value of both sides and the tolerance
    there) and the largest absolute and relative differences; also when shape, device, dtype
    (or layout / stride, as asked) differ. Takes NumPy arrays and torch tensors, mixed freely;
    values are compared in float64 on the host. Returns True.
    """
    names = f"{base_name} vs {ref_name}"
    a, b = _as_tensor(tensor_a), _as_tensor(tensor_b)
    _check_attributes(a, b, check_device, check_dtype, check_layout, check_stride, names)
    x, y = _as_float64(a).reshape(-1), _as_float64(b).reshape(-1)
    shape = tuple(a.shape)
    diff = np.abs(x - y)
    allowed = atol + rtol * np.abs(y)
    with np.errstate(invalid="ignore"):
        close = np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)
    mismatched = int((~close).sum())
    total = x.size
    limit = int(total * max_mismatched_ratio)
    if verbose:
        print(f"{names}: {mismatched} of {total} elements mismatch (allowed: {limit})")
    if mismatched <= limit:
        return True
    bad = np.flatnonzero(~close)
    excess = np.where(np.isnan(diff[bad]), np.inf, diff[bad] - allowed[bad])
    first, worst = int(bad[0]), int(bad[int(np.argmax(excess))])
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = diff / np.abs(y)

    def element(i: int) -> str:
        return (f"index {_fmt_index(i, shape)}: {base_name}={x[i]:.6g}, {ref_name}={y[i]:.6g}, "
                f"|diff|={diff[i]:.6g} > tolerance {allowed[i]:.6g} (atol {atol:g} + rtol {rtol:g} * |{ref_name}|)")

    raise AssertionError(
        f"{names}: {mismatched} of {total} elements mismatch ({mismatched / total:.2%}); at most {limit} "
        f"allowed (max_mismatched_ratio={max_mismatched_ratio:g})\n"
        f"  worst at {element(worst)}\n"
        f"  first at {element(first)}\n"
        f"  greatest absolute difference {np.nanmax(diff):.6g}, greatest relative difference "
        f"{np.nanmax(relative[np.isfinite(relative)]) if np.isfinite(relative).any() else float('nan'):.6g}")
