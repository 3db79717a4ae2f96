"""Loading and launching OpenCL programs through pyopencl: no TVM, no compiler of ours.

Tensors live in host memory (NumPy arrays, torch CPU tensors; DLPack device type 1): each
launch wraps every tensor argument in a `cl.Buffer` over the caller's memory
(`CL_MEM_USE_HOST_PTR`), so a CPU device such as PoCL's works on it in place and any other
device copies; after the kernel the buffers are mapped (which makes the device's writes
visible in host memory, as the standard requires) and released. Launches are synchronous.
"""
from __future__ import annotations

import ctypes
from typing import Any, Sequence

from tilelang_core.runtime import KernelCallError, KernelMeta, LoadedKernel, Runtime, WallTimer, eval_launch_expr

from .compile import read_program
from .device import context_for, device_for, import_pyopencl

__all__ = ["OpenCLRuntime", "OpenCLKernel", "SCALAR_TYPES", "ITEM_BYTES"]

# scalar dtype -> the NumPy type of the kernel argument (16-bit floats are passed as float,
# their computed type; bool as uchar)
SCALAR_TYPES = {"bool": "uint8", "int8": "int8", "uint8": "uint8", "int16": "int16", "uint16": "uint16",
                "int32": "int32", "uint32": "uint32", "int64": "int64", "uint64": "uint64",
                "float16": "float32", "bfloat16": "float32", "float32": "float32", "float64": "float64"}
ITEM_BYTES = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
              "int64": 8, "uint64": 8, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}


class OpenCLKernel(LoadedKernel):
    """One kernel of a built program, on one device's queue."""

    def __init__(self, cl: Any, context: Any, queue: Any, kernel: Any, meta: KernelMeta) -> None:
        import numpy

        self._cl, self._context, self._queue, self._kernel = cl, context, queue, kernel
        self.meta = meta
        self._np = numpy
        written = meta.extra.get("written_params")
        self._written = ({int(i) for i in str(written).split(",") if i} if written is not None
                         else {i for i, p in enumerate(meta.params) if p.kind == "tensor"})
        for p in meta.params:
            if p.kind == "scalar" and p.dtype not in SCALAR_TYPES:
                raise KernelCallError(f"parameter {p.name!r} has dtype {p.dtype!r}, which the OpenCL runtime "
                                      f"cannot pass; scalars may be {', '.join(SCALAR_TYPES)}")

    def _nbytes(self, param, values: dict) -> int:
        """Bytes a tensor parameter spans (its largest offset + 1 element)."""
        dims = [eval_launch_expr(d, values) for d in param.shape]
        if param.strides is None:
            count = 1
            for d in dims:
                count *= d
        else:
            strides = [eval_launch_expr(s, values) for s in param.strides]
            count = 0 if any(d == 0 for d in dims) else 1 + sum((d - 1) * s for d, s in zip(dims, strides))
        return count * ITEM_BYTES[param.dtype]

    def launch(self, args: Sequence[Any], grid, block, shared_memory: int = 0, stream: Any = None) -> None:
        cl, np = self._cl, self._np
        params = self.meta.params
        if len(args) != len(params):
            raise KernelCallError(f"{self.meta.entry} takes {len(params)} arguments, got {len(args)}")
        values = {p.name: int(a) for p, a in zip(params, args) if p.kind == "scalar" and p.dtype.startswith(("int", "uint"))}
        flags = cl.mem_flags
        buffers, kernel_args = [], []
        for index, (param, arg) in enumerate(zip(params, args)):
            if param.kind != "tensor":
                kernel_args.append(np.dtype(SCALAR_TYPES[param.dtype]).type(arg))
                continue
            nbytes = self._nbytes(param, values)
            if nbytes == 0:  # nothing to touch; OpenCL refuses empty buffers
                buffer = cl.Buffer(self._context, flags.READ_WRITE, size=1)
            else:
                host = (ctypes.c_char * nbytes).from_address(int(arg))
                buffer = cl.Buffer(self._context, flags.READ_WRITE | flags.USE_HOST_PTR, hostbuf=host)
                buffers.append((index, buffer, nbytes))
            kernel_args.append(buffer)
        grid3, block3 = (tuple(grid) + (1, 1, 1))[:3], (tuple(block) + (1, 1, 1))[:3]
        if all(g > 0 for g in grid3):
            self._kernel.set_args(*kernel_args)
            global_size = tuple(int(g) * int(b) for g, b in zip(grid3, block3))
            cl.enqueue_nd_range_kernel(self._queue, self._kernel, global_size, tuple(int(b) for b in block3))
        for index, buffer, nbytes in buffers:
            if index in self._written:
                mapped, _ = cl.enqueue_map_buffer(self._queue, buffer, cl.map_flags.READ, 0, (nbytes,), np.uint8)
                mapped.base.release(self._queue)
        self._queue.finish()
        for _, buffer, _ in buffers:
            buffer.release()


class OpenCLRuntime(Runtime):
    """Builds programs from `tilelang_compile` on a device of the kernel's arch and launches
    them on host tensors. Made anywhere; loading needs pyopencl and a device (else
    `OpenCLUnavailable`, which says what to install)."""

    dlpack_device_type = 1

    def __init__(self) -> None:
        self._queues: dict = {}

    def load(self, binary: bytes, meta: KernelMeta) -> OpenCLKernel:
        cl = import_pyopencl()
        source, options = read_program(binary)
        arch = meta.target.split("/", 1)[1].split()[0] if "/" in meta.target else "generic"
        device = device_for(arch)
        context = context_for(device)
        queue = self._queues.get(device.int_ptr)
        if queue is None:
            queue = self._queues[device.int_ptr] = cl.CommandQueue(context, device)
        program = cl.Program(context, source).build(options=options, devices=[device])
        return OpenCLKernel(cl, context, queue, getattr(program, meta.entry), meta)

    def allocate(self, like: Any, shape: Sequence[int], dtype: str) -> Any:
        if type(like).__module__.startswith("torch"):
            import torch

            return torch.empty(tuple(shape), dtype=getattr(torch, dtype), device=like.device)
        import numpy

        if dtype == "bfloat16":
            try:
                import ml_dtypes
            except ImportError:
                raise KernelCallError("NumPy has no bfloat16: install ml_dtypes, or pass torch tensors") from None
            return numpy.empty(tuple(shape), dtype=ml_dtypes.bfloat16)
        return numpy.empty(tuple(shape), dtype=numpy.dtype(dtype))

    def make_timer(self) -> WallTimer:
        return WallTimer()

    def synchronize(self) -> None:
        """Launches finish before they return: nothing to wait for."""
