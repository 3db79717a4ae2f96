"""The persistent kernel cache: one directory per key, written atomically.

Several processes may compile the same kernel at once: each writes into its own temporary
directory and renames it into place; a file lock per key keeps the work to one of them.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from .. import env
from ..runtime.base import KernelMeta
from ..runtime.export import META_FILE, SOURCE_FILE, read_binary, write_binary

__all__ = ["KernelCache", "cache_key", "core_fingerprint", "package_fingerprint", "source_fingerprint"]


def source_fingerprint(root: Path) -> str:
    """A digest of the Python and header files under `root` (path, size, modification time)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".h") and "__pycache__" not in path.parts:
            stat = path.stat()
            digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def core_fingerprint() -> str:
    """A digest of the core's own files: a changed pass or printer must not hit kernels cached
    by the old one. Computed once per process."""
    return source_fingerprint(Path(__file__).resolve().parents[1])


@functools.lru_cache(maxsize=None)
def package_fingerprint(module_name: str) -> str:
    """A digest of the files of the package that holds module `module_name` (a backend's
    plugin module): a changed lowering in a backend must not hit kernels its old one built."""
    import importlib

    module = importlib.import_module(module_name)
    path = Path(getattr(module, "__file__", "") or "").resolve()
    if not path.name:
        return "unknown"
    return source_fingerprint(path.parent)


def cache_key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


class KernelCache:
    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else env.cache_dir()

    def _dir(self, key: str) -> Path:
        return self.root / "kernels" / key[:2] / key

    def get(self, key: str) -> tuple[KernelMeta, bytes | tuple[bytes, ...], str] | None:
        path = self._dir(key)
        try:
            meta = KernelMeta.from_json((path / META_FILE).read_text())
            binary = read_binary(path, meta)
            source = (path / SOURCE_FILE).read_text()
        except (OSError, ValueError, KeyError):
            return None
        return meta, binary, source

    def get_or_build(self, key: str, build: Callable[[], tuple[KernelMeta, bytes, str]]):
        """The cached entry, or `build()` stored under `key` (at most once across processes)."""
        hit = self.get(key)
        if hit is not None:
            return hit, True
        path = self._dir(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        from filelock import FileLock  # on a miss only: importing it costs milliseconds

        with FileLock(str(path) + ".lock"):
            hit = self.get(key)
            if hit is not None:
                return hit, True
            meta, binary, source = build()
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=path.parent))
            try:
                write_binary(tmp, meta, binary)
                (tmp / SOURCE_FILE).write_text(source)
                (tmp / META_FILE).write_text(meta.to_json())
                if path.exists():
                    shutil.rmtree(path)
                os.replace(tmp, path)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
            return (meta, binary, source), False
