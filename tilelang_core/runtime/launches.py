"""A function of several launches as one loaded kernel: its device kernels, run in order.

TVM-free like the rest of the runtime. Each launch is loaded by the backend's runtime from
its own binary and `KernelMeta` (see `KernelMeta.launches`); `LaunchSequence.launch` takes
the arguments of every launch at once (the user's parameters, then the workspaces, then the
symbolic dims) and launches each device kernel with its own grid, block and shared memory on
the same stream, so a later launch sees what an earlier one wrote.
"""
from __future__ import annotations

from typing import Any, Sequence

from .base import KernelMeta, LoadedKernel, Runtime, compile_launch_dims

__all__ = ["LaunchSequence"]


class LaunchSequence(LoadedKernel):
    """The device kernels of one multi-launch function, loaded, launched in order."""

    def __init__(self, runtime: Runtime, meta: KernelMeta, binaries: Sequence[bytes]) -> None:
        if len(binaries) != len(meta.launches):
            raise ValueError(f"{meta.entry} has {len(meta.launches)} launches but {len(binaries)} binaries")
        self.meta = meta
        self.kernels = [runtime.load(binary, launch) for binary, launch in zip(binaries, meta.launches)]
        # the symbolic dims are the trailing arguments, in parameter order
        self._symbols = [p.name for p in meta.params[len(meta.params) - len(meta.symbols):]]
        self._dims = []
        for launch in meta.launches:
            grid, block = compile_launch_dims(launch)
            static = not self._symbols
            self._dims.append((tuple(g({}) for g in grid), tuple(b({}) for b in block)) if static else (grid, block))

    def launch(self, args: Sequence[int | float], grid: Any = None, block: Any = None, shared_memory: int = 0,
               stream: Any = None) -> None:
        """Launch every device kernel in order with `args`; `grid`, `block` and
        `shared_memory` are each launch's own (those given are not used)."""
        if self._symbols:
            values = dict(zip(self._symbols, args[len(args) - len(self._symbols):]))
            for kernel, launch, (grid_fns, block_fns) in zip(self.kernels, self.meta.launches, self._dims):
                kernel.launch(args, tuple(f(values) for f in grid_fns), tuple(f(values) for f in block_fns),
                              launch.shared_memory, stream)
            return
        for kernel, launch, (grid_dims, block_dims) in zip(self.kernels, self.meta.launches, self._dims):
            kernel.launch(args, grid_dims, block_dims, launch.shared_memory, stream)
