"""TileLang's `tilelang.carver.roller.hint.Hint`: one tile configuration of a kernel."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .rasterization import NoRasterization

__all__ = ["Hint"]


@dataclass
class Hint:
    """A configuration as TileLang's autotuning examples read it: `block` (the block's output
    tile, [M, N]), `warp` (one warp's part of it), `rstep` (the k step, [K]), `pipeline_stage`
    (copies in flight; 1: none), `use_async` (cp.async copies), `use_tc` (tensor cores),
    `rasterization_plan`, and `estimate` (the recommender's relative cost: lower is better)."""

    block: list[int] = field(default_factory=list)
    warp: list[int] = field(default_factory=list)
    rstep: list[int] = field(default_factory=list)
    pipeline_stage: int = 1
    use_async: bool = False
    use_tc: bool = True
    rasterization_plan: Any = field(default_factory=NoRasterization)
    estimate: float = 0.0

    @property
    def threads(self) -> int:
        """Threads of a block: 32 per warp tile."""
        warps = 1
        for whole, part in zip(self.block, self.warp):
            warps *= whole // part
        return 32 * warps

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
