"""The persistent kernel cache: one directory per key, written atomically.

Several processes may compile the same kernel at once: each writes into its own temporary
directory and renames it into place; a file lock per key keeps the work to one of them.

Each entry carries `checksum.json`: its key and a SHA-256 per file. A load verifies both, so
a truncated, bit-flipped or swapped file (or a whole entry moved under another key) is never
loaded: the entry is moved to `<root>/quarantine/` and rebuilt, with a `KernelCacheWarning`
naming it. A cache directory that cannot be written (read-only, a file in the way) makes the
compile run without the disk cache, with a warning.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable

from .. import env
from ..runtime.base import KernelMeta
from ..runtime.export import META_FILE, SOURCE_FILE, write_binary

__all__ = ["KernelCache", "KernelCacheWarning", "cache_key", "core_fingerprint", "package_fingerprint", "source_fingerprint"]


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


class KernelCacheWarning(UserWarning):
    """The disk cache held a damaged entry (rebuilt) or could not be written (bypassed)."""


CHECKSUM_FILE = "checksum.json"
CHECKSUM_FORMAT = 1


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _DamagedEntry(Exception):
    """A cache entry whose files do not match its checksum (the message says which)."""


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
        """The verified entry under `key`; None on a miss. A damaged entry is quarantined
        (with a `KernelCacheWarning` naming it) and reads as a miss."""
        path = self._dir(key)
        if not path.is_dir():
            return None
        try:
            return self._read_verified(path, key)
        except _DamagedEntry as err:
            self._quarantine(path, str(err))
            return None

    def _read_verified(self, path: Path, key: str):
        files: dict[str, bytes] = {}
        try:
            record = json.loads((path / CHECKSUM_FILE).read_text())
            if not isinstance(record, dict) or not isinstance(record.get("files"), dict):
                raise ValueError("not a checksum record")
        except (OSError, ValueError) as err:
            raise _DamagedEntry(f"{CHECKSUM_FILE} is missing or unreadable ({err})") from None
        if record.get("key") != key:
            raise _DamagedEntry(f"it holds the entry of key {str(record.get('key'))[:16]}..., not this one "
                                "(a swapped or moved entry)")
        for name, want in record["files"].items():
            try:
                files[name] = (path / name).read_bytes()
            except OSError as err:
                raise _DamagedEntry(f"{name} cannot be read ({err.strerror or err})") from None
            got = _digest(files[name])
            if got != want:
                raise _DamagedEntry(f"{name} does not match its checksum ({len(files[name])} bytes, sha256 "
                                    f"{got[:12]}..., recorded {str(want)[:12]}...): truncated, corrupted or swapped")
        try:
            meta = KernelMeta.from_json(files[META_FILE].decode())
            missing = [n for n in (*meta.binary_names, SOURCE_FILE) if n not in files]
            if missing:
                raise ValueError(f"the checksum does not cover {', '.join(missing)}")
            binary = tuple(files[n] for n in meta.binary_names)
            source = files[SOURCE_FILE].decode()
        except (KeyError, ValueError, TypeError, UnicodeDecodeError) as err:
            raise _DamagedEntry(f"its metadata is unreadable ({type(err).__name__}: {err})") from None
        return meta, (binary if meta.launches else binary[0]), source

    def _quarantine(self, path: Path, reason: str) -> None:
        target = self.root / "quarantine" / f"{path.name}-{time.time_ns()}"
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
            kept = f"the damaged copy is kept at {target}"
        except OSError:
            shutil.rmtree(path, ignore_errors=True)
            kept = "it was removed"
        warnings.warn(f"tilelang: kernel cache entry {path} is damaged: {reason}; {kept}, and the kernel "
                      "is rebuilt", KernelCacheWarning, stacklevel=4)

    def _write(self, path: Path, key: str, meta: KernelMeta, binary, source: str) -> None:
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=path.parent))
        try:
            write_binary(tmp, meta, binary)
            (tmp / SOURCE_FILE).write_text(source)
            (tmp / META_FILE).write_text(meta.to_json())
            sums = {p.name: _digest(p.read_bytes()) for p in sorted(tmp.iterdir())}
            record = {"format": CHECKSUM_FORMAT, "key": key, "files": sums}
            (tmp / CHECKSUM_FILE).write_text(json.dumps(record, indent=1, sort_keys=True))
            if path.exists():
                shutil.rmtree(path)
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    def _unwritable(self, err: OSError) -> None:
        warnings.warn(f"tilelang: the kernel cache directory {self.root} cannot be written "
                      f"({type(err).__name__}: {err}); compiling without the disk cache. Set "
                      "TILELANG_CACHE_DIR to a writable directory", KernelCacheWarning, stacklevel=4)

    def get_or_build(self, key: str, build: Callable[[], tuple[KernelMeta, bytes, str]]):
        """The cached entry, or `build()` stored under `key` (at most once across processes).
        Without a writable cache directory: `build()`, uncached, with a warning."""
        hit = self.get(key)
        if hit is not None:
            return hit, True
        path = self._dir(key)
        from filelock import FileLock  # on a miss only: importing it costs milliseconds

        lock = FileLock(str(path) + ".lock")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            lock.acquire()
        except OSError as err:
            self._unwritable(err)
            return build(), False
        try:
            hit = self.get(key)
            if hit is not None:
                return hit, True
            meta, binary, source = build()
            try:
                self._write(path, key, meta, binary, source)
            except OSError as err:
                self._unwritable(err)
            return (meta, binary, source), False
        finally:
            lock.release()
