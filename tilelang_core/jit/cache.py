"""The persistent kernel cache: one directory per key, written atomically.

Several processes may compile the same kernel at once: each writes into its own temporary
directory and renames it into place; a file lock per key keeps the work to one of them.

Each entry carries `checksum.json`: its key, a SHA-256 per file, and an HMAC-SHA256 of both
under the user's cache secret (a random key in a 0600 file outside the cache,
`env.cache_secret_file()`, made on first use). A load verifies all three, so a truncated,
bit-flipped or swapped file, a whole entry moved under another key, or an entry written by
anyone who does not hold the secret (another user of a shared directory) is never loaded: the
entry is moved to `<root>/quarantine/` and rebuilt, with a `KernelCacheWarning` naming it. An
entry of the older unauthenticated format is rebuilt silently.

A cache directory that cannot be written (read-only, a file in the way), or that cannot be
trusted (owned by another user, or writable by users other than its owner, as pip refuses),
or a secret that cannot be made or is readable by others, makes the compile run without the
disk cache, with one warning per process saying why and what to do.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable

from .. import env
from ..runtime.base import KernelMeta
from ..runtime.export import META_FILE, SOURCE_FILE, write_binary

__all__ = ["KernelCache", "KernelCacheWarning", "cache_key", "cache_secret", "core_fingerprint", "package_fingerprint", "source_fingerprint"]


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
CHECKSUM_FORMAT = 2  # 2: authenticated with the user's cache secret

# why a cache root (or the secret) cannot be used, per path: decided, and warned about, once
_DISTRUSTED: dict[str, str | None] = {}
_SECRETS: dict[str, bytes | str] = {}  # secret file -> its key, or why it cannot be used


def _writable_by_others(path: Path) -> str | None:
    """Why `path` (an existing directory) must not be trusted: owned by another user, or
    writable by other users. None where it can be, or where the OS has no owners."""
    if not hasattr(os, "getuid"):
        return None
    try:
        st = path.stat()
    except OSError:
        return None  # absent (made 0700 by us) or unreadable (reported when it is written)
    if st.st_uid != os.getuid():
        return f"{path} is owned by another user (uid {st.st_uid}; you are uid {os.getuid()})"
    if st.st_mode & 0o002:
        return f"{path} is writable by every user (mode {st.st_mode & 0o7777:#o})"
    if st.st_mode & 0o020 and st.st_gid != os.getgid():
        return f"{path} is writable by group {st.st_gid} (mode {st.st_mode & 0o7777:#o})"
    return None


def cache_secret(path: Path | None = None) -> bytes:
    """The per-user key that authenticates cache entries, read from `path` (default
    `env.cache_secret_file()`), made there (32 random bytes, mode 0600) on first use. Raises
    `OSError` saying why when it cannot be made, or is readable or owned by another user."""
    path = Path(path) if path is not None else env.cache_secret_file()
    found = _SECRETS.get(str(path))
    if found is None:
        try:
            found = _read_or_make_secret(path)
        except OSError as err:
            found = str(err)
        _SECRETS[str(path)] = found
    if isinstance(found, str):
        raise OSError(found)
    return found


def _read_or_make_secret(path: Path) -> bytes:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
            try:
                os.link(tmp, path)  # atomic and never overwrites: two processes agree on one secret
            except FileExistsError:
                pass
        finally:
            os.unlink(tmp)
    if hasattr(os, "getuid"):
        st = path.stat()
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise OSError(f"the cache secret {path} is owned by another user or readable by others (mode "
                          f"{st.st_mode & 0o777:#o}); remove it (a new one is made) or chmod 600 it")
    key = path.read_text().strip()
    if len(key) < 32:
        raise OSError(f"the cache secret {path} is damaged (shorter than 32 characters); remove it (a new one is made)")
    return key.encode()


def _record_mac(secret: bytes, key: str, files: dict) -> str:
    body = json.dumps({"files": files, "key": key}, sort_keys=True, separators=(",", ":")).encode()
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


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


class _StaleEntry(Exception):
    """An entry of an older checksum format: rebuilt without a warning."""


class KernelCache:
    def __init__(self, root: Path | None = None, secret_file: Path | None = None) -> None:
        self.root = Path(root) if root is not None else env.cache_dir()
        self.secret_file = secret_file

    def usable(self) -> bool:
        """Whether the disk cache can be trusted here: the root is the user's and no one else
        can write it, and the cache secret is available. If not, warns once per process and
        per reason, and the cache is bypassed."""
        if str(self.root) not in _DISTRUSTED:
            problem = _writable_by_others(self.root) or _writable_by_others(self.root / "kernels")
            if problem:
                problem = (f"tilelang: not using the kernel cache directory {self.root}: {problem}, so another user "
                           "could plant kernels in it; compiling without the disk cache. Use a directory only you "
                           "can write (chmod go-w, or set TILELANG_CACHE_DIR; see docs/security.md)")
            else:
                try:
                    cache_secret(self.secret_file)
                except OSError as err:
                    problem = (f"tilelang: the kernel cache secret cannot be used ({err}); compiling without the "
                               "disk cache. Set TILELANG_CACHE_SECRET_FILE to a file only you can read")
            _DISTRUSTED[str(self.root)] = problem
            if problem:
                warnings.warn(problem, KernelCacheWarning, stacklevel=4)
        return _DISTRUSTED[str(self.root)] is None

    def _dir(self, key: str) -> Path:
        return self.root / "kernels" / key[:2] / key

    def get(self, key: str) -> tuple[KernelMeta, bytes | tuple[bytes, ...], str] | None:
        """The verified entry under `key`; None on a miss. A damaged entry is quarantined
        (with a `KernelCacheWarning` naming it) and reads as a miss."""
        path = self._dir(key)
        if not path.is_dir() or not self.usable():
            return None
        try:
            return self._read_verified(path, key)
        except _StaleEntry:
            return None
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
        if record.get("format") != CHECKSUM_FORMAT:
            raise _StaleEntry()
        mac = record.get("hmac_sha256")
        expected = _record_mac(cache_secret(self.secret_file), str(record.get("key")), record["files"])
        if not isinstance(mac, str) or not hmac.compare_digest(mac, expected):
            raise _DamagedEntry("it is not authenticated by your cache secret: written by another user or process "
                                "that does not hold it, or forged")
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
            record = {"format": CHECKSUM_FORMAT, "key": key, "files": sums,
                      "hmac_sha256": _record_mac(cache_secret(self.secret_file), key, sums)}
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
        if not self.usable():
            return build(), False
        hit = self.get(key)
        if hit is not None:
            return hit, True
        path = self._dir(key)
        from filelock import FileLock  # on a miss only: importing it costs milliseconds

        lock = FileLock(str(path) + ".lock")
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
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
