"""Every environment variable the project reads, read here and nowhere else."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["enabled_backends", "default_target", "cache_dir", "cache_secret_file", "host_c_compiler", "debug", "kernel_memo_size"]


def enabled_backends() -> list[str] | None:
    """`TILELANG_BACKENDS=name1,name2`: load only these entry points (None: load all)."""
    raw = os.environ.get("TILELANG_BACKENDS", "").strip()
    if not raw:
        return None
    return [name.strip() for name in raw.split(",") if name.strip()]


def default_target() -> str:
    """`TILELANG_TARGET`: the target used when a call names none (default: auto)."""
    return os.environ.get("TILELANG_TARGET", "").strip() or "auto"


def cache_dir() -> Path:
    """`TILELANG_CACHE_DIR`, else the user's cache directory."""
    raw = os.environ.get("TILELANG_CACHE_DIR", "").strip()
    if raw:
        return Path(raw).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base).expanduser() if base else Path.home() / ".cache"
    return root / "tilelang-core"


def cache_secret_file() -> Path:
    """`TILELANG_CACHE_SECRET_FILE`, else `cache-secret` in the user's config directory
    (`XDG_CONFIG_HOME`, else ~/.config, then tilelang-core/): the per-user key that
    authenticates disk cache entries. Kept outside the cache so a writer of a shared cache
    directory cannot read it (docs/security.md)."""
    raw = os.environ.get("TILELANG_CACHE_SECRET_FILE", "").strip()
    if raw:
        return Path(raw).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    root = Path(base).expanduser() if base else Path.home() / ".config"
    return root / "tilelang-core" / "cache-secret"


def host_c_compiler() -> str | None:
    """`TILELANG_CC` or `CC`: the host C compiler (for backends that build host code) (None: search the PATH)."""
    return os.environ.get("TILELANG_CC") or os.environ.get("CC") or None


def debug() -> bool:
    """`TILELANG_DEBUG=1`: keep intermediate files and print pass dumps."""
    return os.environ.get("TILELANG_DEBUG", "") not in ("", "0")


def kernel_memo_size() -> int:
    """`TILELANG_KERNEL_MEMO_SIZE`: how many compiled kernels `compile` keeps in memory for
    repeated calls (least recently used dropped first; default 256, 0 keeps none)."""
    raw = os.environ.get("TILELANG_KERNEL_MEMO_SIZE", "").strip()
    if not raw:
        return 256
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"TILELANG_KERNEL_MEMO_SIZE={raw!r} is not an integer; set it to how many kernels "
                         "to keep (e.g. 256), or 0 to keep none") from None
    if value < 0:
        raise ValueError(f"TILELANG_KERNEL_MEMO_SIZE={value} is negative; set it to 0 or more")
    return value
