"""TileLang's `tilelang.carver.arch.driver.cuda_driver`: the same functions as the package
(`tilelang_cuda.carver_driver`), at the submodule path TileLang's tests import them from."""
from __future__ import annotations

from . import (CUDADeviceProperties, cudaDeviceAttrNames, get_cuda_device_properties, get_device_attribute,
               get_device_name, get_max_dynamic_shared_size_bytes, get_num_sms, get_persisting_l2_cache_max_size,
               get_registers_per_block, get_shared_memory_per_block)

__all__ = [
    "CUDADeviceProperties",
    "cudaDeviceAttrNames",
    "get_cuda_device_properties",
    "get_device_attribute",
    "get_device_name",
    "get_max_dynamic_shared_size_bytes",
    "get_num_sms",
    "get_persisting_l2_cache_max_size",
    "get_registers_per_block",
    "get_shared_memory_per_block",
]
