"""The CUDA backend of tilelang-core: NVIDIA GPUs, mma.sync (sm80+), wgmma + TMA (sm90a)."""
__version__ = "0.2.0"
