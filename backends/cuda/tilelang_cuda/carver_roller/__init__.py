"""TileLang's `tilelang.carver.roller`, as far as this backend provides it: `Hint` (one tile
configuration a template recommends), the rasterization plans a hint names
(`rasterization`), and the matmul recommender behind `tilelang.carver.template.MatmulTemplate`
(`matmul`). TileLang's general roller (policies over arbitrary TIR, shape inference) is not
here."""
from __future__ import annotations

from . import rasterization as rasterization
from .hint import Hint
from .matmul import recommend_matmul_hints
from .rasterization import NoRasterization, Rasterization2DColumn, Rasterization2DRow

__all__ = ["Hint", "NoRasterization", "Rasterization2DColumn", "Rasterization2DRow", "rasterization",
           "recommend_matmul_hints"]
