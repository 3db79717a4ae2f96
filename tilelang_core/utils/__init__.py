"""Helpers TileLang programs import from `tilelang.utils`: the tensor supply and closeness."""
from .tensor import (
    TensorSupplyType,
    get_tensor_supply,
    is_float8_dtype,
    map_torch_type,
    numpy_dtype,
    torch_assert_close,
)

__all__ = [
    "TensorSupplyType",
    "get_tensor_supply",
    "is_float8_dtype",
    "map_torch_type",
    "numpy_dtype",
    "torch_assert_close",
]
