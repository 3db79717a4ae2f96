"""Export a compiled kernel to a directory, and load it back without the compiler.

Layout of an export directory: `kernel.json` (the `KernelMeta`: launch metadata and the
argument contract), the device binary (`meta.binary_name`), and the generated source for
reading (`kernel.src`).
"""
from __future__ import annotations

import os
from pathlib import Path

from .base import KernelMeta
from .kernel import Kernel

__all__ = ["export_kernel", "load"]

META_FILE = "kernel.json"
SOURCE_FILE = "kernel.src"


def export_kernel(kernel: Kernel, path: str | os.PathLike) -> Path:
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    (out / kernel.meta.binary_name).write_bytes(kernel.binary)
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
    binary = (root / meta.binary_name).read_bytes()
    source_path = root / SOURCE_FILE
    source = source_path.read_text() if source_path.exists() else None
    target = get_plugin_manager().parse_target(meta.target)
    runtime = hooks_for(target).runtime()
    return Kernel(meta, binary, runtime, source)
