"""`T.sync_grid`: the probe of the "cooperative_launch" feature (a barrier across the grid)."""
from __future__ import annotations

import numpy as np

from tilelang_core import language as T

from ..case import Arg, Spec, case

BLOCKS = 8
BLOCK = 64


def grid_sync_kernel(blocks: int, block: int):
    """Each block writes its slice of W, waits for the whole grid, then reads the slice the
    next block wrote: without a grid-wide barrier a block may read a slice not yet written."""
    n = blocks * block

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), W: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(blocks, threads=block) as bx:
            tx = T.get_thread_binding()
            W[bx * block + tx] = X[bx * block + tx] * 2.0
            T.sync_grid()
            Y[bx * block + tx] = W[((bx + 1) % blocks) * block + tx] + 1.0

    return main


@case("sync.grid", feature="sync", needs=("float32", "cooperative_launch"), claims=("cooperative_launch",),
      min_level="codegen")
def sync_grid():
    """T.sync_grid between a write and a read of another block's slice: each block reads what
    the next block wrote, which only a grid-wide barrier guarantees is there."""
    n = BLOCKS * BLOCK

    def expect(X):
        w = X * 2
        return {"W": w, "Y": np.roll(w, -BLOCK) + 1}

    return Spec(grid_sync_kernel(BLOCKS, BLOCK),
                [Arg("X", (n,), "float32"), Arg("W", (n,), "float32", "out"), Arg("Y", (n,), "float32", "out")],
                expect)
