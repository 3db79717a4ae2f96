"""Putting case arguments where a kernel runs: NumPy arrays on the host, torch tensors on a
device. Chosen from the runtime's DLPack device type, never from the target's name."""
from __future__ import annotations

from typing import Any

import numpy as np

from .data import BITS_DTYPES, from_bits, numpy_dtype, poison_value, to_bits

__all__ = ["HostArrays", "TorchArrays", "arrays_for"]

# DLPack device types torch can allocate on (ROCm builds of torch call their device "cuda")
_TORCH_DEVICES = {2: "cuda", 10: "cuda", 8: "mps"}


class HostArrays:
    """NumPy arrays in host memory (DLPack device type 1)."""

    def tensor(self, host: np.ndarray, dtype: str) -> Any:
        array = from_bits(host, dtype) if numpy_dtype(dtype) is not None else None
        if array is None or array.dtype != numpy_dtype(dtype):
            # bfloat16/float8 without ml_dtypes: a torch CPU tensor speaks DLPack just as well
            return TorchArrays("cpu").tensor(host, dtype)
        return np.ascontiguousarray(array)

    def poisoned(self, shape: tuple[int, ...], dtype: str) -> Any:
        np_dtype = numpy_dtype(dtype)
        if np_dtype is None:
            return TorchArrays("cpu").poisoned(shape, dtype)
        return np.full(shape, poison_value(dtype), np_dtype)

    def float64(self, value: Any) -> np.ndarray:
        if isinstance(value, np.ndarray):
            return value.astype(np.float64)
        return TorchArrays("cpu").float64(value)

    def synchronize(self) -> None:
        pass


class TorchArrays:
    """torch tensors on `device` ("cuda" for CUDA and ROCm builds, "mps", "cpu")."""

    def __init__(self, device: str) -> None:
        import torch

        self.torch = torch
        self.device = device

    def _dtype(self, dtype: str):
        found = getattr(self.torch, dtype, None)
        if found is None:
            raise RuntimeError(f"torch {self.torch.__version__} has no dtype {dtype}")
        return found

    def tensor(self, host: np.ndarray, dtype: str) -> Any:
        torch_dtype = self._dtype(dtype)
        if dtype in BITS_DTYPES:
            # bfloat16/float8 travel as raw bits: reinterpret through a signed carrier torch reads
            bits = to_bits(host, dtype)
            carrier = np.dtype(f"int{8 * bits.dtype.itemsize}")
            return self.torch.from_numpy(bits.view(carrier).copy()).view(torch_dtype).to(self.device)
        return self.torch.from_numpy(np.ascontiguousarray(host).copy()).to(self.device)

    def poisoned(self, shape: tuple[int, ...], dtype: str) -> Any:
        return self.torch.full(tuple(shape), poison_value(dtype), dtype=self._dtype(dtype), device=self.device)

    def float64(self, value: Any) -> np.ndarray:
        return value.detach().to("cpu").to(self.torch.float64).numpy()

    def synchronize(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()
        elif self.device == "mps":
            self.torch.mps.synchronize()


def arrays_for(runtime: Any) -> HostArrays | TorchArrays:
    """The array maker for a backend runtime, from its `dlpack_device_type`."""
    device_type = int(getattr(runtime, "dlpack_device_type", 1))
    if device_type == 1:
        return HostArrays()
    if device_type in _TORCH_DEVICES:
        return TorchArrays(_TORCH_DEVICES[device_type])
    raise RuntimeError(f"no array library known for DLPack device type {device_type}; "
                       f"the conformance suite knows host (1) and torch devices {sorted(_TORCH_DEVICES)}")
