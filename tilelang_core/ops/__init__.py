"""Ready operators: each a kernel written in the tile language, specialised per shape and
dtype, compiled once per (problem, target) and kept, called with NumPy arrays or torch tensors
(outputs on the inputs' device). `tilelang ops` lists them with their kernels and configs."""
from .attention import attention_decode, flash_attention, flash_attention_varlen
from .elementwise import bias_gelu, gelu, rope, silu, swiglu
from .gemm import batched_gemm, conv2d, dequantize_gemv, gemm, grouped_gemm
from .launch import OpError, explain
from .reduce import cumsum, max, mean, min, sum, topk
from .registry import ConfigRule, Operator, OpConfigError, get, operators
from .tune import tune
from .rows import add_rms_norm, cross_entropy, layer_norm, log_softmax, quantize_per_token, rms_norm, softmax

__all__ = ["OpError", "OpConfigError", "ConfigRule", "Operator", "get", "operators", "explain", "tune",
           "gelu", "silu", "bias_gelu", "swiglu", "rope",
           "softmax", "log_softmax", "layer_norm", "rms_norm", "add_rms_norm", "cross_entropy", "quantize_per_token",
           "sum", "mean", "max", "min", "cumsum", "topk",
           "gemm", "batched_gemm", "grouped_gemm", "dequantize_gemv", "conv2d",
           "flash_attention", "flash_attention_varlen", "attention_decode"]
