"""Finding the pieces of the MUSA software stack, each on its own, without failing.

- `mcc`: the MUSA SDK's compiler (`$MUSA_HOME/bin/mcc`, `/usr/local/musa/bin/mcc`, or on PATH);
- `libmtrtc`: the SDK's runtime compiler library (found, reported; compiling goes through mcc);
- `libmusa`: the driver library (`muInit`, `muModuleLoadData`, `muLaunchKernel`, ...);
- `torch_musa`: PyTorch's MUSA device ("musa" tensors, streams); not on PyPI.

`MUSA_HOME` is read here and nowhere else in the backend (the core's `tilelang_core.env`
holds only the project's own variables). Every finder returns None, never raises.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import shutil
from pathlib import Path

__all__ = ["musa_home", "find_mcc", "find_mtrtc", "load_driver", "import_torch_musa", "missing_summary"]

_DEFAULT_HOME = Path("/usr/local/musa")


def musa_home() -> Path | None:
    """The MUSA SDK's root: `$MUSA_HOME`, else /usr/local/musa when it exists."""
    raw = os.environ.get("MUSA_HOME", "").strip()
    if raw:
        return Path(raw)
    return _DEFAULT_HOME if _DEFAULT_HOME.is_dir() else None


@functools.lru_cache(maxsize=None)
def find_mcc() -> str | None:
    home = musa_home()
    if home is not None and (home / "bin" / "mcc").is_file():
        return str(home / "bin" / "mcc")
    return shutil.which("mcc")


def _find_library(name: str) -> str | None:
    home = musa_home()
    if home is not None:
        for sub in ("lib", "lib64"):
            for path in sorted((home / sub).glob(f"lib{name}.so*")) if (home / sub).is_dir() else ():
                return str(path)
    return ctypes.util.find_library(name)


@functools.lru_cache(maxsize=None)
def find_mtrtc() -> str | None:
    return _find_library("mtrtc")


@functools.lru_cache(maxsize=None)
def load_driver() -> tuple[ctypes.CDLL | None, str]:
    """(libmusa, "") once it loads and `muInit(0)` succeeds, else (None, why not)."""
    path = _find_library("musa")
    if path is None:
        return None, "libmusa (the MUSA driver library) not found: install the MUSA driver"
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        return None, f"libmusa at {path} does not load ({exc})"
    try:
        status = lib.muInit(0)
    except AttributeError:
        return None, f"{path} has no muInit: not a MUSA driver library"
    if status != 0:
        return None, f"muInit failed with MUresult {status} (no MUSA device, or the driver is not running)"
    return lib, ""


def import_torch_musa():
    """The `torch_musa` module, or None when it is not installed."""
    try:
        import torch_musa  # noqa: F401 - registers torch.musa
    except Exception:  # noqa: BLE001 - ImportError, or a build that does not match torch
        return None
    return torch_musa


def missing_summary() -> list[str]:
    """One line per missing piece, in the order a user installs them."""
    lines = []
    if find_mcc() is None:
        lines.append("no mcc (set MUSA_HOME to the MUSA SDK, or put mcc on PATH)")
    if find_mtrtc() is None:
        lines.append("no libmtrtc")
    lib, why = load_driver()
    if lib is None:
        lines.append(why)
    if import_torch_musa() is None:
        lines.append("no torch_musa (PyTorch for MUSA, from Moore Threads; not on PyPI)")
    return lines
