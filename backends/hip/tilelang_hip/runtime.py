"""Loading and launching HIP code objects through hip-python: no TVM, no compiler.

`hip` (hip-python) is imported when a `HIPRuntime` is made, never at module import, so this
module imports anywhere. Tensors are torch ROCm tensors (`torch.cuda` names the HIP device
on ROCm builds of torch); launches go to the caller's current torch stream.
"""
from __future__ import annotations

import ctypes
from typing import Any, Callable, Sequence

from tilelang_core.runtime import (KernelCallError, KernelMeta, LoadedKernel, ParamSpec, Runtime, RuntimeOnDemand,
                                   defined_symbols, pack_driver_args, require_entry, scalar_packer)

__all__ = ["HIPRuntime", "HIPRuntimeOnDemand", "HIPKernel", "HIPEventTimer", "HIPRuntimeUnavailable", "pack_args",
           "check_code_object"]

_RUNTIME = "the HIP runtime"
_COMPILE_ONLY = "the HIP backend can compile here (conformance level: compile)"
_DEFAULT_LDS = 64 * 1024  # gfx90a and gfx942: 64 KiB of LDS per workgroup
_FLUSH_BYTES = 512 << 20  # larger than MI300X's 256 MiB Infinity Cache
_FLUSH_BUFFERS: dict = {}  # device index -> the process's flush buffer


class HIPRuntimeUnavailable(RuntimeError):
    """hip-python, the ROCm runtime library or an AMD GPU is missing here."""


class HIPError(RuntimeError):
    """A HIP runtime call failed."""


def _import_hip() -> Any:
    """hip-python's `hip` module, once it has shown a device; else HIPRuntimeUnavailable."""
    try:
        from hip import hip
    except Exception as exc:  # noqa: BLE001 - ImportError, or a binding that fails to load
        raise HIPRuntimeUnavailable(
            f"no AMD GPU: hip-python is not importable ({type(exc).__name__}: {exc}); {_COMPILE_ONLY}. "
            "To run kernels, use a machine with ROCm and an AMD GPU and pip install 'tilelang-hip[runtime]'"
        ) from exc
    try:
        err, count = hip.hipGetDeviceCount()
    except Exception as exc:  # noqa: BLE001 - libamdhip64.so missing or of another ABI
        raise HIPRuntimeUnavailable(
            f"no AMD GPU: the HIP runtime library does not load ({exc}); {_COMPILE_ONLY}"
        ) from exc
    if int(err) != 0 or int(count) == 0:
        what = getattr(err, "name", str(err)) if int(err) != 0 else "0 devices"
        raise HIPRuntimeUnavailable(f"no AMD GPU: hipGetDeviceCount reports {what}; {_COMPILE_ONLY}")
    return hip


def _check(hip: Any, result: Any, call: str) -> Any:
    """Unpack a hip-python result tuple (error, values...), raising on an error."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        try:
            text = hip.hipGetErrorString(err)
            if isinstance(text, tuple):  # hip-python >= 6: (hipSuccess, CStr)
                text = text[-1]
            text = text.decode() if hasattr(text, "decode") else str(text)
        except Exception:  # noqa: BLE001
            text = ""
        name = str(getattr(err, "name", err))
        raise HIPError(f"{call} failed: {name}" + (f" ({text})" if text and text != name else ""))
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------


def pack_args(params: Sequence[ParamSpec], args: Sequence[Any]) -> list[Any]:
    """One ctypes value per parameter, by dtype: a device pointer per tensor (an int), the
    scalar's C type per scalar (float16/bfloat16 as their 16-bit patterns). The kernel reads
    each through the pointer `hipModuleLaunchKernel` receives in `kernelParams`."""
    return pack_driver_args(params, args, _RUNTIME)


def check_code_object(binary: bytes, meta: KernelMeta) -> None:
    """Raise `ValueError` unless `binary` is an AMDGPU code object (an ELF shared object, what
    `compile_hip` returns) that itself defines the kernel `meta.entry`: a function of that name
    and its kernel descriptor `<entry>.kd` in the dynamic symbol table, the pair
    `hipModuleGetFunction` resolves. A device function without a descriptor, a descriptor named
    as the entry, a damaged or truncated file are refused. Reads bytes only: no GPU needed, so
    an export is checked on a machine that only compiles."""
    require_entry(binary, meta.entry, ".dynsym", "HIP code object")
    descriptor = f"{meta.entry}.kd"
    if defined_symbols(binary, ".dynsym").get(descriptor) != "object":
        raise ValueError(f"entry {meta.entry!r} is a function of the HIP code object but not a kernel: it has no "
                         f"kernel descriptor {descriptor!r}; the manifest names a device function, or the code "
                         "object is damaged")


# ---------------------------------------------------------------------------------------------
# Kernels, timers, the runtime
# ---------------------------------------------------------------------------------------------


class HIPKernel(LoadedKernel):
    """A kernel function of a loaded code object, on the device that was current at load."""

    def __init__(self, hip: Any, module: Any, function: Any, meta: KernelMeta, max_lds: int,
                 default_stream: Callable[[], Any]):
        self._hip, self._module, self._function = hip, module, function
        self.meta = meta
        self._packers = [scalar_packer(p, _RUNTIME) for p in meta.params]
        self._max_lds = max_lds
        self._default_stream = default_stream

    def launch(self, args: Sequence[Any], grid: tuple[int, int, int], block: tuple[int, int, int],
               shared_memory: int, stream: Any = None) -> None:
        if len(args) != len(self._packers):
            raise KernelCallError(f"{self.meta.entry} takes {len(self._packers)} arguments, got {len(args)}")
        if shared_memory > self._max_lds:
            raise KernelCallError(
                f"{self.meta.entry} asks for {shared_memory} bytes of dynamic LDS; this GPU has "
                f"{self._max_lds} per workgroup: use smaller tiles or fewer pipeline stages"
            )
        values = [pack(a) for pack, a in zip(self._packers, args)]  # alive until the call returns
        addresses = [ctypes.addressof(v) for v in values] or None
        stream = self._default_stream() if stream is None else stream
        _check(self._hip, self._hip.hipModuleLaunchKernel(
            self._function, *(int(g) for g in grid), *(int(b) for b in block), int(shared_memory),
            stream, addresses, None), f"hipModuleLaunchKernel({self.meta.entry})")

    def __del__(self) -> None:
        try:
            self._hip.hipModuleUnload(self._module)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class HIPEventTimer:
    """start()/stop() record hipEvents on the current stream; elapsed_ms() waits for stop."""

    def __init__(self, hip: Any, stream: Callable[[], Any]):
        self._hip, self._stream = hip, stream
        self._start = _check(hip, hip.hipEventCreate(), "hipEventCreate")
        self._stop = _check(hip, hip.hipEventCreate(), "hipEventCreate")

    def start(self) -> None:
        _check(self._hip, self._hip.hipEventRecord(self._start, self._stream()), "hipEventRecord")

    def stop(self) -> None:
        _check(self._hip, self._hip.hipEventRecord(self._stop, self._stream()), "hipEventRecord")

    def elapsed_ms(self) -> float:
        _check(self._hip, self._hip.hipEventSynchronize(self._stop), "hipEventSynchronize")
        return float(_check(self._hip, self._hip.hipEventElapsedTime(self._start, self._stop),
                            "hipEventElapsedTime"))

    def __del__(self) -> None:
        try:
            self._hip.hipEventDestroy(self._start)
            self._hip.hipEventDestroy(self._stop)
        except Exception:  # noqa: BLE001
            pass


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch if getattr(torch.version, "hip", None) else None


class HIPRuntime(Runtime):
    """Loads code objects with `hipModuleLoadData` and launches with `hipModuleLaunchKernel`.

    Raises HIPRuntimeUnavailable when made on a machine without hip-python, the ROCm runtime
    library or an AMD GPU (there the backend works at the compile level).
    """

    dlpack_device_type = 10  # kDLROCM

    def __init__(self, device_index: int | None = None):
        self._hip = _import_hip()
        self._torch = _torch()
        if device_index is None:
            device_index = self._torch.cuda.current_device() if self._torch is not None else 0
        self.device_index = int(device_index)
        _check(self._hip, self._hip.hipSetDevice(self.device_index), "hipSetDevice")

    def check_binary(self, binary: bytes, meta: KernelMeta) -> None:
        check_code_object(binary, meta)

    def load(self, binary: bytes, meta: KernelMeta) -> HIPKernel:
        """Check that the code object defines `meta.entry` (before the runtime maps it), then
        load it on this runtime's device and look the kernel up."""
        try:
            check_code_object(binary, meta)
        except ValueError as err:
            raise ValueError(f"kernel {meta.entry!r} ({meta.target}): {err}") from None
        hip = self._hip
        _check(hip, hip.hipSetDevice(self.device_index), "hipSetDevice")
        module = _check(hip, hip.hipModuleLoadData(binary), f"hipModuleLoadData({meta.target})")
        function = _check(hip, hip.hipModuleGetFunction(module, meta.entry.encode()),
                          f"hipModuleGetFunction({meta.entry!r})")
        return HIPKernel(hip, module, function, meta, self._max_lds(), lambda: self.current_stream(self.device_index))

    def _max_lds(self) -> int:
        try:
            attr = self._hip.hipDeviceAttribute_t.hipDeviceAttributeMaxSharedMemoryPerBlock
            return int(_check(self._hip, self._hip.hipDeviceGetAttribute(attr, self.device_index),
                              "hipDeviceGetAttribute"))
        except Exception:  # noqa: BLE001 - an older hip-python without the enum member
            return _DEFAULT_LDS

    def current_stream(self, device_index: int = 0) -> Any:
        """The caller's current torch stream (a hipStream_t as an int); 0, the null stream,
        without a ROCm build of torch."""
        if self._torch is None:
            return 0
        return self._torch.cuda.current_stream(device_index).cuda_stream

    def synchronize(self) -> None:
        _check(self._hip, self._hip.hipDeviceSynchronize(), "hipDeviceSynchronize")

    def allocate(self, like: Any, shape: Sequence[int], dtype: str) -> Any:
        if self._torch is None or not isinstance(like, self._torch.Tensor):
            raise KernelCallError(
                f"the HIP runtime allocates outputs as torch ROCm tensors; got an input of type "
                f"{type(like).__name__}: pass torch tensors on the AMD GPU (torch built for ROCm)"
            )
        torch_dtype = getattr(self._torch, dtype, None)
        if not isinstance(torch_dtype, self._torch.dtype):
            raise KernelCallError(f"torch has no dtype {dtype!r} for an output tensor")
        return self._torch.empty(tuple(int(s) for s in shape), dtype=torch_dtype, device=like.device)

    def from_numpy(self, array: Any) -> Any:
        """A torch tensor on this runtime's GPU holding a copy of `array`."""
        if self._torch is None:
            raise KernelCallError("the HIP runtime needs a ROCm build of torch for its tensors")
        return self._torch.from_numpy(array).to(f"cuda:{self.device_index}")

    def make_timer(self) -> HIPEventTimer:
        return HIPEventTimer(self._hip, lambda: self.current_stream(self.device_index))

    def flush_l2(self) -> None:
        """Overwrite a buffer larger than the L2 and Infinity Cache on the current stream."""
        hip = self._hip
        buffer = _FLUSH_BUFFERS.get(self.device_index)  # one per device for the process, not per kernel
        if buffer is None:
            buffer = _FLUSH_BUFFERS[self.device_index] = _check(hip, hip.hipMalloc(_FLUSH_BYTES), "hipMalloc")
        _check(hip, hip.hipMemsetAsync(buffer, 0, _FLUSH_BYTES,
                                       self.current_stream(self.device_index)), "hipMemsetAsync")



class HIPRuntimeOnDemand(RuntimeOnDemand):
    """A `HIPRuntime` made on first use, so compiling works where nothing can run.

    `tilelang_core.compile` asks for the runtime when it builds the kernel object; on a machine
    without an AMD GPU the kernel still compiles (and exports), and only loading or launching
    it raises `HIPRuntimeUnavailable`.
    """

    def __init__(self, device_index: int | None = None):
        super().__init__(lambda: HIPRuntime(device_index), HIPRuntime.dlpack_device_type)

    def check_binary(self, binary: bytes, meta: KernelMeta) -> None:
        """The code object's entry check, without making the runtime (no GPU needed)."""
        check_code_object(binary, meta)
