"""Run generated MSL on the host: a test double for an Apple GPU.

The kernel's own source (what the Metal dialect printed, helpers included) is compiled by the
host's clang++ against `emulator/metal_stdlib` instead of Apple's: every thread of a
threadgroup is a std::thread, `threadgroup_barrier` a std::barrier, `simd_shuffle_xor` and
`simdgroup_multiply_accumulate` exchanges among the 32 threads of a SIMD-group, in the lane
layout MLX's GEMM relies on. Threadgroups run one after another. This checks what codegen and
lowering decide (indices, layouts, barriers, masks) on real data; it says nothing about what
Apple's compiler or GPU do with the code.
"""
from __future__ import annotations

import ctypes
import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from tilelang_core.runtime import eval_launch_expr

HERE = Path(__file__).resolve().parent / "emulator"


def host_compiler() -> str | None:
    for name in ("clang++-19", "clang++"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _translation_unit(kernel) -> str:
    meta = kernel.meta
    source = kernel.get_kernel_source()
    # kernel-scope threadgroup arrays are shared by the block's threads: static storage
    source = re.sub(r"^(\s*)(threadgroup \w+ \w+\[\d+\];)", r"\1static \2", source, flags=re.M)
    source = source.replace("#include <metal_stdlib>", "")
    args = [f"*(void**)args[{i}]" if p.kind == "tensor" else f"*({_transport(p.dtype)}*)args[{i}]"
            for i, p in enumerate(meta.params)]
    call = f"static void tl_emu_call(void** args) {{ tl_emu_entry({', '.join(args)}); }}"
    shim = _shim(meta)
    return "\n".join([(HERE / "harness.cpp").read_text(), source, shim, call, ""])


def _transport(dtype: str) -> str:
    """How a scalar travels (codegen.py): float for floating dtypes, long for the rest."""
    return "float" if dtype.startswith(("float", "bfloat")) else "long"


def _shim(meta) -> str:
    """`tl_emu_entry(void*..., scalars...)`: casts each pointer to the entry's parameter type."""
    params, forwards = [], []
    for i, p in enumerate(meta.params):
        if p.kind == "tensor":
            params.append(f"void* a{i}")
            forwards.append(f"(decltype(tl_emu_arg<{i}>(&{meta.entry})))a{i}")
        else:
            params.append(f"{_transport(p.dtype)} a{i}")
            forwards.append(f"a{i}")
    return "\n".join([
        "template <int I, typename R, typename... P> auto tl_emu_arg(R (*)(P...)) {",
        "  return std::get<I>(std::tuple<std::decay_t<P>...>{}); }",
        f"static void tl_emu_entry({', '.join(params)}) {{",
        f"  {meta.entry}({', '.join(forwards + ['tl_emu_block_id', 'tl_emu_thread_id'])}); }}",
    ])


class EmulatedKernel:
    """A compiled Metal kernel's source, built for the host; call it with NumPy arrays."""

    def __init__(self, kernel, workdir: Path) -> None:
        self.meta = kernel.meta
        text = _translation_unit(kernel)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        lib = workdir / f"emu-{digest}.so"
        if not lib.exists():
            src = workdir / f"emu-{digest}.cpp"
            src.write_text(text)
            cmd = [host_compiler(), "-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", "-w",
                   "-isystem", str(HERE), str(src), "-o", str(lib)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"host build of the emulated kernel failed:\n{proc.stderr[-4000:]}\n{src}")
        self.lib = ctypes.CDLL(str(lib))

    def __call__(self, *args) -> None:
        """Launch over the whole grid; tensors are C-contiguous NumPy arrays (updated in
        place), scalars Python numbers (passed as long or float, as torch.mps does)."""
        params = self.meta.params
        values = {name: args[index].shape[dim] for name, (index, dim) in self.meta.symbols.items()}
        full = list(args) + [values[p.name] for p in params[len(args):]]
        keep, slots = [], []
        for p, value in zip(params, full):
            if p.kind == "tensor":
                assert value.flags.c_contiguous, p.name
                holder = np.array([value.ctypes.data], dtype=np.uintp)
            else:
                holder = np.array([value], dtype=np.float32 if p.dtype.startswith(("float", "bfloat")) else np.int64)
            keep.append(holder)
            slots.append(holder.ctypes.data)
        argv = (ctypes.c_void_p * len(slots))(*slots)
        grid = [eval_launch_expr(g, values) for g in self.meta.grid]
        block = [eval_launch_expr(b, values) for b in self.meta.block]
        self.lib.tl_emu_launch(argv, *grid, *block)


def emulate(kernel, workdir: Path | None = None) -> EmulatedKernel:
    return EmulatedKernel(kernel, Path(workdir or tempfile.mkdtemp(prefix="tilelang-metal-emu-")))
