"""Export a compiled kernel to a directory, and load it back without the compiler.

Layout of an export directory: `kernel.json` (the `KernelMeta`: launch metadata and the
argument contract), the device binary (`meta.binary_name`; for a function of several launches
one binary per launch, named by each launch's meta), and the generated source for reading
(`kernel.src`).
"""
from __future__ import annotations

import os
from pathlib import Path

from .base import KernelMeta
from .kernel import Kernel

__all__ = ["export_kernel", "load", "read_binary", "write_binary"]

META_FILE = "kernel.json"
SOURCE_FILE = "kernel.src"


def write_binary(root: Path, meta: KernelMeta, binary: bytes | tuple[bytes, ...]) -> None:
    """Write a kernel's device code under `root`: one file, or one per launch."""
    blobs = tuple(binary) if meta.launches else (binary,)
    for name, blob in zip(meta.binary_names, blobs, strict=True):
        (root / name).write_bytes(blob)


def read_binary(root: Path, meta: KernelMeta) -> bytes | tuple[bytes, ...]:
    """The device code `write_binary` wrote: bytes, or a tuple of them for several launches."""
    blobs = tuple((root / name).read_bytes() for name in meta.binary_names)
    return blobs if meta.launches else blobs[0]


def export_kernel(kernel: Kernel, path: str | os.PathLike) -> Path:
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    write_binary(out, kernel.meta, kernel.binary)
    if kernel.source:
        (out / SOURCE_FILE).write_text(kernel.source)
    # the metadata goes last: a directory with kernel.json is complete
    (out / META_FILE).write_text(kernel.meta.to_json())
    return out


def load(path: str | os.PathLike) -> Kernel:
    """A callable kernel from an export directory; needs only the backend's runtime."""
    from ..plugin import get_plugin_manager, hooks_for

    root = Path(path)
    meta_path = root / META_FILE
    if not meta_path.exists():
        raise FileNotFoundError(f"{root} is not an exported kernel: {META_FILE} is missing")
    meta = KernelMeta.from_json(meta_path.read_text())
    binary = read_binary(root, meta)
    source_path = root / SOURCE_FILE
    source = source_path.read_text() if source_path.exists() else None
    target = get_plugin_manager().parse_target(meta.target)
    runtime = hooks_for(target).runtime()
    return Kernel(meta, binary, runtime, source)
