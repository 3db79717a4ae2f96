"""Reading tensors of any array library without importing it: NumPy arrays, torch tensors,
and anything else that speaks DLPack's `__dlpack_device__`."""
from __future__ import annotations

import ctypes
import functools
from typing import Any, NamedTuple

__all__ = ["TensorView", "view_of", "dtype_name", "array_library", "numpy_data_ptr", "torch_device"]

_TORCH_DTYPES = {
    "torch.float16": "float16", "torch.bfloat16": "bfloat16", "torch.float32": "float32",
    "torch.float64": "float64", "torch.int8": "int8", "torch.uint8": "uint8",
    "torch.int16": "int16", "torch.int32": "int32", "torch.int64": "int64", "torch.bool": "bool",
    "torch.uint16": "uint16", "torch.uint32": "uint32", "torch.uint64": "uint64",
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
_LIBRARIES: dict[type, str | None] = {}


def array_library(tp: type) -> str | None:
    """"numpy" for `numpy.ndarray`, "torch" for `torch.Tensor` (exactly these types: the
    call path's fast checks rely on their accessors), None for anything else."""
    library = _LIBRARIES.get(tp)
    if library is None and tp not in _LIBRARIES:
        name = (tp.__module__, tp.__qualname__)
        library = {("numpy", "ndarray"): "numpy", ("torch", "Tensor"): "torch"}.get(name)
        _LIBRARIES[tp] = library
    return library


# An ndarray's data pointer is the first field after the object header
# (PyArrayObject_fields.data, what the C API's PyArray_DATA reads). Reading it there costs
# ~0.15 us; `__array_interface__` builds a dict (~1 us), `.ctypes.data` an object (~0.8 us).
# The offset is checked against `__array_interface__` on the first array of the process.
_read_pointer = ctypes.c_void_p.from_address
_DATA_OFFSET = object.__basicsize__
_data_offset_ok: bool | None = None


def _interface_ptr(array: Any) -> int:
    return array.__array_interface__["data"][0]


def numpy_data_ptr(array: Any) -> int:
    """The data pointer of a `numpy.ndarray` (exactly that type)."""
    global _data_offset_ok
    if _data_offset_ok:
        return _read_pointer(id(array) + _DATA_OFFSET).value or 0
    expected = _interface_ptr(array)
    if _data_offset_ok is None:
        _data_offset_ok = (_read_pointer(id(array) + _DATA_OFFSET).value or 0) == expected
    return expected


_TORCH_DEVICES: dict[Any, tuple[int, int]] = {}


def torch_device(tensor: Any) -> tuple[int, int]:
    """(DLPack device type, index) of a torch tensor, cached per `torch.device` (asking
    `__dlpack_device__` costs ~2 us, and it is the DLPack type that counts: a torch build may
    name its device one thing and report another DLPack type for it)."""
    device = tensor.device
    found = _TORCH_DEVICES.get(device)
    if found is None:
        try:
            raw = tensor.__dlpack_device__() if hasattr(tensor, "__dlpack_device__") else (1, 0)
        except (RuntimeError, ValueError):  # a device DLPack cannot name ('meta'): no kernel's device
            raw = (0, 0)
        found = _TORCH_DEVICES[device] = (int(raw[0]), int(raw[1]))
    return found


def view_of(obj: Any) -> TensorView | None:
    """A view of a NumPy array or torch tensor; None for anything else (e.g. a scalar). Its
    strides are ints, except a float where a NumPy byte stride is no whole element."""
    tp = type(obj)
    module = tp.__module__
    if module == "numpy" and hasattr(obj, "__array_interface__"):
        dtype = _NUMPY_DTYPES.get(obj.dtype)
        if dtype is None:
            dtype = _NUMPY_DTYPES.setdefault(obj.dtype, dtype_name(obj.dtype))
        if obj.flags.c_contiguous:
            strides = _contiguous_strides(obj.shape)
        else:
            itemsize = obj.dtype.itemsize
            # a byte stride that is no multiple of the element size stays a fraction (a float), so
            # it never passes for a whole-element stride (the call path refuses it by name)
            strides = tuple(s // itemsize if s % itemsize == 0 else s / itemsize for s in obj.strides)
        ptr = numpy_data_ptr(obj) if array_library(tp) == "numpy" else _interface_ptr(obj)
        return TensorView(obj.shape, strides, dtype, 1, 0, ptr, "numpy")
    if module.startswith("torch") and hasattr(obj, "data_ptr"):
        if array_library(tp) == "torch":
            device = torch_device(obj)
        else:  # a subclass or look-alike: ask it
            device = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (1, 0)
        return TensorView(tuple(obj.shape), tuple(obj.stride()), dtype_name(obj.dtype),
                          int(device[0]), int(device[1]), int(obj.data_ptr()), "torch")
    return None


def is_contiguous(view: TensorView) -> bool:
    expect = _contiguous_strides(view.shape)
    return all(s == e or d == 1 for s, e, d in zip(view.strides, expect, view.shape))
