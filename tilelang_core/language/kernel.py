"""`T.Kernel`: the launch of a grid of blocks, and the thread/block bindings inside it."""
from __future__ import annotations

import threading
from contextlib import ExitStack
from typing import Any

from tvm import ir
from tvm.script.ir_builder import IRBuilder
from tvm.tirx.script.builder import ir as _builder

__all__ = [
    "Kernel",
    "KernelLaunchFrame",
    "get_block_binding",
    "get_block_bindings",
    "get_block_extent",
    "get_block_extents",
    "get_thread_extent",
    "get_thread_extents",
    "get_thread_binding",
    "get_thread_bindings",
]

_AXES = "xyz"
_DEFAULT_THREADS = 128
_active = threading.local()


def _kernel_stack() -> list[Kernel]:
    if not hasattr(_active, "stack"):
        _active.stack = []
    return _active.stack


class Kernel:
    """`with T.Kernel(gx, gy, threads=128) as (bx, by):` launches a gx x gy grid of blocks.

    Up to three grid extents (none: one block, `T.Kernel(threads=128)`); `threads` is an int
    or a tuple of up to three extents.
    `is_cpu` is accepted for TileLang compatibility and has no effect: the target's
    capabilities decide how blocks run.
    Entering opens one `launch_thread` per block dim (blockIdx.x/y/z, named as the user
    names them) and per thread dim (threadIdx.x/y/z, named tx/ty/tz); the `as` target gets
    the block vars (a single var for a 1-D grid).
    """

    def __init__(
        self, *blocks: Any, threads: Any = None, is_cpu: bool = False, prelude: str | None = None, **extensions: Any
    ) -> None:
        if len(blocks) > 3:
            raise ValueError(f"T.Kernel takes up to 3 grid extents, got {len(blocks)}")
        if not blocks:  # `T.Kernel(threads=128)`: as in TileLang, a grid of one block
            blocks = (1,)
        if threads is None:
            threads = _DEFAULT_THREADS
        threads = tuple(threads) if isinstance(threads, (list, tuple)) else (threads,)
        if not 1 <= len(threads) <= 3:
            raise ValueError(f"T.Kernel threads= takes 1 to 3 extents, got {len(threads)}")
        if prelude is not None:
            raise ValueError("T.Kernel(prelude=) is not supported by tilelang-core")
        from .extensions import check_extension_keywords

        # keywords installed backends add (`producer_threads=` where the MUSA port's backend is
        # installed): recorded around the body as ATTR_KERNEL_HINTS
        self.hints = check_extension_keywords("Kernel", extensions)
        self.blocks = blocks
        self.threads = threads
        self.block_vars: list[ir.Var] = []
        self.thread_vars: list[ir.Var] = []
        self._frames = ExitStack()

    def __enter__(self) -> Any:
        for axis, extent in zip(_AXES, self.blocks):
            var = self._frames.enter_context(_builder.launch_thread(f"blockIdx.{axis}", extent))
            self.block_vars.append(IRBuilder.name(f"b{axis}", var))
        for axis, extent in zip(_AXES, self.threads):
            var = self._frames.enter_context(_builder.launch_thread(f"threadIdx.{axis}", extent))
            self.thread_vars.append(IRBuilder.name(f"t{axis}", var))
        if self.hints:
            import json

            from tvm import tirx

            from tilelang_core.ir.constants import ATTR_KERNEL_HINTS

            self._frames.enter_context(_builder.attr(tirx.IntImm("int32", 0), ATTR_KERNEL_HINTS,
                                                     ir.StringImm(json.dumps(self.hints, sort_keys=True))))
        _kernel_stack().append(self)
        return self.block_vars[0] if len(self.block_vars) == 1 else tuple(self.block_vars)

    def __exit__(self, *exc: Any) -> None:
        _kernel_stack().remove(self)
        self._frames.__exit__(*exc)

    @property
    def num_threads(self) -> Any:
        total = 1
        for extent in self.threads:
            total = total * extent
        return total


def _current_kernel(what: str) -> Kernel:
    stack = _kernel_stack()
    if not stack:
        raise RuntimeError(f"T.{what} is only valid inside `with T.Kernel(...)`")
    return stack[-1]


def get_thread_binding(dim: int = 0) -> ir.Var:
    """The threadIdx var of dimension `dim` (0 x, 1 y, 2 z) of the enclosing kernel."""
    kernel = _current_kernel("get_thread_binding")
    if not 0 <= dim < len(kernel.thread_vars):
        raise ValueError(
            f"the kernel has {len(kernel.thread_vars)} thread dims, asked for dim {dim}"
        )
    return kernel.thread_vars[dim]


def get_thread_bindings() -> list[ir.Var]:
    """The threadIdx vars of the enclosing kernel."""
    return list(_current_kernel("get_thread_bindings").thread_vars)


def get_block_binding(dim: int = 0) -> ir.Var:
    """The blockIdx var of dimension `dim` of the enclosing kernel."""
    kernel = _current_kernel("get_block_binding")
    if not 0 <= dim < len(kernel.block_vars):
        raise ValueError(f"the kernel has {len(kernel.block_vars)} grid dims, asked for dim {dim}")
    return kernel.block_vars[dim]


def get_block_bindings() -> list[ir.Var]:
    """The blockIdx vars of the enclosing kernel."""
    return list(_current_kernel("get_block_bindings").block_vars)


# TileLang's name for the object `T.Kernel(...)` makes (annotations, isinstance checks)
KernelLaunchFrame = Kernel


def _extents(values: tuple, what: str, dim: int | None) -> Any:
    padded = list(values) + [1] * (3 - len(values))  # an unnamed dimension has extent 1
    if dim is None:
        return padded
    if not isinstance(dim, int) or not 0 <= dim < 3:
        raise ValueError(f"T.{what}: dim must be 0, 1 or 2 (x, y, z), got {dim!r}")
    return padded[dim]


def get_thread_extent(dim: int = 0) -> Any:
    """Threads per block along `dim` (0 x, 1 y, 2 z) of the enclosing kernel; 1 for a
    dimension `threads=` did not name."""
    return _extents(_current_kernel("get_thread_extent").threads, "get_thread_extent", dim)


def get_thread_extents() -> list:
    """The block's thread extents [x, y, z] of the enclosing kernel (unnamed ones 1)."""
    return _extents(_current_kernel("get_thread_extents").threads, "get_thread_extents", None)


def get_block_extent(dim: int = 0) -> Any:
    """Blocks of the grid along `dim` (0 x, 1 y, 2 z) of the enclosing kernel; 1 for a
    dimension the kernel did not name."""
    return _extents(_current_kernel("get_block_extent").blocks, "get_block_extent", dim)


def get_block_extents() -> list:
    """The grid's extents [x, y, z] of the enclosing kernel (unnamed ones 1)."""
    return _extents(_current_kernel("get_block_extents").blocks, "get_block_extents", None)
