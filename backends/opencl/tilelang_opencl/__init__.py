"""The OpenCL backend of tilelang-core: OpenCL C through pyopencl, on any OpenCL platform
(PoCL on the CPU in CI). The worked example of docs/backend-guide.md."""
__version__ = "0.2.0"
