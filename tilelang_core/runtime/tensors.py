"""Reading tensors of any array library without importing it: NumPy arrays, torch tensors,
and anything else that speaks DLPack's `__dlpack_device__`."""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

__all__ = ["TensorView", "view_of", "dtype_name"]

_TORCH_DTYPES = {
    "torch.float16": "float16", "torch.bfloat16": "bfloat16", "torch.float32": "float32",
    "torch.float64": "float64", "torch.int8": "int8", "torch.uint8": "uint8",
    "torch.int16": "int16", "torch.int32": "int32", "torch.int64": "int64", "torch.bool": "bool",
    "torch.float8_e4m3fn": "float8_e4m3fn", "torch.float8_e5m2": "float8_e5m2",
    "torch.float8_e4m3fnuz": "float8_e4m3fnuz", "torch.float8_e5m2fnuz": "float8_e5m2fnuz",
}


def dtype_name(dtype: Any) -> str:
    """Our dtype name for a NumPy or torch dtype ("float" and "float32" both mean float32)."""
    text = str(dtype)
    if text in _TORCH_DTYPES:
        return _TORCH_DTYPES[text]
    return {"float": "float32", "half": "float16", "double": "float64", "int": "int32"}.get(text, text)


class TensorView(NamedTuple):
    """What the launcher needs of a tensor argument (a tuple: built on every call)."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    dtype: str
    device_type: int
    device_index: int
    data_ptr: int
    library: str  # "numpy" or "torch" (outputs are allocated in the same one)


@functools.lru_cache(maxsize=256)
def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for dim in reversed(shape):
        strides.append(acc)
        acc *= max(dim, 1)
    return tuple(reversed(strides))


_NUMPY_DTYPES: dict[Any, str] = {}


def view_of(obj: Any) -> TensorView | None:
    """A view of a NumPy array or torch tensor; None for anything else (e.g. a scalar)."""
    module = type(obj).__module__
    if module == "numpy" and hasattr(obj, "__array_interface__"):
        dtype = _NUMPY_DTYPES.get(obj.dtype)
        if dtype is None:
            dtype = _NUMPY_DTYPES.setdefault(obj.dtype, dtype_name(obj.dtype))
        if obj.flags.c_contiguous:
            strides = _contiguous_strides(obj.shape)
        else:
            itemsize = obj.dtype.itemsize
            strides = tuple(s // itemsize for s in obj.strides)
        return TensorView(obj.shape, strides, dtype, 1, 0, obj.__array_interface__["data"][0], "numpy")
    if module.startswith("torch") and hasattr(obj, "data_ptr"):
        device = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (1, 0)
        return TensorView(tuple(obj.shape), tuple(obj.stride()), dtype_name(obj.dtype),
                          int(device[0]), int(device[1]), int(obj.data_ptr()), "torch")
    return None


def is_contiguous(view: TensorView) -> bool:
    expect = _contiguous_strides(view.shape)
    return all(s == e or d == 1 for s, e, d in zip(view.strides, expect, view.shape))
