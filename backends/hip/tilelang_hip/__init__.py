"""The HIP backend of tilelang-core: AMD GPUs with MFMA, wavefront 64."""
__version__ = "0.2.0"
