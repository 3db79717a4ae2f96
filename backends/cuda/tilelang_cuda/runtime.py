"""Loading and launching cubins through the CUDA driver API (`cuda.bindings.driver`).

The runtime half of the backend: imports neither TVM nor the compiler, and imports the
driver bindings only when first used (and torch only when the caller already has), so
`import tilelang_cuda.runtime` works anywhere. Every driver call's result is checked; a
failure raises `CUDADriverError` naming the call and the CUresult.
"""
from __future__ import annotations

import contextlib
import ctypes
import sys
from typing import Any, Sequence

from tilelang_core.runtime import (KernelCallError, KernelMeta, LoadedKernel, Runtime, bfloat16_bits, float16_bits,
                                   require_entry)

from .runtime_l2 import L2Window
from .tensor_maps import tensor_map_slots

__all__ = ["CUDADriverError", "CUDAKernel", "CUDARuntime", "CUDATimer", "device_available"]

# Above this, dynamic shared memory must be opted into per function (CUDA C Programming
# Guide, "Shared Memory" of compute capability 8.x/9.x).
_DEFAULT_DYNAMIC_SHARED = 48 * 1024
_L2_FLUSH_BYTES = 256 << 20

# Errors that a kernel raises asynchronously: they surface at the next synchronizing call
# and leave the context unusable.
_ASYNC_ERRORS = {
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_ASSERT", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_LAUNCH_TIMEOUT", "CUDA_ERROR_HARDWARE_STACK_ERROR",
}

_driver_module = None


def _cu():
    """cuda.bindings.driver, imported on first use."""
    global _driver_module
    if _driver_module is None:
        from cuda.bindings import driver

        _driver_module = driver
    return _driver_module


class CUDADriverError(RuntimeError):
    """A CUDA driver call failed. `call` is its name, `result` the CUresult name."""

    def __init__(self, call: str, result: Any, detail: str = ""):
        cu = _cu()
        name = getattr(result, "name", None) or cu.CUresult(int(result)).name
        try:
            err, text = cu.cuGetErrorString(result)
            description = text.decode() if err == cu.CUresult.CUDA_SUCCESS and text else ""
        except Exception:  # noqa: BLE001 - the description is a courtesy
            description = ""
        message = f"{call} failed: {name}" + (f" ({description})" if description else "")
        if detail:
            message += f"\n{detail}"
        if name in _ASYNC_ERRORS:
            message += (
                "\nThis error comes from a kernel that ran earlier (launches are asynchronous) and"
                " leaves the CUDA context unusable: restart the process. To find the kernel, run"
                " with CUDA_LAUNCH_BLOCKING=1 or under compute-sanitizer."
            )
        super().__init__(message)
        self.call = call
        self.result = name


def _check(result: tuple, call: str, detail: str = "") -> Any:
    """Unwrap a driver call's (CUresult, *values) tuple; raise on failure."""
    err = result[0]
    if err:
        raise CUDADriverError(call, err, detail)
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


def device_available() -> tuple[bool, str]:
    """(True, description) when a CUDA device can be used here, else (False, why not).
    Never raises: tests skip on False."""
    try:
        cu = _cu()
    except Exception as exc:  # noqa: BLE001
        return False, f"cuda-python is not importable ({type(exc).__name__}: {exc})"
    try:
        (err,) = cu.cuInit(0)
        if err:
            return False, f"cuInit failed: {err.name}"
        err, count = cu.cuDeviceGetCount()
        if err or count == 0:
            return False, "no CUDA device"
        err, name = cu.cuDeviceGetName(256, cu.CUdevice(0))
        return True, name.split(b"\0", 1)[0].decode(errors="replace")
    except Exception as exc:  # noqa: BLE001 - no libcuda.so: no driver installed
        return False, f"no NVIDIA driver ({type(exc).__name__})"


def _torch_if_cuda():
    """torch when the caller imported it and initialized CUDA through it, else None."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        return torch if torch.cuda.is_initialized() else None
    except Exception:  # noqa: BLE001 - a CPU build, or a half-imported module
        return None


def _pointer_of(value: Any) -> int:
    """The device address behind a tensor argument (or the int itself)."""
    if type(value) is int:
        return value
    data_ptr = getattr(value, "data_ptr", None)
    if data_ptr is not None:
        return data_ptr()
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        return interface["data"][0]
    try:
        return int(value)  # CUdeviceptr, numpy integers
    except TypeError:
        raise KernelCallError(
            f"expected a device pointer or a CUDA tensor, got {type(value).__name__}"
        ) from None


class _Float16Slot:
    """A 2-byte kernel parameter set from a Python float (fp16 or bf16 bits)."""

    def __init__(self, bfloat16: bool):
        self.cvalue = ctypes.c_uint16()
        self._bits = bfloat16_bits if bfloat16 else float16_bits

    @property
    def value(self) -> float:
        raise AttributeError("write-only")

    @value.setter
    def value(self, number: float) -> None:
        self.cvalue.value = self._bits(number)


_SCALAR_CTYPES = {
    "bool": ctypes.c_bool,
    "int8": ctypes.c_int8,
    "int16": ctypes.c_int16,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}


def _param_slot(kind: str, dtype: str):
    """(object whose .value is set per call, the ctypes object the driver reads)."""
    if kind == "tensor":
        slot = ctypes.c_uint64()
        return slot, slot
    if dtype in ("float16", "bfloat16"):
        slot = _Float16Slot(dtype == "bfloat16")
        return slot, slot.cvalue
    ctype = _SCALAR_CTYPES.get(dtype)
    if ctype is None:
        raise KernelCallError(
            f"scalar parameter dtype {dtype!r} is not supported by the CUDA runtime; "
            f"supported: {', '.join(sorted([*_SCALAR_CTYPES, 'float16', 'bfloat16']))}"
        )
    slot = ctype()
    return slot, slot


def _cooperative_launch(cu):
    """cuLaunchKernel's signature over cuLaunchCooperativeKernel (which takes no `extra`): a
    grid larger than the device holds at once fails with CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE."""
    launch = cu.cuLaunchCooperativeKernel

    def launch_cooperative(function, gx, gy, gz, bx, by, bz, shared_memory, stream, params, _extra):
        return launch(function, gx, gy, gz, bx, by, bz, shared_memory, stream, params)

    return launch_cooperative


class CUDAKernel(LoadedKernel):
    """One kernel of a loaded cubin, bound to one device's primary context.

    The parameter buffer (one ctypes slot per parameter, and the array of their addresses
    that cuLaunchKernel reads) is built once here; a launch only writes the values.
    """

    def __init__(self, runtime: "CUDARuntime", binary: bytes, meta: KernelMeta, device: int):
        cu = _cu()
        self.meta = meta
        self.device = device
        self._runtime = runtime
        self._module = None
        with runtime._device_context(device):
            self._module = _check(cu.cuModuleLoadData(binary), "cuModuleLoadData",
                                  f"loading the cubin of {meta.entry!r} ({meta.target}) on device {device}")
            self._function = _check(cu.cuModuleGetFunction(self._module, meta.entry.encode()),
                                    "cuModuleGetFunction",
                                    f"kernel {meta.entry!r} is not in the cubin (is it declared extern \"C\"?)")
            # without the opt-in, static and dynamic shared memory share the default 48 KB
            # (mbarriers are static __shared__ arrays beside the dynamic tiles)
            static = _check(cu.cuFuncGetAttribute(cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                                  self._function), "cuFuncGetAttribute")
            self._shared_limit = _DEFAULT_DYNAMIC_SHARED - int(static)
            if meta.shared_memory > self._shared_limit:
                self._allow_shared_memory(meta.shared_memory)

        slots = [_param_slot(p.kind, p.dtype) for p in meta.params]
        self._slots = [s for s, _ in slots]
        self._cvalues = [c for _, c in slots]  # kept alive: the driver reads them
        self._is_pointer = [p.kind == "tensor" for p in meta.params]
        self._nparams = len(meta.params)
        # TMA descriptors follow the parameters (tensor_maps.py)
        self._tensor_maps = tensor_map_slots(meta)
        addresses = [ctypes.addressof(c) for c in self._cvalues] + [m.address for m in self._tensor_maps]
        self._param_array = (ctypes.c_void_p * max(1, len(addresses)))(*addresses)
        self._param_address = ctypes.addressof(self._param_array) if addresses else 0
        self._launch_kernel = cu.cuLaunchKernel
        if meta.extra.get("cooperative"):  # the kernel calls T.sync_grid: its grid resident at once
            self._launch_kernel = _cooperative_launch(cu)
        self._l2_window: L2Window | None = None
        if meta.extra.get("l2_access_policy"):  # T.annotate_l2_hit_ratio
            self._l2_window = L2Window(meta, self._slots)
            self._launch_kernel = self._l2_window.around(cu, self._launch_kernel)
        self._per_call_extras = bool(self._tensor_maps) or self._l2_window is not None
        self._raw_stream = None

    def _allow_shared_memory(self, nbytes: int) -> None:
        cu = _cu()
        attribute = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        _check(cu.cuFuncSetAttribute(self._function, attribute, nbytes), "cuFuncSetAttribute",
               f"kernel {self.meta.entry!r} asks for {nbytes} bytes of dynamic shared memory; "
               "the device's opt-in limit is lower (see capabilities.shared_memory_optin)")
        self._shared_limit = nbytes

    def launch(
        self,
        args: Sequence[Any],
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_memory: int,
        stream: Any = None,
    ) -> None:
        """Launch once on `stream` (None: the current torch stream, else the default stream).
        `args` follow `meta.params`: a device pointer (int) or a CUDA tensor per tensor
        parameter, a Python number per scalar."""
        if len(args) != self._nparams:
            raise KernelCallError(f"kernel {self.meta.entry!r} takes {self._nparams} arguments, got {len(args)}")
        for slot, is_pointer, value in zip(self._slots, self._is_pointer, args):
            slot.value = _pointer_of(value) if is_pointer and type(value) is not int else value
        if self._per_call_extras:
            for tensor_map in self._tensor_maps:
                tensor_map.update(self._slots[tensor_map.param].value, args)
            if self._l2_window is not None:
                self._l2_window.bind(args)
        if shared_memory > self._shared_limit:
            self._allow_shared_memory(shared_memory)
        if stream is None:
            raw = self._raw_stream  # torch's current-stream getter, once torch drives CUDA
            if raw is None:
                stream = self._runtime.current_stream(self.device)
                self._raw_stream = self._runtime.__dict__.get("_raw_stream")
            else:
                stream = raw(self.device)
        elif type(stream) is not int:
            stream = getattr(stream, "cuda_stream", stream)
        self._runtime._last_kernel = self.meta.entry
        # cuda-bindings' cuLaunchKernel (4.0 us a call on the H100 here) is faster than
        # libcuda's through ctypes (5.4 us), measured by bench/launch.py
        (err,) = self._launch_kernel(self._function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                     shared_memory, stream, self._param_address, 0)
        if err:
            self._relaunch(err, grid, block, shared_memory, stream)

    def _relaunch(self, err, grid, block, shared_memory, stream) -> None:
        """A launch failed: retry once in our device's context if this thread had none (or
        another device's) current, else raise with what was launched."""
        if err.name in ("CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_HANDLE"):
            with self._runtime._device_context(self.device):
                (err,) = self._launch_kernel(self._function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                             shared_memory, stream, self._param_address, 0)
            if not err:
                return
        raise CUDADriverError(
            "cuLaunchKernel", err,
            f"kernel {self.meta.entry!r}: grid {tuple(grid)}, block {tuple(block)}, "
            f"dynamic shared memory {shared_memory} bytes, stream {int(stream) if stream is not None else 0:#x}",
        )

    def close(self) -> None:
        """Unload the module (the kernel cannot be launched afterwards)."""
        module, self._module = getattr(self, "_module", None), None
        if module is not None:
            try:
                _cu().cuModuleUnload(module)
            except Exception:  # noqa: BLE001 - at interpreter exit the driver may be gone
                pass

    def __del__(self):
        self.close()


class CUDATimer:
    """Times work on a stream with a pair of CUDA events (for `do_bench`)."""

    def __init__(self, runtime: "CUDARuntime", device: int, stream: Any = None):
        cu = _cu()
        self._runtime = runtime
        self._device = device
        self._fixed_stream = stream
        flags = cu.CUevent_flags.CU_EVENT_DEFAULT
        with runtime._device_context(device):
            self._start = _check(cu.cuEventCreate(flags), "cuEventCreate")
            self._end = _check(cu.cuEventCreate(flags), "cuEventCreate")

    def _stream(self):
        if self._fixed_stream is not None:
            return getattr(self._fixed_stream, "cuda_stream", self._fixed_stream)
        return self._runtime.current_stream(self._device)

    def start(self) -> None:
        _check(_cu().cuEventRecord(self._start, self._stream()), "cuEventRecord")

    def stop(self) -> None:
        _check(_cu().cuEventRecord(self._end, self._stream()), "cuEventRecord")

    def elapsed_ms(self) -> float:
        cu = _cu()
        _check(cu.cuEventSynchronize(self._end), "cuEventSynchronize")
        return float(_check(cu.cuEventElapsedTime(self._start, self._end), "cuEventElapsedTime"))

    def __del__(self):
        try:
            cu = _cu()
            cu.cuEventDestroy(self._start)
            cu.cuEventDestroy(self._end)
        except Exception:  # noqa: BLE001
            pass


class CUDARuntime(Runtime):
    """The CUDA backend's loader and launcher: driver API, the caller's torch stream,
    CUDA events for timing, tensors from torch."""

    dlpack_device_type = 2

    def __init__(self) -> None:
        self._contexts: dict[int, Any] = {}
        self._scratch: dict[int, Any] = {}
        self._flush_value = 0
        self._last_kernel: str | None = None

    # ------------------------------------------------------------ contexts

    def _retain_context(self, device: int):
        """`device`'s primary context (the one torch and the runtime API use), retained once."""
        context = self._contexts.get(device)
        if context is None:
            cu = _cu()
            _check(cu.cuInit(0), "cuInit")
            handle = _check(cu.cuDeviceGet(device), "cuDeviceGet", f"device index {device}")
            context = _check(cu.cuDevicePrimaryCtxRetain(handle), "cuDevicePrimaryCtxRetain")
            self._contexts[device] = context
        return context

    @contextlib.contextmanager
    def _device_context(self, device: int):
        """Run the block in `device`'s primary context, leaving this thread's current context
        as it was (so torch's current device does not move): made current when the thread
        has none, pushed and popped when it has another."""
        cu = _cu()
        context = self._retain_context(device)
        current = _check(cu.cuCtxGetCurrent(), "cuCtxGetCurrent")
        pushed = False
        if int(current) == 0:
            _check(cu.cuCtxSetCurrent(context), "cuCtxSetCurrent")
        elif int(current) != int(context):
            _check(cu.cuCtxPushCurrent(context), "cuCtxPushCurrent")
            pushed = True
        try:
            yield context
        finally:
            if pushed:
                _check(cu.cuCtxPopCurrent(), "cuCtxPopCurrent")

    def default_device(self) -> int:
        """torch's current device when the caller uses torch on CUDA, else the device of
        this thread's current context, else 0."""
        torch = _torch_if_cuda()
        if torch is not None:
            return torch.cuda.current_device()
        cu = _cu()
        try:
            err, context = cu.cuCtxGetCurrent()
            if not err and int(context) != 0:
                err, device = cu.cuCtxGetDevice()
                if not err:
                    return int(device)
        except Exception:  # noqa: BLE001 - driver not initialized yet
            pass
        return 0

    @staticmethod
    def device_of(tensor: Any) -> int:
        """The CUDA device index of a tensor (torch, or anything with __dlpack_device__)."""
        device = getattr(tensor, "device", None)
        index = getattr(device, "index", None)
        if index is not None:
            return int(index)
        dlpack_device = getattr(tensor, "__dlpack_device__", None)
        if dlpack_device is not None:
            return int(dlpack_device()[1])
        return 0

    # ------------------------------------------------------------ Runtime contract

    def check_binary(self, binary: bytes, meta: KernelMeta) -> None:
        """A cubin (ELF) whose own symbol table defines the kernel `meta.entry`; needs no
        driver, so an export is checked where no GPU is present."""
        require_entry(binary, meta.entry, ".symtab", "cubin")

    def load(self, binary: bytes, meta: KernelMeta, device: int | None = None) -> CUDAKernel:
        """Load a cubin and look up `meta.entry` on `device` (default: `default_device()`;
        pass `device_of(first_tensor)` to follow the arguments)."""
        return CUDAKernel(self, binary, meta, self.default_device() if device is None else device)

    def current_stream(self, device_index: int | None = None) -> Any:
        """torch's current stream handle on `device_index` (None: torch's current device)
        when torch drives CUDA here, else 0 (the default stream)."""
        raw = self.__dict__.get("_raw_stream")  # once torch drives CUDA, it stays so
        if raw is None or device_index is None:
            torch = _torch_if_cuda()
            if torch is None:
                return 0
            if device_index is None:
                device_index = torch.cuda.current_device()
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
            if raw is None:
                return torch.cuda.current_stream(device_index).cuda_stream
            self._raw_stream = raw
        return raw(device_index)

    def synchronize(self) -> None:
        """Wait for every device this runtime has used; a kernel's asynchronous error
        (illegal address, failed device assert) is raised here."""
        cu = _cu()
        devices = list(self._contexts) or [self.default_device()]
        for device in devices:
            detail = f"device {device}"
            if self._last_kernel:
                detail += f"; the last kernel launched through this runtime was {self._last_kernel!r}"
            with self._device_context(device):
                _check(cu.cuCtxSynchronize(), "cuCtxSynchronize", detail)

    def allocate(self, like: Any, shape: Sequence[int], dtype: str) -> Any:
        """An uninitialized torch tensor on `like`'s device."""
        torch = sys.modules.get("torch")
        if torch is None or not hasattr(like, "device"):
            raise NotImplementedError(
                f"the CUDA runtime allocates outputs as torch tensors; got an argument of type "
                f"{type(like).__name__} (pass torch tensors, or preallocate the outputs)"
            )
        torch_dtype = getattr(torch, dtype, None)
        if not isinstance(torch_dtype, torch.dtype):
            raise KernelCallError(f"dtype {dtype!r} has no torch equivalent")
        return torch.empty(tuple(shape), dtype=torch_dtype, device=like.device)

    def from_numpy(self, array: Any) -> Any:
        """A torch tensor on the default device holding a copy of a NumPy array."""
        try:
            import torch
        except ImportError:
            raise NotImplementedError("the CUDA runtime makes device tensors with torch: pip install torch") from None
        return torch.from_numpy(array).to(f"cuda:{self.default_device()}")

    def make_timer(self, stream: Any = None, device: int | None = None) -> CUDATimer:
        """CUDA events recording on `stream` (None: the current stream at each start/stop)."""
        return CUDATimer(self, self.default_device() if device is None else device, stream)

    def flush_l2(self, device: int | None = None, stream: Any = None) -> None:
        """Evict L2 by writing a 256 MB scratch buffer (allocated once per device) on the
        current stream."""
        cu = _cu()
        device = self.default_device() if device is None else device
        if stream is None:
            stream = self.current_stream(device)
        self._flush_value ^= 0x5A5A5A5A
        with self._device_context(device):
            scratch = self._scratch.get(device)
            if scratch is None:
                scratch = _check(cu.cuMemAlloc(_L2_FLUSH_BYTES), "cuMemAlloc",
                                 f"{_L2_FLUSH_BYTES >> 20} MB scratch buffer for flush_l2")
                self._scratch[device] = scratch
            _check(cu.cuMemsetD32Async(scratch, self._flush_value, _L2_FLUSH_BYTES // 4,
                                       getattr(stream, "cuda_stream", stream)), "cuMemsetD32Async")


_SHARED: list[CUDARuntime] = []


def shared_runtime() -> CUDARuntime:
    """The process's CUDA runtime (created on first use)."""
    if not _SHARED:
        _SHARED.append(CUDARuntime())
    return _SHARED[0]
