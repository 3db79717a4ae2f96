"""Buffer regions: the `tl.region` argument of tile ops, and its Python view `Region`.

In the IR a region is

    Call(tl.region, [BufferLoad(buffer, [min_0, ..., min_n]), access, extent_0, ..., extent_n])

with `access` an int32 mask (1 read, 2 write, 3 read-write) and one min and one extent per
buffer dimension.
"""
from __future__ import annotations

from dataclasses import dataclass

import tvm
from tvm import ir

from .constants import ACCESS_READ, ACCESS_READ_WRITE, ACCESS_WRITE
from .ops import REGION_OP_NAME, make_call

__all__ = ["Region", "is_region_call"]

_ACCESS_NAMES = {ACCESS_READ: "r", ACCESS_WRITE: "w", ACCESS_READ_WRITE: "rw"}


def is_region_call(expr: object) -> bool:
    """Whether `expr` is a `tl.region(...)` call."""
    if not isinstance(expr, ir.Call) or not isinstance(expr.op, ir.Op):
        return False
    return expr.op.name == REGION_OP_NAME


@dataclass(frozen=True, eq=False)
class Region:
    """A rectangular part of a buffer that a tile op reads and/or writes.

    `buffer` is the buffer var (a `tvm.ir.Var` whose type is `tvm.tirx.BufferType`);
    `mins` and `extents` have one entry per buffer dimension; `access` is the mask.
    """

    buffer: ir.Var
    mins: tuple
    extents: tuple
    access: int

    def __post_init__(self) -> None:
        ndim = len(self.buffer.ty.shape)
        if len(self.mins) != ndim or len(self.extents) != ndim:
            raise ValueError(
                f"a region of {self.buffer.name} needs {ndim} mins and extents, "
                f"got {len(self.mins)} and {len(self.extents)}"
            )
        if self.access not in _ACCESS_NAMES:
            raise ValueError(f"access mask must be 1, 2 or 3, got {self.access}")

    @classmethod
    def full(cls, buffer: ir.Var, access: int) -> Region:
        """The whole of `buffer`."""
        shape = tuple(buffer.ty.shape)
        zeros = tuple(tvm.tirx.IntImm(_index_dtype(e), 0) for e in shape)
        return cls(buffer, zeros, shape, access)

    @classmethod
    def from_call(cls, call: ir.Call) -> Region:
        """The view of a `tl.region(...)` call."""
        if not is_region_call(call):
            raise ValueError(f"not a tl.region call: {call}")
        load, access, *extents = call.args
        return cls(load.source, tuple(load.indices), tuple(extents), int(access.value))

    def to_call(self) -> ir.Call:
        """The `tl.region(...)` call of this region."""
        load = tvm.tirx.BufferLoad(self.buffer, list(self.mins))
        return make_call("region", load, self.access, *self.extents)

    @property
    def ndim(self) -> int:
        return len(self.extents)

    @property
    def dtype(self) -> str:
        return str(self.buffer.ty.dtype)

    @property
    def scope(self) -> str:
        return str(self.buffer.ty.storage_scope)

    @property
    def is_read(self) -> bool:
        return bool(self.access & ACCESS_READ)

    @property
    def is_write(self) -> bool:
        return bool(self.access & ACCESS_WRITE)

    def covers_constant_buffer(self) -> bool:
        """Whether the region is its whole buffer and that buffer has a constant shape."""
        shape = [_as_int(d) for d in self.buffer.ty.shape]
        return None not in shape and all(_as_int(lo) == 0 for lo in self.mins) and \
            list(self.static_extents()) == shape

    def static_extents(self) -> tuple[int | None, ...]:
        """Each extent as an int, or None where it is symbolic."""
        return tuple(_as_int(e) for e in self.extents)

    def __str__(self) -> str:
        dims = ", ".join(
            f"0:{e}" if _as_int(m) == 0 else f"{m}:{m}+{e}" for m, e in zip(self.mins, self.extents)
        )
        return f"{self.buffer.name}[{dims}]({_ACCESS_NAMES[self.access]})"


def _as_int(expr: object) -> int | None:
    if isinstance(expr, int):
        return expr
    if isinstance(expr, tvm.tirx.IntImm):
        return int(expr.value)
    return None


def _index_dtype(expr: object) -> str:
    if isinstance(expr, ir.Expr) and isinstance(getattr(expr, "ty", None), ir.PrimType):
        return str(expr.ty.dtype)
    return "int32"

