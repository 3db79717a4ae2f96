"""Load and call CPU kernels: a shared library through ctypes. Imports neither TVM nor the
compiler, so an exported kernel runs where only NumPy (and optionally torch) is installed.

The entry point is `int32_t entry(params...)` (see codegen.py): a pointer per tensor and a
C value per scalar, typed from `KernelMeta.params`; a non-zero result means a device
assertion failed, and `tl_cpu_last_error()` says which.
"""
from __future__ import annotations

import ctypes
import os
import sys
import tempfile
from typing import Any, Sequence

from tilelang_core.runtime import KernelMeta, LoadedKernel, Runtime, WallTimer, require_entry

__all__ = ["CPURuntime", "CPUKernel", "CPUTimer", "DeviceAssertionError", "ForeignCPUError", "SCALAR_CTYPES"]

SCALAR_CTYPES = {
    "bool": ctypes.c_bool,
    "int8": ctypes.c_int8,
    "int16": ctypes.c_int16,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64,
    "float16": ctypes.c_float,  # 16-bit scalars are passed as float (their computed type)
    "bfloat16": ctypes.c_float,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}


class DeviceAssertionError(RuntimeError):
    """A `T.device_assert` (or assert statement) failed inside a CPU kernel."""


class ForeignCPUError(RuntimeError):
    """A kernel compiled for a CPU arch this host cannot run (another family, or features
    the host lacks): loading it would end the process with SIGILL."""


def check_host_runs(meta: KernelMeta) -> None:
    """Refuse a kernel whose target arch this host cannot execute, naming what is missing."""
    from . import target as _target

    arch = meta.target.split("/", 1)[1].split()[0] if "/" in meta.target else None
    host = _target.host_arch()
    if arch is None or arch == host or arch == "generic" or arch not in _target.CPU_ARCHS:
        return
    fix = (f"compile it for this host (target='cpu', i.e. cpu/{host}), or run it on a {arch} machine")
    if _target.arch_family(arch) != _target.arch_family(host):
        raise ForeignCPUError(f"kernel {meta.entry!r} was compiled for {meta.target}, an instruction set this "
                              f"host ({host}) cannot execute; {fix}")
    needed = set(_target.CPU_ARCHS[arch].features) - set(_target.CPU_ARCHS[host].features)
    missing = sorted(f for f in needed if f not in _target.host_features())
    if missing:
        raise ForeignCPUError(f"kernel {meta.entry!r} was compiled for {meta.target}, which needs the CPU "
                              f"feature(s) {', '.join(missing)} this host ({host}) lacks (running it would stop the "
                              f"process with SIGILL); {fix}")


class CPUKernel(LoadedKernel):
    """A loaded shared library and its typed entry point."""

    def __init__(self, library: ctypes.CDLL, meta: KernelMeta) -> None:
        self.library = library
        self.meta = meta
        self.function = getattr(library, meta.entry)
        argtypes = []
        for p in meta.params:
            if p.kind == "tensor":
                argtypes.append(ctypes.c_void_p)
            elif p.dtype in SCALAR_CTYPES:
                argtypes.append(SCALAR_CTYPES[p.dtype])
            else:
                raise TypeError(f"parameter {p.name!r} has dtype {p.dtype!r}, which the CPU runtime "
                                f"cannot pass; supported scalars: {', '.join(SCALAR_CTYPES)}")
        self.function.argtypes = argtypes
        self.function.restype = ctypes.c_int32
        self._last_error = getattr(library, "tl_cpu_last_error", None)
        if self._last_error is not None:
            self._last_error.argtypes = []
            self._last_error.restype = ctypes.c_char_p

    def __del__(self) -> None:
        # ctypes never unloads a library: without this every kernel ever loaded stays mapped
        # (about 45 KB and 5 mappings each), which autotuning thousands of candidates cannot afford
        handle = getattr(getattr(self, "library", None), "_handle", None)
        if handle and not sys.is_finalizing():
            import _ctypes

            self.function = self._last_error = None
            try:
                _ctypes.dlclose(handle)
            except OSError:
                pass

    def launch(self, args: Sequence[int | float], grid=None, block=None, shared_memory: int = 0,
               stream: Any = None) -> None:
        """Run the kernel: it loops over its own grid, so `grid`, `block`, `shared_memory` and
        `stream` are accepted for the common contract and not used."""
        status = self.function(*args)
        if status != 0:
            message = self._last_error() if self._last_error is not None else None
            text = message.decode(errors="replace") if message else f"status {status}"
            raise DeviceAssertionError(f"kernel {self.meta.entry!r} failed: {text}")


# launches run on the calling thread: wall-clock time is the kernel's
CPUTimer = WallTimer


class CPURuntime(Runtime):
    """Loads shared libraries from `tilelang_compile` and calls them on host memory."""

    dlpack_device_type = 1

    def check_binary(self, binary: bytes, meta: KernelMeta) -> None:
        """A shared library that itself defines `meta.entry` as a function (in its dynamic
        symbol table): an entry of another library (`system` from libc) is refused, and so are
        a truncated or foreign file, before dlopen maps them (a truncated library is SIGBUS)."""
        require_entry(binary, meta.entry, ".dynsym", "shared library")

    def load(self, binary: bytes, meta: KernelMeta) -> CPUKernel:
        check_host_runs(meta)
        try:
            self.check_binary(binary, meta)
        except ValueError as err:
            raise ValueError(f"kernel {meta.entry!r} ({meta.target}): {err}") from None
        _pin_runtime_libraries(binary)
        # dlopen needs a file; once loaded the mapping outlives it, so the file is removed
        fd, path = tempfile.mkstemp(prefix=f"tilelang-{meta.entry}-", suffix=".so")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(binary)
            library = ctypes.CDLL(path)
        finally:
            os.unlink(path)
        return CPUKernel(library, meta)

    def __init__(self) -> None:
        self._numpy_dtypes: dict[str, Any] = {}  # dtype name -> numpy dtype
        self._torch_dtypes: dict[str, Any] = {}  # dtype name -> (torch.empty, torch dtype)

    def allocate(self, like: Any, shape: Sequence[int], dtype: str) -> Any:
        np_dtype = self._numpy_dtypes.get(dtype)
        if np_dtype is not None and type(like) is _NDARRAY[0]:  # the common case, ~0.3 us
            return _NDARRAY[1](shape, np_dtype)
        if type(like).__module__.startswith("torch"):
            torch_dtype = self._torch_dtypes.get(dtype)
            if torch_dtype is None:
                import torch

                torch_dtype = self._torch_dtypes[dtype] = (torch.empty, getattr(torch, dtype))
            return torch_dtype[0](tuple(shape), dtype=torch_dtype[1], device=like.device)
        import numpy

        _NDARRAY[:] = [numpy.ndarray, numpy.empty]
        np_dtype = self._numpy_dtypes[dtype] = _numpy_dtype(dtype)
        return numpy.empty(tuple(shape), dtype=np_dtype)

    def make_timer(self) -> CPUTimer:
        return CPUTimer()

    def synchronize(self) -> None:
        """Kernels run synchronously on the calling thread: nothing to wait for."""


# The OpenMP runtimes a kernel library may link. A kernel is unloaded when dropped (see
# CPUKernel.__del__); were it the last user of its OpenMP runtime, that would be unloaded too,
# under its idle worker threads (a segfault at their next wake-up). Pinned once, for good.
_OPENMP_SONAMES = (b"libgomp.so.1", b"libomp.so.5", b"libomp.so", b"libiomp5.so")
_PINNED: dict[bytes, Any] = {}


def _pin_runtime_libraries(binary: bytes) -> None:
    for soname in _OPENMP_SONAMES:
        if soname not in _PINNED and soname in binary:
            try:
                _PINNED[soname] = ctypes.CDLL(soname.decode())
            except OSError:
                _PINNED[soname] = None  # the kernel's own dlopen will say what is missing


_NDARRAY: list = [None, None]  # numpy.ndarray, numpy.empty once NumPy is seen (not imported here)


def _numpy_dtype(dtype: str):
    import numpy

    if dtype == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise TypeError("NumPy has no bfloat16: install ml_dtypes, or pass torch tensors") from None
        return ml_dtypes.bfloat16
    return numpy.dtype(dtype)
