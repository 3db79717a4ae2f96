"""The Metal backend of tilelang-core: Apple GPUs with simdgroup matrices, SIMD width 32."""
__version__ = "0.2.0"
