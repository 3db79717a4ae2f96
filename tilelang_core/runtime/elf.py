"""Reading the symbol tables of an ELF file in pure Python (no native dependency), so a
runtime can check that a kernel's entry is a function the binary itself defines before it
maps the binary: a shared library's dynamic symbol table (`.dynsym`), a cubin's or code
object's full one (`.symtab`).

Only what the checks need is read: the section headers, one symbol table and its string
table. Every offset is bounds-checked; a file that is not ELF, or is truncated or damaged,
raises `ELFError` saying what is wrong (never an IndexError, never a read past the bytes).
"""
from __future__ import annotations

import struct

__all__ = ["ELFError", "defined_symbols", "require_entry"]

_SHT_SYMTAB, _SHT_DYNSYM = 2, 11
_STT_NAMES = {0: "notype", 1: "object", 2: "function", 10: "gnu_ifunc"}
_SHN_UNDEF = 0
_MAX_SYMBOLS = 1 << 20  # a kernel binary defines a handful; past this the table is damaged


class ELFError(ValueError):
    """The bytes are not a readable ELF file (the message says why)."""


def defined_symbols(data: bytes, table: str = ".dynsym") -> dict[str, str]:
    """{name: kind} of the symbols `data` defines itself in `table` (".dynsym" or ".symtab"):
    undefined ones (resolved from other libraries at load time) are left out; kind is
    "function", "object", "notype", "gnu_ifunc" or "other"."""
    if len(data) < 16 or data[:4] != b"\x7fELF":
        raise ELFError("not an ELF file (no \\x7fELF magic at its start)")
    if data[4] not in (1, 2) or data[5] not in (1, 2):
        raise ELFError(f"unknown ELF class {data[4]} / byte order {data[5]}")
    wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
    header = struct.Struct(order + ("HHIQQQIHHHHHH" if wide else "HHIIIIIHHHHHH"))
    if len(data) < 16 + header.size:
        raise ELFError(f"truncated: {len(data)} bytes, shorter than an ELF header")
    (_, _, _, _, _, shoff, _, _, _, _, shentsize, shnum, _) = header.unpack_from(data, 16)
    section = struct.Struct(order + ("IIQQQQIIQQ" if wide else "IIIIIIIIII"))
    if shnum == 0 or shentsize < section.size or shoff + shnum * shentsize > len(data):
        raise ELFError(f"truncated or damaged: its {shnum} section headers at offset {shoff} lie past its "
                       f"{len(data)} bytes")
    sections = [section.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    wanted = _SHT_DYNSYM if table == ".dynsym" else _SHT_SYMTAB
    found = [s for s in sections if s[1] == wanted]
    if not found:
        return {}
    _, _, _, _, offset, size, link, _, _, entsize = found[0]
    symbol = struct.Struct(order + ("IBBHQQ" if wide else "IIIBBH"))
    if entsize < symbol.size or offset + size > len(data) or link >= shnum or size // entsize > _MAX_SYMBOLS:
        raise ELFError(f"truncated or damaged: its symbol table ({size} bytes at offset {offset}) lies past "
                       f"its {len(data)} bytes")
    strings_offset, strings_size = sections[link][4], sections[link][5]
    if strings_offset + strings_size > len(data):
        raise ELFError("truncated or damaged: its symbol names lie past the end of the file")
    strings = data[strings_offset:strings_offset + strings_size]
    out: dict[str, str] = {}
    count = size // entsize
    if entsize == symbol.size:
        rows = symbol.iter_unpack(data[offset + entsize:offset + count * entsize])
    else:
        rows = (symbol.unpack_from(data, offset + i * entsize) for i in range(1, count))
    for fields in rows:
        if wide:
            name_at, info, _, shndx = fields[0], fields[1], fields[2], fields[3]
        else:
            name_at, info, shndx = fields[0], fields[3], fields[5]
        if shndx == _SHN_UNDEF or name_at >= len(strings):
            continue
        end = strings.find(b"\0", name_at)
        name = strings[name_at:end if end >= 0 else len(strings)].decode("utf-8", "replace")
        if name:
            out[name] = _STT_NAMES.get(info & 0xF, "other")
    return out


def require_entry(data: bytes, entry: str, table: str = ".dynsym", what: str = "kernel binary") -> None:
    """Raise `ValueError` unless ELF `data` itself defines `entry` as a function in `table`
    (a name it only imports, such as libc's `system`, does not count); the message lists
    the functions it does define."""
    try:
        symbols = defined_symbols(data, table)
    except ELFError as err:
        raise ValueError(f"not a {what}: {err}") from None
    if symbols.get(entry) not in ("function", "gnu_ifunc"):
        found = sorted(n for n, kind in symbols.items() if kind == "function")
        raise ValueError(f"entry {entry!r} is not a function defined by the {what} itself (it defines: "
                         f"{', '.join(found[:8]) or 'none'}); the manifest names a function of another library "
                         "or a damaged binary")
