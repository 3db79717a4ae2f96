"""Running MSL on an Apple GPU: torch.mps first, pyobjc's Metal as the fallback. No TVM.

A Metal "binary" is the MSL source itself (UTF-8): Metal compiles source at load time, on the
machine that runs it, so a kernel exported anywhere loads on any Mac.

- torch.mps (torch >= 2.7): `torch.mps.compile_shader(source)` compiles; the kernel is called
  with the tensors themselves (on "mps") and Python numbers, on torch's MPS stream, as
  `threads` = grid x block threads in `group_size` threadgroups. The launch receives tensors,
  not pointers (an MPS tensor's data_ptr names a Metal buffer, not an address), which is what
  `Runtime.takes_tensors` asks of the core.
- pyobjc (`pyobjc-framework-Metal`), when torch's MPS is missing: NumPy arrays on the host are
  copied into shared Metal buffers, the kernel runs, the buffers are copied back.

Neither exists off macOS: there `MetalRuntimeOnDemand` loads nothing and says why
(`MetalRuntimeUnavailable`). Written against Apple's and torch's documented APIs; it has not
run on Apple hardware in this project's CI (no Mac there).
"""
from __future__ import annotations

import struct
import sys
import time
from typing import Any, Sequence

from tilelang_core.runtime import KernelCallError, KernelMeta, LoadedKernel, Runtime, RuntimeOnDemand

__all__ = ["MetalRuntimeUnavailable", "MetalRuntime", "MetalPyObjCRuntime", "MetalRuntimeOnDemand",
           "metal_launcher_problem", "device_name", "dispatch_size", "scalar_bytes"]

KDL_METAL = 8  # DLPack's device type of Metal (torch's "mps" tensors)


class MetalRuntimeUnavailable(RuntimeError):
    """No Apple GPU or no way to compile MSL here (not macOS, no torch.mps, no pyobjc)."""


def _torch_mps() -> Any:
    """torch, when its MPS backend can compile shaders here; else None."""
    try:
        import torch
    except ImportError:
        return None
    mps = getattr(torch, "mps", None)
    if mps is None or not hasattr(mps, "compile_shader") or not torch.backends.mps.is_available():
        return None
    return torch


def _metal_device() -> Any:
    """pyobjc's default MTLDevice, or None."""
    try:
        import Metal
    except ImportError:
        return None
    return Metal.MTLCreateSystemDefaultDevice()


def metal_launcher_problem() -> str | None:
    """None when MSL can be compiled and run here, else why not (never raises)."""
    if sys.platform != "darwin":
        return f"Metal runs on macOS only (this is {sys.platform})"
    if _torch_mps() is not None:
        return None
    try:
        if _metal_device() is not None:
            return None
    except Exception as exc:  # noqa: BLE001
        return f"no Metal device ({type(exc).__name__}: {exc})"
    return ("neither torch with MPS (>= 2.7, torch.mps.compile_shader) nor pyobjc-framework-Metal is "
            "usable: pip install 'tilelang-metal[runtime]'")


def device_name() -> str:
    """The Mac's chip name ("Apple M2 Pro"), from sysctl."""
    import subprocess

    out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True)
    return out.stdout.strip()


def dispatch_size(grid: Sequence[int], block: Sequence[int]) -> tuple[list[int], list[int]]:
    """(threads, group_size) for torch.mps: the whole grid in threads, and the threadgroup."""
    return [int(g) * int(b) for g, b in zip(grid, block)], [int(b) for b in block]


def scalar_bytes(dtype: str, value: Any) -> bytes:
    """A scalar as the kernel reads it (see codegen.py): 8-byte long for integers and bool,
    4-byte float for floating dtypes."""
    if dtype.startswith(("float", "bfloat")):
        return struct.pack("<f", float(value))
    return struct.pack("<q", int(value))


def _scalar_value(dtype: str, value: Any) -> Any:
    return float(value) if dtype.startswith(("float", "bfloat")) else int(value)


class _WallTimer:
    """start()/stop() around synchronized work; elapsed_ms() in milliseconds."""

    def __init__(self, synchronize):
        self._sync, self._t0, self._t1 = synchronize, 0.0, 0.0

    def start(self) -> None:
        self._sync()
        self._t0 = time.perf_counter()

    def stop(self) -> None:
        self._sync()
        self._t1 = time.perf_counter()

    def elapsed_ms(self) -> float:
        return (self._t1 - self._t0) * 1e3


# -- torch.mps ---------------------------------------------------------------------------------


class MetalTorchKernel(LoadedKernel):
    """One kernel of a library `torch.mps.compile_shader` built."""

    def __init__(self, function: Any, meta: KernelMeta):
        self._function, self.meta = function, meta

    def launch(self, args: Sequence[Any], grid: tuple[int, int, int], block: tuple[int, int, int],
               shared_memory: int, stream: Any = None) -> None:
        if len(args) != len(self.meta.params):
            raise KernelCallError(f"{self.meta.entry} takes {len(self.meta.params)} arguments, got {len(args)}")
        values = [a if p.kind == "tensor" else _scalar_value(p.dtype, a) for p, a in zip(self.meta.params, args)]
        threads, group = dispatch_size(grid, block)
        self._function(*values, threads=threads, group_size=group)


class MetalRuntime(Runtime):
    """Compiles with `torch.mps.compile_shader`, launches on torch's MPS stream."""

    dlpack_device_type = KDL_METAL
    takes_tensors = True

    def __init__(self):
        self._torch = _torch_mps()
        if self._torch is None:
            raise MetalRuntimeUnavailable(metal_launcher_problem() or "torch.mps is not usable here")

    def load(self, binary: bytes, meta: KernelMeta) -> MetalTorchKernel:
        library = self._torch.mps.compile_shader(binary.decode("utf-8"))
        return MetalTorchKernel(getattr(library, meta.entry), meta)

    def synchronize(self) -> None:
        self._torch.mps.synchronize()

    def allocate(self, like: Any, shape: Sequence[int], dtype: str) -> Any:
        return self._torch.empty(tuple(shape), dtype=getattr(self._torch, dtype), device=like.device)

    def from_numpy(self, array: Any) -> Any:
        return self._torch.from_numpy(array).to("mps")

    def make_timer(self) -> _WallTimer:
        return _WallTimer(self.synchronize)


# -- pyobjc ------------------------------------------------------------------------------------


class MetalPyObjCKernel(LoadedKernel):
    """A compute pipeline made by pyobjc; NumPy arguments are copied through shared buffers."""

    def __init__(self, device: Any, queue: Any, pipeline: Any, meta: KernelMeta):
        self._device, self._queue, self._pipeline, self.meta = device, queue, pipeline, meta

    def launch(self, args: Sequence[Any], grid: tuple[int, int, int], block: tuple[int, int, int],
               shared_memory: int, stream: Any = None) -> None:
        import Metal
        import numpy as np

        command = self._queue.commandBuffer()
        encoder = command.computeCommandEncoder()
        encoder.setComputePipelineState_(self._pipeline)
        copies = []
        for index, (param, arg) in enumerate(zip(self.meta.params, args)):
            if param.kind != "tensor":
                data = scalar_bytes(param.dtype, arg)
                encoder.setBytes_length_atIndex_(data, len(data), index)
                continue
            array = np.ascontiguousarray(arg)
            buffer = self._device.newBufferWithBytes_length_options_(
                array.tobytes(), max(array.nbytes, 1), Metal.MTLResourceStorageModeShared)
            encoder.setBuffer_offset_atIndex_(buffer, 0, index)
            copies.append((arg, buffer, array.nbytes))
        encoder.dispatchThreadgroups_threadsPerThreadgroup_(Metal.MTLSizeMake(*grid), Metal.MTLSizeMake(*block))
        encoder.endEncoding()
        command.commit()
        command.waitUntilCompleted()
        if command.error() is not None:
            raise KernelCallError(f"{self.meta.entry} failed on the GPU: {command.error()}")
        for arg, buffer, nbytes in copies:
            data = np.frombuffer(buffer.contents().as_buffer(nbytes), dtype=arg.dtype).reshape(arg.shape)
            np.copyto(arg, data)


class MetalPyObjCRuntime(Runtime):
    """Compiles with `newLibraryWithSource:options:error:`; arguments are host NumPy arrays."""

    dlpack_device_type = 1
    takes_tensors = True

    def __init__(self):
        self._device = _metal_device() if sys.platform == "darwin" else None
        if self._device is None:
            raise MetalRuntimeUnavailable(metal_launcher_problem() or "no Metal device")
        self._queue = self._device.newCommandQueue()

    def load(self, binary: bytes, meta: KernelMeta) -> MetalPyObjCKernel:
        from tilelang_core.runtime import CompileError

        import Metal

        options = Metal.MTLCompileOptions.new()
        options.setFastMathEnabled_(False)  # IEEE infinities and NaNs (masks use -inf)
        library, error = self._device.newLibraryWithSource_options_error_(binary.decode("utf-8"), options, None)
        if library is None:
            raise CompileError(f"Metal refused the MSL of {meta.entry}: {error}")
        function = library.newFunctionWithName_(meta.entry)
        pipeline, error = self._device.newComputePipelineStateWithFunction_error_(function, None)
        if pipeline is None:
            raise CompileError(f"no compute pipeline for {meta.entry}: {error}")
        return MetalPyObjCKernel(self._device, self._queue, pipeline, meta)

    def allocate(self, like: Any, shape: Sequence[int], dtype: str) -> Any:
        import numpy as np

        return np.empty(tuple(shape), dtype=dtype)

    def make_timer(self) -> _WallTimer:
        return _WallTimer(lambda: None)  # every launch waits for its command buffer


# -- the runtime the plugin hands out ----------------------------------------------------------


def _make_runtime() -> Runtime:
    problem = metal_launcher_problem()
    if problem is not None:
        raise MetalRuntimeUnavailable(f"cannot run Metal kernels here: {problem}. The kernel's MSL is "
                                      f"generated (kernel.get_kernel_source()) and exports "
                                      f"(kernel.export(path)) for a Mac")
    return MetalRuntime() if _torch_mps() is not None else MetalPyObjCRuntime()


class MetalRuntimeOnDemand(RuntimeOnDemand):
    """`MetalRuntime` (torch.mps) when torch's MPS works, else `MetalPyObjCRuntime`, made on
    first use: compiling and exporting work anywhere, loading says why it cannot run here."""

    def __init__(self):
        on_mac_with_mps = sys.platform == "darwin" and _torch_mps() is not None
        super().__init__(_make_runtime, KDL_METAL if on_mac_with_mps else 1, takes_tensors=True)
