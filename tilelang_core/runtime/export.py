"""Export a compiled kernel to a directory, and load it back without the compiler.

Layout of an export directory: `kernel.json` (the `KernelMeta`: launch metadata and the
argument contract), the device binary (`meta.binary_name`; for a function of several launches
one binary per launch, named by each launch's meta), and the generated source for reading
(`kernel.src`).

The format is versioned (`format_version` in `kernel.json`, `FORMAT_VERSION` here): `load`
refuses a folder written by a newer format, and a damaged or foreign folder (not JSON, fields
missing or of the wrong type, a binary missing) gets an `ExportFormatError` naming the file
and what is wrong.

Integrity (format 2, see docs/security.md): `kernel.json` holds an `integrity` record: the
SHA-256 of every file it names, the SHA-256 of the manifest itself together with those digests
(so an edited shape, entry or launch expression is caught, not trusted), and with
`export(..., key=)` an HMAC-SHA256 of the same bytes under the team's key. `load` verifies all
of it before anything is mapped, and checks that every binary name is a bare file name in the
folder, every launch expression is small and well formed, and that each binary itself defines
its entry function (`Runtime.check_binary`). Without a key this catches damage and careless
edits, not an attacker: whoever can write the folder can write the binary, which is code.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from pathlib import Path

from .base import KernelMeta, compile_launch_expr
from .kernel import Kernel

__all__ = ["ExportFormatError", "ExportSignatureError", "FORMAT_VERSION", "check_file_names", "export_kernel",
           "load", "read_binary", "write_binary"]

# the newest export format this version reads and writes (KernelMeta.format_version);
# 2 added the integrity record
FORMAT_VERSION = 2


class ExportFormatError(ValueError):
    """An export folder that is damaged, foreign, or of a newer format than this version reads."""


class ExportSignatureError(ExportFormatError):
    """`load(path, key=)` of a folder not signed with that key (unsigned, another key, or
    changed after it was signed)."""

META_FILE = "kernel.json"
SOURCE_FILE = "kernel.src"


_BARE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}\Z")
_ENTRY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,255}\Z")
_MAX_FILE_BYTES = 1 << 31  # a kernel binary is kilobytes to megabytes


def check_file_names(meta: KernelMeta, where: str) -> None:
    """Raise `ExportFormatError` unless every binary `meta` names is a bare file name inside
    the folder (no directory part, not `..`, not the manifest or the source) and every entry
    is a C identifier. `where` names the manifest in the message."""
    names = meta.binary_names
    for name in names:
        if not isinstance(name, str) or not _BARE_NAME.match(name) or name in (META_FILE, SOURCE_FILE):
            raise ExportFormatError(f"{where}: binary_name {name!r} is not a bare file name inside the export folder "
                                    "(letters, digits, '_', '.', '-', '+'; no '/', no '..', not kernel.json or "
                                    "kernel.src); export the kernel again (kernel.export(path))")
    if len(set(names)) != len(names):
        raise ExportFormatError(f"{where}: two launches name one binary file ({', '.join(names)})")
    for entry in [meta.entry, *(m.entry for m in meta.launches)]:
        if not isinstance(entry, str) or not _ENTRY.match(entry):
            raise ExportFormatError(f"{where}: entry {entry!r} is not a C identifier; export the kernel again")


def write_binary(root: Path, meta: KernelMeta, binary: bytes | tuple[bytes, ...]) -> None:
    """Write a kernel's device code under `root`: one file, or one per launch."""
    check_file_names(meta, f"kernel {meta.entry!r}")
    blobs = tuple(binary) if meta.launches else (binary,)
    for name, blob in zip(meta.binary_names, blobs, strict=True):
        (root / name).write_bytes(blob)


def read_binary(root: Path, meta: KernelMeta) -> bytes | tuple[bytes, ...]:
    """The device code `write_binary` wrote: bytes, or a tuple of them for several launches."""
    blobs = tuple((root / name).read_bytes() for name in meta.binary_names)
    return blobs if meta.launches else blobs[0]


def _signed_bytes(manifest: dict, files: dict[str, str]) -> bytes:
    """The bytes the manifest digest and the HMAC cover: the manifest (without its integrity
    record) and the digest of every file, as canonical JSON."""
    return json.dumps({"files": files, "manifest": manifest}, sort_keys=True, separators=(",", ":")).encode()


def _key_bytes(key: bytes | str) -> bytes:
    if isinstance(key, str):
        key = key.encode()
    if not isinstance(key, (bytes, bytearray)) or len(key) < 16:
        raise ValueError(f"key: expected bytes or str of at least 16 bytes (e.g. secrets.token_bytes(32)), got "
                         f"{type(key).__name__} of length {len(key) if hasattr(key, '__len__') else '?'}")
    return bytes(key)


def export_kernel(kernel: Kernel, path: str | os.PathLike, key: bytes | str | None = None) -> Path:
    """Write `kernel` to folder `path` (see the module docstring); with `key`, sign it."""
    secret = None if key is None else _key_bytes(key)
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    write_binary(out, kernel.meta, kernel.binary)
    named = list(kernel.meta.binary_names)
    if kernel.source:
        (out / SOURCE_FILE).write_text(kernel.source)
        named.append(SOURCE_FILE)
    manifest = {**kernel.meta.to_dict(), "format_version": FORMAT_VERSION}
    files = {name: hashlib.sha256((out / name).read_bytes()).hexdigest() for name in named}
    signed = _signed_bytes(manifest, files)
    integrity = {"files": files, "sha256": hashlib.sha256(signed).hexdigest()}
    if secret is not None:
        integrity["hmac_sha256"] = hmac.new(secret, signed, hashlib.sha256).hexdigest()
    # the metadata goes last: a directory with kernel.json is complete
    (out / META_FILE).write_text(json.dumps({**manifest, "integrity": integrity}, indent=2, sort_keys=True))
    return out


def load(path: str | os.PathLike, key: bytes | str | None = None) -> Kernel:
    """A callable kernel from an export directory; needs only the backend's runtime.

    Verified before anything is mapped: the digest of every file the manifest names and of
    the manifest itself, the names and launch expressions, and that each binary defines its
    entry. With `key`, the folder must be signed with it (`export(path, key=)`); without,
    load only folders you would take a shared library from (docs/security.md)."""
    from ..plugin import get_plugin_manager, hooks_for

    secret = None if key is None else _key_bytes(key)
    root = Path(path)
    meta_path = root / META_FILE
    if not meta_path.exists():
        raise FileNotFoundError(f"{root} is not an exported kernel: {META_FILE} is missing")
    meta, integrity = read_meta(meta_path)
    missing = [name for name in meta.binary_names if not (root / name).is_file()]
    if missing:
        raise ExportFormatError(f"{root / missing[0]}: the device binary named by {META_FILE} is missing; "
                                "export the kernel again (kernel.export(path))")
    contents = _verified_files(root, meta_path, integrity, secret)
    blobs = tuple(contents.get(name) or (root / name).read_bytes() for name in meta.binary_names)
    source_path = root / SOURCE_FILE
    if SOURCE_FILE in contents:
        source = contents[SOURCE_FILE].decode(errors="replace")
    else:
        source = source_path.read_text(errors="replace") if source_path.exists() else None
    target = get_plugin_manager().parse_target(meta.target)
    runtime = hooks_for(target).runtime()
    for name, blob, launch in zip(meta.binary_names, blobs, meta.launches or (meta,)):
        try:
            runtime.check_binary(blob, launch)
        except ValueError as err:
            raise ExportFormatError(f"{root / name}: not a usable {meta.target} kernel binary: {err}; export the "
                                    "kernel again (kernel.export(path))") from None
    return Kernel(meta, blobs if meta.launches else blobs[0], runtime, source)


def _verified_files(root: Path, meta_path: Path, integrity: dict | None, secret: bytes | None) -> dict[str, bytes]:
    """The files the integrity record names, read and checked against their digests, the
    manifest digest and (with `secret`) the HMAC; {} for an export of format 1 (no record)."""
    if integrity is None:
        if secret is not None:
            raise ExportSignatureError(f"{meta_path}: the export is not signed (format 1, no integrity record) but "
                                       "load(..., key=) was given; export it again with kernel.export(path, key=)")
        return {}
    files = integrity["files"]
    contents: dict[str, bytes] = {}
    for name, want in files.items():
        file = root / name
        try:
            size = file.stat().st_size
            if size > _MAX_FILE_BYTES:
                raise ExportFormatError(f"{file}: {size} bytes, past the {_MAX_FILE_BYTES}-byte limit of a kernel file")
            contents[name] = file.read_bytes()
        except OSError as err:
            raise ExportFormatError(f"{file}: named by {META_FILE} but cannot be read ({err.strerror or err}); "
                                    "export the kernel again (kernel.export(path))") from None
        got = hashlib.sha256(contents[name]).hexdigest()
        if not hmac.compare_digest(got, want):
            raise ExportFormatError(f"{file}: does not match its SHA-256 in {META_FILE} ({len(contents[name])} bytes, "
                                    f"sha256 {got[:12]}..., recorded {want[:12]}...): truncated, damaged or replaced "
                                    "(an interrupted copy?); copy or export the kernel again")
    signed = _signed_bytes(integrity["manifest"], files)
    if not hmac.compare_digest(hashlib.sha256(signed).hexdigest(), integrity["sha256"]):
        raise ExportFormatError(f"{meta_path}: the manifest was changed after export (its SHA-256 does not match the "
                                "one recorded at export): its shapes, entry or launch dims are no longer the ones the "
                                "binary was compiled for; export the kernel again instead of editing kernel.json")
    if secret is not None:
        mac = integrity.get("hmac_sha256")
        if not isinstance(mac, str):
            raise ExportSignatureError(f"{meta_path}: the export is not signed but load(..., key=) was given; sign it "
                                       "with kernel.export(path, key=)")
        if not hmac.compare_digest(hmac.new(secret, signed, hashlib.sha256).hexdigest(), mac):
            raise ExportSignatureError(f"{meta_path}: the signature does not match this key: signed with another key, "
                                       "or the folder was changed after it was signed; do not use it")
    return contents


def read_meta(meta_path: Path) -> tuple[KernelMeta, dict | None]:
    """The `KernelMeta` in an export's `kernel.json` and its integrity record (None for format
    1), or an `ExportFormatError` naming the file and what is wrong with it. The names and
    launch expressions are checked here; the digests by `load`."""
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
    integrity = data.pop("integrity", None)
    if version >= 2 and not _integrity_ok(integrity):
        raise ExportFormatError(f"{meta_path}: the integrity record (file digests) is missing or malformed; the "
                                f"file was edited or damaged: {fix}")
    if integrity is not None:
        integrity = {**integrity, "manifest": data}
    try:
        meta = KernelMeta.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ExportFormatError(f"{meta_path}: a field has the wrong shape ({type(err).__name__}: {err}): "
                                f"{fix}") from None
    check_file_names(meta, str(meta_path))
    if integrity is not None and not set(meta.binary_names) <= set(integrity["files"]):
        raise ExportFormatError(f"{meta_path}: the integrity record does not cover every binary it names: {fix}")
    _check_launch_exprs(meta, meta_path)
    return meta, integrity


def _integrity_ok(record) -> bool:
    return (isinstance(record, dict) and isinstance(record.get("sha256"), str) and isinstance(record.get("files"), dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in record["files"].items())
            and all(_BARE_NAME.match(k) for k in record["files"]))


def _check_launch_exprs(meta: KernelMeta, meta_path: Path) -> None:
    """Each grid, block and workspace dim parses in the launch-expression language, within
    its size limits, over declared symbols and integer scalar parameters only (a grid sized
    by a scalar argument, `T.Kernel(T.ceildiv(max_seqlen_q, 128))`)."""
    names = set(meta.symbols) | {p.name for p in meta.params if p.kind != "tensor" and "int" in p.dtype}
    for launch in (meta, *meta.launches):
        dims = [("grid", d) for d in launch.grid] + [("block", d) for d in launch.block]
        dims += [(f"workspace {w.name}", d) for w in meta.workspaces for d in w.shape]
        for field_name, dim in dims:
            if isinstance(dim, bool) or not isinstance(dim, (int, str)):
                raise ExportFormatError(f"{meta_path}: {field_name} dim {dim!r} is neither an int nor an expression")
            try:
                compile_launch_expr(dim)
            except ValueError as err:
                raise ExportFormatError(f"{meta_path}: {field_name}: {err}; export the kernel again") from None
            if isinstance(dim, str):
                unknown = set(re.findall(r"[A-Za-z_]\w*", dim)) - names - {"ceildiv", "min", "max"}
                if unknown:
                    raise ExportFormatError(f"{meta_path}: {field_name} dim {dim!r} names {', '.join(sorted(unknown))}, "
                                            f"neither a symbolic dim nor an integer scalar of the kernel "
                                            f"({', '.join(sorted(names)) or 'none'})")
