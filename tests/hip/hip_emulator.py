"""Run generated HIP kernels on the host: a test double for an AMD GPU.

The kernel's own source (what the HIP dialect printed) is compiled by the host C++ compiler
against the headers in `emulator/` instead of ROCm's: every thread of a block is a
std::thread, `__syncthreads()` a std::barrier, LDS one static array, and the MFMA wrappers an
emulation of AMD's documented register layout in which the 64 threads of a wave exchange
their fragments. Blocks run one after another. This checks what codegen and lowering decide
(indices, layouts, barriers, masks) on real data; it says nothing about timing or about
what clang's AMDGPU backend does with the code.
"""
from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from tilelang_core.runtime import eval_launch_expr

HERE = Path(__file__).resolve().parent / "emulator"
BACKEND_INCLUDE = Path(__file__).resolve().parents[2] / "backends" / "hip" / "tilelang_hip" / "include"
_CTYPES = {"int32": "int32_t", "int64": "int64_t", "float32": "float", "float64": "double",
           "uint32": "uint32_t", "int8": "int8_t", "bool": "bool"}
_TYPES = {"float16": "half_t", "bfloat16": "bfloat16_t", "float8_e4m3fnuz": "fp8_e4m3fnuz_t",
          "float8_e5m2fnuz": "fp8_e5m2fnuz_t", "float32": "float", "float64": "double",
          "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t",
          "int64": "int64_t", "uint32": "uint32_t", "bool": "bool"}


def host_compiler() -> str | None:
    for name in ("clang++-19", "clang++", "g++"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _translation_unit(kernel) -> str:
    meta = kernel.meta
    source = kernel.get_kernel_source()
    source = source.replace("extern __shared__", "extern").replace("__shared__", "static")
    args = []
    for i, p in enumerate(meta.params):
        if p.kind == "tensor":
            args.append(f"*({_TYPES[p.dtype]}**)args[{i}]")
        else:
            args.append(f"*({_CTYPES[p.dtype]}*)args[{i}]")
    call = f"static void tl_emu_call(void** args) {{ {meta.entry}({', '.join(args)}); }}"
    harness = (HERE / "harness.cpp").read_text()
    return "\n".join([harness, source, call, ""])


class EmulatedKernel:
    """A compiled kernel's source, built for the host; call it with NumPy arrays."""

    def __init__(self, kernel, workdir: Path) -> None:
        self.meta = kernel.meta
        text = _translation_unit(kernel)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        lib = workdir / f"emu-{digest}.so"
        if not lib.exists():
            src = workdir / f"emu-{digest}.cpp"
            src.write_text(text)
            cmd = [host_compiler(), "-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", "-w",
                   "-I", str(HERE), "-I", str(BACKEND_INCLUDE), str(src), "-o", str(lib)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"host build of the emulated kernel failed:\n{proc.stderr}\n{src}")
        self.lib = ctypes.CDLL(str(lib))
        self.lib.tl_emu_launch.restype = ctypes.c_int

    def __call__(self, *args) -> int:
        """Launch over the whole grid; tensors are C-contiguous NumPy arrays (updated in
        place), scalars Python numbers. Symbolic dims are read from the tensors. Returns 1
        when a device_assert failed."""
        params = self.meta.params
        user = [p for p in params if p.name not in self.meta.symbols]
        if len(args) != len(user):
            raise TypeError(f"{len(user)} arguments expected, got {len(args)}")
        values = {}
        for name, (index, dim) in self.meta.symbols.items():
            values[name] = args[index].shape[dim]
        keep, slots = [], []
        for p, value in zip(params, list(args) + [values[n] for n in self.meta.symbols]):
            if p.kind == "tensor":
                assert value.flags.c_contiguous, p.name
                holder = ctypes.c_void_p(value.ctypes.data)
            else:
                holder = np.array([value], dtype=p.dtype)
            keep.append(holder)
            slots.append(ctypes.addressof(holder) if isinstance(holder, ctypes.c_void_p) else holder.ctypes.data)
        argv = (ctypes.c_void_p * len(slots))(*slots)
        grid = [eval_launch_expr(g, values) for g in self.meta.grid]
        block = [eval_launch_expr(b, values) for b in self.meta.block]
        return self.lib.tl_emu_launch(argv, *grid, *block)


def emulate(kernel, workdir: Path | None = None) -> EmulatedKernel:
    return EmulatedKernel(kernel, Path(workdir or tempfile.mkdtemp(prefix="tilelang-hip-emu-")))
