"""`plot_layout`: pictures of `T.Layout` index maps and `T.Fragment` register layouts."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["plot_layout"]


def _evaluate(index_map, shape: tuple[int, ...], extra: tuple[int, ...] = ()) -> np.ndarray:
    """The index map at every index of `shape` (plus fixed trailing `extra` inputs): an array
    of shape `shape + (outputs,)` of ints."""
    import tvm
    from tvm.sym import Analyzer

    ana = Analyzer()
    dtype = str(index_map.initial_indices[0].ty.dtype) if index_map.initial_indices else "int64"
    out = None
    for flat, idx in enumerate(np.ndindex(*shape)):
        values = [ana.simplify(v) for v in index_map.map_indices(
            [tvm.tirx.const(int(i), dtype) for i in (*idx, *extra)])]
        row = [int(v) for v in values]
        if out is None:
            out = np.zeros((*shape, len(row)), np.int64)
        out[idx] = row
    return out


def _color(value: int, count: int) -> str:
    import colorsys

    r, g, b = colorsys.hls_to_rgb((value % max(count, 1)) / max(count, 1), 0.62, 0.6)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def _svg(labels: np.ndarray, colors: np.ndarray, title: str, cell: int = 44) -> str:
    rows, cols = labels.shape
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{cols * cell + 20}" height="{rows * cell + 40}" '
             f'font-family="monospace" font-size="{max(7, cell // 5)}">',
             f'<text x="10" y="18">{title}</text>']
    for r in range(rows):
        for c in range(cols):
            x, y = 10 + c * cell, 28 + r * cell
            parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{colors[r, c]}" stroke="#333"/>')
            parts.append(f'<text x="{x + 3}" y="{y + cell // 2 + 3}">{labels[r, c]}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def plot_layout(layout: Any, save_directory: str | Path = "./tmp", name: str = "layout", colormap: str | None = None,
                verbose: bool = False, formats: str | list[str] = "png", **_: Any) -> list[Path]:
    """Draw `layout` (a `T.Layout` or `T.Fragment`; a tile of more than two dims is drawn with
    all but its last dim as rows) into
    `save_directory/name.<format>` for each of `formats` ("png", "svg", "pdf" is written as SVG
    content under .svg; "all": png and svg); returns the files written. A Layout's cell shows
    where the element lives (its physical index); a Fragment's, the thread and register slot
    that hold it (replica 0). `colormap` is accepted for TileLang's signature and not used."""
    shape = tuple(int(d) for d in layout.shape)
    # rows: every dim but the last (a 3-D tile [2, 4, 8] is drawn as 8 rows of 8)
    grid = (int(np.prod(shape[:-1])), shape[-1]) if len(shape) >= 2 else (1, shape[0])
    is_fragment = type(layout).__name__ == "Fragment"
    extra = (0,) if is_fragment else ()
    mapped = _evaluate(layout.index_map, shape, extra).reshape(*grid, -1)
    if is_fragment:
        threads = mapped[..., 0]
        labels = np.vectorize(lambda t, s: f"T{t}:{s}")(threads, mapped[..., 1])
        colors = np.vectorize(lambda t: _color(int(t) // 4, int(threads.max()) // 4 + 1))(threads)
    else:
        labels = np.vectorize(lambda *v: ",".join(str(int(x)) for x in v))(*np.moveaxis(mapped, -1, 0))
        linear = np.ravel_multi_index(tuple(np.moveaxis(mapped, -1, 0)), tuple(mapped.reshape(-1, mapped.shape[-1]).max(0) + 1))
        colors = np.vectorize(lambda v: _color(int(v), int(linear.max()) + 1))(linear)
    wanted = ["png", "svg"] if formats == "all" else [formats] if isinstance(formats, str) else list(formats)
    folder = Path(save_directory)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    title = f"{name}: {'Fragment' if is_fragment else 'Layout'} of shape {shape}"
    for fmt in wanted:
        fmt = fmt.lower().lstrip(".")
        if fmt == "png":
            written.append(_png(colors, folder / f"{name}.png"))
        elif fmt in ("svg", "pdf"):
            path = folder / f"{name}.svg"
            path.write_text(_svg(labels, colors, title))
            written.append(path)
        else:
            raise ValueError(f"plot_layout: unknown format {fmt!r}; use 'png', 'svg' or 'all'")
    if verbose:
        print(title)
        for row in labels:
            print("  " + " ".join(f"{x:>7}" for x in row))
    return written


def _png(colors: np.ndarray, path: Path, cell: int = 16) -> Path:
    import struct
    import zlib

    rows, cols = colors.shape
    rgb = np.array([[[int(c[i:i + 2], 16) for i in (1, 3, 5)] for c in row] for row in colors], np.uint8)
    image = np.repeat(np.repeat(rgb, cell, 0), cell, 1)
    image[::cell, :, :] = 40
    image[:, ::cell, :] = 40
    raw = b"".join(b"\x00" + image[r].tobytes() for r in range(image.shape[0]))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", image.shape[1], image.shape[0], 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6))
                     + chunk(b"IEND", b""))
    return path
