"""The CPU backend of tilelang-core: the embedded default that runs anywhere."""
__version__ = "0.2.0"
