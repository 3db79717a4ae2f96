"""Loading and launching MUSA device binaries through the driver API (ctypes on libmusa).

`muModuleLoadData`, `muModuleGetFunction`, `muLaunchKernel`, `muFuncSetAttribute`, events
and `muCtxSynchronize` mirror CUDA's driver API one for one (the MUSA port's generated host
wrapper calls them the same way: `tilelang/jit/adapter/musa_wrapper.py`). Tensors are
torch_musa tensors (device "musa"); their streams are torch_musa's current streams.

Written without a MUSA device: nothing here has run on hardware yet. On a machine without the
driver, torch_musa or a device, making the runtime raises `MUSARuntimeUnavailable` saying which
is missing; `MUSARuntimeOnDemand` makes it only when a kernel is loaded or launched, so
compiling and exporting work anywhere.
"""
from __future__ import annotations

import ctypes
from typing import Any, Callable, Sequence

from tilelang_core.runtime import (KernelCallError, KernelMeta, LoadedKernel, ParamSpec, Runtime, RuntimeOnDemand,
                                   pack_driver_args, require_entry, scalar_packer)

from . import sdk
from .descriptors import descriptor_slots

__all__ = ["MUSARuntime", "MUSARuntimeOnDemand", "MUSARuntimeUnavailable", "MUSAError", "pack_args",
           "check_device_binary"]

# muFuncSetAttribute: the dynamic shared memory a launch may use (CUDA's value, 8)
_ATTR_MAX_DYNAMIC_SHARED = 8
_STATIC_SHARED_LIMIT = 28 * 1024
_RUNTIME = "the MUSA runtime"


class MUSARuntimeUnavailable(RuntimeError):
    """The MUSA driver, torch_musa or a MUSA device is missing here."""


class MUSAError(RuntimeError):
    """A MUSA driver call failed."""


def _driver() -> ctypes.CDLL:
    lib, why = sdk.load_driver()
    if lib is None:
        raise MUSARuntimeUnavailable(f"cannot run MUSA kernels here: {why}; the backend generates MUSA C++ "
                                     f"here (conformance level: codegen, or compile with mcc)")
    return lib


def _check(status: int, call: str) -> None:
    if status != 0:
        raise MUSAError(f"{call} failed with MUresult {status}")


def pack_args(params: Sequence[ParamSpec], args: Sequence[Any]) -> list[Any]:
    """One ctypes value per parameter: a device pointer per tensor, the scalar's C type per
    scalar (float16/bfloat16 as their 16-bit patterns)."""
    return pack_driver_args(params, args, _RUNTIME)


def check_device_binary(binary: bytes, meta: KernelMeta) -> None:
    """Raise `ValueError` unless `binary`, a device binary mcc made (an ELF, like a cubin),
    itself defines the kernel `meta.entry` as a function in its symbol table; read from the
    bytes, no device needed. A source-only kernel (MUSA C++ kept where there was no mcc) has
    no symbols yet: nothing is checked here, and the binary mcc makes of it at load is checked
    before `muModuleLoadData` maps it. Unverified on hardware: no mcc output has been read yet
    (an mcc whose binaries keep no symbol table would have every kernel refused here, with
    this message)."""
    from . import compile as musa_compile

    if musa_compile.is_source_only(binary):
        return
    require_entry(binary, meta.entry, ".symtab", "MUSA device binary")


class MUSAKernel(LoadedKernel):
    """One kernel function of a loaded module."""

    def __init__(self, lib: ctypes.CDLL, module: ctypes.c_void_p, function: ctypes.c_void_p, meta: KernelMeta,
                 stream: Callable[[], int]):
        self._lib, self._module, self._function, self.meta = lib, module, function, meta
        self._packers = [scalar_packer(p, _RUNTIME) for p in meta.params]
        self._stream = stream
        self._shared_set = 0
        # TME descriptors follow the parameters (descriptors.py)
        self._descriptors = descriptor_slots(meta)

    def launch(self, args, grid, block, shared_memory, stream=None) -> None:
        if len(args) != len(self._packers):
            raise KernelCallError(f"{self.meta.entry} takes {len(self._packers)} arguments, got {len(args)}")
        if shared_memory > _STATIC_SHARED_LIMIT and shared_memory != self._shared_set:
            _check(self._lib.muFuncSetAttribute(self._function, _ATTR_MAX_DYNAMIC_SHARED, int(shared_memory)),
                   f"muFuncSetAttribute({self.meta.entry}, max dynamic shared = {shared_memory})")
            self._shared_set = shared_memory
        values = [pack(a) for pack, a in zip(self._packers, args)]
        for slot in self._descriptors:
            slot.update(self._lib, values[slot.param].value, args)
        addresses = [ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values] + \
            [ctypes.c_void_p(slot.address) for slot in self._descriptors]
        pointers = (ctypes.c_void_p * max(1, len(addresses)))(*addresses)
        handle = self._stream() if stream is None else stream
        _check(self._lib.muLaunchKernel(self._function, *(ctypes.c_uint(int(g)) for g in grid),
                                        *(ctypes.c_uint(int(b)) for b in block), ctypes.c_uint(int(shared_memory)),
                                        ctypes.c_void_p(int(handle or 0)), pointers, None),
               f"muLaunchKernel({self.meta.entry})")


class MUSAEventTimer:
    """Times with torch_musa's events on the current stream."""

    def __init__(self, torch: Any):
        self._start = torch.musa.Event(enable_timing=True)
        self._stop = torch.musa.Event(enable_timing=True)

    def start(self) -> None:
        self._start.record()

    def stop(self) -> None:
        self._stop.record()

    def elapsed_ms(self) -> float:
        self._stop.synchronize()
        return float(self._start.elapsed_time(self._stop))


class MUSARuntime(Runtime):
    """The driver through ctypes, torch_musa for tensors and streams."""

    # DLPack has no device type for MUSA; torch_musa exports its tensors as kDLExtDev (12).
    # Unverified without a device: a mismatch shows as a clear "wrong device" error at call time.
    dlpack_device_type = 12

    def __init__(self) -> None:
        self._lib = _driver()
        if sdk.import_torch_musa() is None:
            raise MUSARuntimeUnavailable("cannot run MUSA kernels here: torch_musa is not installed (PyTorch "
                                         "for MUSA, from Moore Threads; not on PyPI)")
        import torch

        self._torch = torch
        self.device_index = int(torch.musa.current_device())

    def check_binary(self, binary: bytes, meta: KernelMeta) -> None:
        check_device_binary(binary, meta)

    def load(self, binary: bytes, meta: KernelMeta) -> MUSAKernel:
        try:
            check_device_binary(binary, meta)
        except ValueError as err:
            raise ValueError(f"kernel {meta.entry!r} ({meta.target}): {err}") from None
        self._torch.musa.init()  # makes the primary context current
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        _check(self._lib.muModuleLoadData(ctypes.byref(module), ctypes.c_char_p(binary)), f"muModuleLoadData({meta.target})")
        _check(self._lib.muModuleGetFunction(ctypes.byref(function), module, meta.entry.encode()),
               f"muModuleGetFunction({meta.entry!r})")
        return MUSAKernel(self._lib, module, function, meta, lambda: self.current_stream(self.device_index))

    def current_stream(self, device_index: int = 0) -> Any:
        return self._torch.musa.current_stream(device_index).musa_stream

    def synchronize(self) -> None:
        self._torch.musa.synchronize()

    def allocate(self, like: Any, shape: Sequence[int], dtype: str) -> Any:
        torch_dtype = getattr(self._torch, dtype, None)
        if not isinstance(torch_dtype, self._torch.dtype):
            raise KernelCallError(f"torch has no dtype {dtype!r} for an output tensor")
        return self._torch.empty(tuple(int(s) for s in shape), dtype=torch_dtype, device=like.device)

    def from_numpy(self, array: Any) -> Any:
        return self._torch.from_numpy(array).to(f"musa:{self.device_index}")

    def make_timer(self) -> MUSAEventTimer:
        return MUSAEventTimer(self._torch)


class MUSARuntimeOnDemand(RuntimeOnDemand):
    """A `MUSARuntime` made on first use, so compiling works where nothing can run.

    A source-only kernel (compiled where there was no mcc) is compiled with mcc here before it
    loads; where mcc or the runtime is missing, loading says that the kernel holds source
    only, why it cannot run here, and how to run it elsewhere.
    """

    def __init__(self) -> None:
        super().__init__(MUSARuntime, MUSARuntime.dlpack_device_type)

    def check_binary(self, binary: bytes, meta: KernelMeta) -> None:
        """The device binary's entry check, without making the runtime (no device needed)."""
        check_device_binary(binary, meta)

    def load(self, binary: bytes, meta: KernelMeta) -> LoadedKernel:
        from . import compile as musa_compile

        if not musa_compile.is_source_only(binary):
            return super().load(binary, meta)
        arch = str(meta.target).split("/", 1)[-1]
        problems = []
        if sdk.find_mcc() is None:
            problems.append("no mcc here to compile it (set MUSA_HOME to the MUSA SDK, or put mcc on PATH)")
        try:
            runtime = self.runtime
        except (MUSARuntimeUnavailable, MUSAError) as exc:
            problems.append(str(exc))
        if problems:
            raise MUSARuntimeUnavailable(
                f"the {meta.target} kernel {meta.entry!r} holds MUSA C++ source only (it was compiled where "
                f"there was no mcc) and cannot run here: {'; '.join(problems)}. kernel.get_kernel_source() "
                f"shows the source; kernel.export(DIR) keeps it, and tilelang_core.load(DIR) on a machine "
                f"with the MUSA SDK and torch_musa compiles and runs it")
        source = binary.decode()
        return runtime.load(musa_compile.compile_musa(source, arch), meta)
