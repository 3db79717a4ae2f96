"""Pictures of fragment layouts: which thread holds each element, in which register slot.

`plot_layout(fragment, path)` writes an SVG (one cell per element, coloured by the first
thread that holds it, labelled `T<thread>` and `S<slot>`, replicas listed) or a PNG (the
colours only, `cell` pixels per element), chosen by the file's suffix. A 1-D tile is drawn as
one row; a tile of more dims as its last two, one picture per index of the others is not
drawn (FragmentError). No plotting library is needed: both formats are written here.
"""
from __future__ import annotations

import colorsys
import struct
import zlib
from pathlib import Path

import numpy as np

from .fragment_model import Fragment, FragmentError

__all__ = ["plot_layout", "thread_colors"]


def thread_colors(threads: int) -> np.ndarray:
    """An RGB colour (0-255) per thread: warps of 32 threads step through hues, lanes inside
    a warp through lightness, so warps and lanes both show."""
    out = np.zeros((threads, 3), np.uint8)
    warps = max(1, (threads + 31) // 32)
    for t in range(threads):
        hue = (t // 32) / warps
        light = 0.45 + 0.35 * ((t % 32) / 31 if threads > 1 else 0)
        out[t] = [int(255 * c) for c in colorsys.hls_to_rgb(hue, light, 0.65)]
    return out


def _grid(fragment: Fragment) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first holder, slot, all holders) per element, as 2-D arrays."""
    if len(fragment.shape) > 2:
        raise FragmentError(f"plot_layout draws 1-D and 2-D tiles; {fragment.name} has shape {fragment.shape}")
    shape = (1, fragment.shape[0]) if len(fragment.shape) == 1 else fragment.shape
    holders = fragment.holder_table().reshape(*shape, fragment.replicate)
    slots = fragment.slot_table().reshape(shape)
    return holders[..., 0], slots, holders


def _svg(fragment: Fragment, cell: int) -> str:
    first, slots, holders = _grid(fragment)
    colors = thread_colors(fragment.threads)
    rows, cols = first.shape
    w, h = cols * cell + 2, rows * cell + 2 + 24
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="monospace">',
             f'<text x="2" y="16" font-size="13">{fragment.name} {fragment.shape}: {fragment.threads} threads, '
             f'{fragment.slots} slots, replicate {fragment.replicate}</text>']
    size = max(6, cell // 4)
    for i in range(rows):
        for j in range(cols):
            t = int(first[i, j])
            r, g, b = (int(c) for c in colors[t])
            x, y = 1 + j * cell, 25 + i * cell
            reps = ",".join(str(int(x_)) for x_ in holders[i, j])
            parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="rgb({r},{g},{b})" '
                         f'stroke="white" stroke-width="0.5"><title>[{i},{j}] threads {reps} slot '
                         f'{int(slots[i, j])}</title></rect>')
            parts.append(f'<text x="{x + 2}" y="{y + size + 1}" font-size="{size}">T{t}</text>')
            parts.append(f'<text x="{x + 2}" y="{y + 2 * size + 2}" font-size="{size}">S{int(slots[i, j])}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _png(fragment: Fragment, cell: int) -> bytes:
    first, _, _ = _grid(fragment)
    colors = thread_colors(fragment.threads)
    image = colors[first]  # rows x cols x 3
    image = np.repeat(np.repeat(image, cell, axis=0), cell, axis=1)
    if cell >= 4:  # a one-pixel white grid between cells
        image[::cell, :, :] = 255
        image[:, ::cell, :] = 255
    height, width, _ = image.shape
    raw = b"".join(b"\x00" + image[y].tobytes() for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")


def plot_layout(fragment: Fragment, path, cell: int = 32) -> Path:
    """Draw `fragment` to `path` (".svg" or ".png"); returns the path."""
    path = Path(path)
    if path.suffix.lower() == ".svg":
        path.write_text(_svg(fragment, cell))
    elif path.suffix.lower() == ".png":
        path.write_bytes(_png(fragment, cell))
    else:
        raise ValueError(f"plot_layout: {path.name} must end in .svg or .png")
    return path
