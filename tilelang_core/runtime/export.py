"""Export a compiled kernel to a directory, and load it back without the compiler.

Layout of an export directory: `kernel.json` (the `KernelMeta`: launch metadata and the
argument contract), the device binary (`meta.binary_name`; for a function of several launches
one binary per launch, named by each launch's meta), and the generated source for reading
(`kernel.src`).

The format is versioned (`format_version` in `kernel.json`, `FORMAT_VERSION` here): `load`
refuses a folder written by a newer format, and a damaged or foreign folder (not JSON, fields
missing or of the wrong type, a binary missing) gets an `ExportFormatError` naming the file
and what is wrong.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from .base import KernelMeta
from .kernel import Kernel

__all__ = ["ExportFormatError", "FORMAT_VERSION", "export_kernel", "load", "read_binary", "write_binary"]

# the newest export format this version reads and writes (KernelMeta.format_version)
FORMAT_VERSION = 1


class ExportFormatError(ValueError):
    """An export folder that is damaged, foreign, or of a newer format than this version reads."""

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
    meta = read_meta(meta_path)
    missing = [name for name in meta.binary_names if not (root / name).is_file()]
    if missing:
        raise ExportFormatError(f"{root / missing[0]}: the device binary named by {META_FILE} is missing; "
                                "export the kernel again (kernel.export(path))")
    binary = read_binary(root, meta)
    source_path = root / SOURCE_FILE
    source = source_path.read_text(errors="replace") if source_path.exists() else None
    target = get_plugin_manager().parse_target(meta.target)
    runtime = hooks_for(target).runtime()
    return Kernel(meta, binary, runtime, source)


def read_meta(meta_path: Path) -> KernelMeta:
    """The `KernelMeta` in an export's `kernel.json`, or an `ExportFormatError` naming the file
    and what is wrong with it."""
    fix = "export the kernel again (kernel.export(path)) with this version"
    try:
        data = json.loads(meta_path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ExportFormatError(f"{meta_path}: not UTF-8 text (byte {err.start}); the file is damaged or not a "
                                f"tilelang export: {fix}") from None
    except ValueError as err:
        raise ExportFormatError(f"{meta_path}: not valid JSON ({err}); the file is damaged or truncated: {fix}") from None
    if not isinstance(data, dict):
        raise ExportFormatError(f"{meta_path}: expected a JSON object, got {type(data).__name__}; not a tilelang "
                                f"export: {fix}")
    version = data.get("format_version", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise ExportFormatError(f"{meta_path}: format_version is {version!r}, not an integer: {fix}")
    if version > FORMAT_VERSION:
        raise ExportFormatError(f"{meta_path}: export format version {version} is newer than this tilelang-core "
                                f"reads (up to {FORMAT_VERSION}); upgrade tilelang-core, or export the kernel "
                                "again with this version")
    missing = [k for k in ("target", "entry", "params", "grid", "block", "out_idx", "symbols") if k not in data]
    if missing:
        raise ExportFormatError(f"{meta_path}: the fields {', '.join(missing)} are missing; not a tilelang "
                                f"kernel export (or a damaged one): {fix}")
    try:
        return KernelMeta.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ExportFormatError(f"{meta_path}: a field has the wrong shape ({type(err).__name__}: {err}): "
                                f"{fix}") from None
