"""`T.im2col`: gather the patches a 2-D convolution reads into a (pixels x taps) tile.

Written in the language itself (a parallel loop nest with a guarded load), so every backend
runs it and layout inference places it like any other `T.Parallel` loop.
"""
from __future__ import annotations

from typing import Any

from tvm.tirx.script.builder import ir as _builder

__all__ = ["im2col", "c2d_im2col"]


def im2col(img: Any, col: Any, nhw_step: Any, c_step: Any, kernel: int, stride: int, dilation: int, pad: int,
           eviction_policy: str | None = None, annotations: dict | None = None) -> None:
    """Fill `col` (block_M x block_K) with tile (`nhw_step`, `c_step`) of the im2col matrix of
    `img` (N, H, W, C), for a square `kernel` with `stride`, `dilation` and zero padding `pad`.

    Row `m = nhw_step * block_M + r` is output pixel (n, oh, ow) in row-major order; column
    `k = c_step * block_K + c` is tap (kh, kw, ci) with `k = (kh * kernel + kw) * C + ci`, the
    row order of the weights (KH, KW, C, F) flattened to (KH*KW*C, F). Taps in the padding and
    rows or columns past the matrix read 0. `eviction_policy` is a cache hint and
    `annotations` are accepted for TileLang's signature; neither changes the result.
    """
    if len(img.shape) != 4 or len(col.shape) != 2:
        raise ValueError(f"T.im2col(img, col, ...): img must be (N, H, W, C) and col (block_M, block_K); got "
                         f"{list(img.shape)} and {list(col.shape)}")
    n_img, height, width, channels = img.shape
    rows, cols = col.shape
    out_h = (height + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
    out_w = (width + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
    with _builder.parallel(0, rows) as r, _builder.parallel(0, cols) as c:
        m = nhw_step * rows + r
        k = c_step * cols + c
        n, oh, ow = m // (out_h * out_w), (m // out_w) % out_h, m % out_w
        kh, kw, ci = k // (kernel * channels), (k // channels) % kernel, k % channels
        ih = oh * stride + kh * dilation - pad
        iw = ow * stride + kw * dilation - pad
        inside = _builder.And(_builder.And(m < n_img * out_h * out_w, k < kernel * kernel * channels),
                              _builder.And(_builder.And(ih >= 0, ih < height), _builder.And(iw >= 0, iw < width)))
        zero = _builder.cast(0, str(col.dtype))
        _builder.buffer_store(col, _builder.if_then_else(inside, img[n, ih, iw, ci], zero), [r, c])


c2d_im2col = im2col  # TileLang's older name
