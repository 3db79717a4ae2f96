"""Ready operators: each a kernel written in the tile language, specialised per shape and
dtype, compiled once per (problem, target) and kept, called with NumPy arrays or torch tensors
(outputs on the inputs' device). `tilelang ops` lists them with their kernels and configs."""
from .elementwise import bias_gelu, gelu, rope, silu, swiglu
from .launch import OpError, explain
from .registry import ConfigRule, Operator, OpConfigError, get, operators

__all__ = ["OpError", "OpConfigError", "ConfigRule", "Operator", "get", "operators", "explain",
           "gelu", "silu", "bias_gelu", "swiglu", "rope"]
