"""TileLang's `tilelang.carver.roller.rasterization`: the order in which a hint's blocks walk
the output tiles. `NoRasterization()`: row-major block ids; `Rasterization2DRow(panel_width)`
and `Rasterization2DColumn(panel_width)`: panels of `panel_width` tile rows (columns) walked
together so that neighbouring blocks share operands in L2 (`T.use_swizzle(panel_width)` in a
kernel)."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NoRasterization", "Rasterization2DRow", "Rasterization2DColumn"]


@dataclass(frozen=True)
class NoRasterization:
    """Blocks in launch order."""

    def __repr__(self) -> str:
        return "NoRasterization()"


@dataclass(frozen=True)
class Rasterization2DRow:
    """Panels of `panel_width` rows of tiles."""

    panel_width: int = 4


@dataclass(frozen=True)
class Rasterization2DColumn:
    """Panels of `panel_width` columns of tiles."""

    panel_width: int = 4
