"""IKET's part of a generated CUDA source: event numbering, metadata arrays, event macros.

`instrument(source, arch, runtime_payloads)` finds every `TL_IKET_EVENT...(id, ..., "token")`
call, numbers the distinct events of the module 1, 2, ... (skipping IKET's reserved 31) and
rewrites ids and tokens to match, then puts before the first `#include`:

- the metadata IKET's runtime reads from the module: for each event a 60-byte attribute array
  (size, id, instrumentation method 3, payload type when runtime payloads are on, range flag
  and id, name length and UTF-8 name from byte 24), for each range a 72-byte one (size, range
  id, 0xFFFFFFFF, 2, name length at 32, name at 36), and `__iket_meta_info` (48 bytes: size,
  record count, the range-end id, 32, the attribute size, IKET's magic, the largest id);
- the macros: `TL_IKET_EVENT(ID)` stores `%globaltimer_lo | ID` as a 32-bit word at shared
  offset 0x20 of the CTA's rank in its cluster (`%cluster_ctarank`, sm_90 and newer; 0 before)
  and signals `pmevent.mask ID`; with runtime payloads the `_PAYLOAD_` forms then store the
  value at 0x24 with a second, volatile 32-bit store (IKET's patcher rejects one 64-bit store),
  without them they are plain events.

A source without event calls is returned unchanged; one already instrumented is too.
"""
from __future__ import annotations

import dataclasses
import re

from .metadata import RANGE_END_ID, TOKEN_PREFIX, Event, decode_event, encode_event

__all__ = ["instrument", "MARKER"]

MARKER = "__tilelang_iket_tool__"
_MAGIC = (157, 241, 190, 186)
_EVENT_ATTR_BYTES = 60
_RANGE_ATTR_BYTES = 72
_META_BYTES = 48
_INSTRUMENT_METHOD = 3
_TOKEN = re.compile(re.escape(TOKEN_PREFIX) + r"[A-Za-z0-9_-]+")
_CALL = re.compile(r"(?P<head>\bTL_IKET_EVENT(?:_PAYLOAD_(?:U32|F32))?\(\s*)(?P<id>[0-9]+)"
                   r"(?P<rest>[^\n]*?\"(?P<token>" + re.escape(TOKEN_PREFIX) + r"[A-Za-z0-9_-]+)\"\s*\))")


def _renumber(source: str) -> tuple[str, list[Event]]:
    """The source with module-wide event ids, and its events in id order."""
    calls = list(_CALL.finditer(source))
    if len(calls) != len(_TOKEN.findall(source)):
        raise ValueError("an IKET event token in the generated source is not the last argument of a "
                         "TL_IKET_EVENT call")
    events: dict[tuple[str, str], Event] = {}
    renamed: dict[str, Event] = {}
    for call in calls:
        token = call.group("token")
        if token in renamed:
            continue
        event = decode_event(token)
        known = events.get((event.kind, event.name))
        if known is None:
            next_id = len(events) + 1
            known = dataclasses.replace(event, event_id=next_id + (next_id >= RANGE_END_ID))
            events[(event.kind, event.name)] = known
        elif dataclasses.replace(known, event_id=event.event_id) != event:
            raise ValueError(f"IKET event {event.name!r} appears with two different descriptions in one module")
        renamed[token] = known

    def rewrite(call: re.Match) -> str:
        event = renamed[call.group("token")]
        rest = call.group("rest").replace(call.group("token"), encode_event(event))
        return f"{call.group('head')}{event.event_id}{rest}"

    return _CALL.sub(rewrite, source), sorted(events.values(), key=lambda e: e.event_id)


def _u32(value: int) -> list[int]:
    return list(int(value & 0xFFFFFFFF).to_bytes(4, "little"))


def _array(symbol: str, data: list[int]) -> str:
    return (f"__device__ __attribute__((used, aligned(1))) unsigned char {symbol}[{len(data)}] = "
            f"{{{', '.join(map(str, data))}}};")


def _symbol(name: str) -> str:
    safe = re.sub(r"\W", "_", name, flags=re.ASCII)
    return safe if safe and not safe[0].isdigit() else "_" + safe


def _event_attributes(event: Event, runtime_payloads: bool) -> list[int]:
    data = [0] * _EVENT_ATTR_BYTES
    name = event.name.encode("utf-8")
    data[0:4] = _u32(_EVENT_ATTR_BYTES)
    data[4:8] = _u32(event.event_id)
    data[8:12] = _u32(_INSTRUMENT_METHOD)
    data[12:16] = _u32(event.payload_iket_id if runtime_payloads else 0)
    if event.kind == "range":
        data[16:20] = _u32(1)
        data[20:24] = _u32(event.range_id)
    data[24:28] = _u32(len(name))
    data[28:28 + len(name)] = list(name)
    return data


def _range_attributes(name: str, range_id: int) -> list[int]:
    data = [0] * _RANGE_ATTR_BYTES
    encoded = name.encode("utf-8")
    data[0:4] = _u32(_RANGE_ATTR_BYTES)
    data[8:12] = _u32(range_id)
    data[12:16] = _u32(0xFFFFFFFF)
    data[16:20] = _u32(2)
    data[32:36] = _u32(len(encoded))
    data[36:36 + len(encoded)] = list(encoded)
    return data


def _declarations(events: list[Event], runtime_payloads: bool) -> str:
    lines = ['extern "C" {']
    ranges = {}
    for event in events:
        lines.append(_array(f"__iket_evt_decl_{_symbol(event.name)}_{event.event_id}_attrs",
                            _event_attributes(event, runtime_payloads)))
        if event.kind == "range":
            ranges[event.name] = event.range_id
    for name, range_id in ranges.items():
        lines.append(_array(f"__iket_range_decl_{_symbol(name)}_{range_id}_attrs", _range_attributes(name, range_id)))
    meta = [0] * _META_BYTES
    meta[0:4] = _u32(_META_BYTES)
    meta[8:12] = _u32(len(events) + len(ranges))
    meta[12:16] = _u32(RANGE_END_ID)
    meta[16:20] = _u32(32)
    meta[20:24] = _u32(_EVENT_ATTR_BYTES)
    meta[24:28] = list(_MAGIC)
    meta[32:36] = _u32(max(e.event_id for e in events))
    lines.append(_array("__iket_meta_info", meta))
    lines.append("}")
    return "\n".join(lines)


def _cluster_rank(arch: str) -> str:
    """The PTX that puts the CTA's rank in its cluster in `r` (0 before sm_90)."""
    match = re.search(r"(\d+)", arch or "")
    return "mov.b32 r, %cluster_ctarank;" if match and int(match.group(1)) >= 90 else "mov.u32 r, 0;"


def _asm(lines: list[str]) -> str:
    """PTX `lines` as one C string literal for `asm volatile`; `{ID}` becomes the macro's
    argument, pasted as a literal (`" #ID "`)."""
    body = "{\\n\\t" + "\\n\\t".join(lines) + "\\n\\t}"
    return '"' + body.replace("{ID}", '" #ID "') + '"'


def _stores(rank: str, offset: str, value: list[str], qualifier: str, signal: bool) -> list[str]:
    """PTX that stores the 32-bit `v` (set by `value`) at shared `offset` of this CTA's slot."""
    return [".reg .b32 r, v;", rank, *value, f"mad.lo.u32 r, r, 0x1000000, {offset};",
            f"st.{qualifier}.shared.u32 [r], v;", *(["pmevent.mask {ID};"] if signal else [])]


def _macros(arch: str, runtime_payloads: bool) -> str:
    rank = _cluster_rank(arch)
    stamp = ["mov.u32 v, %globaltimer_lo;", "or.b32 v, v, {ID};"]
    event = ("#define TL_IKET_EVENT(ID, ...) asm volatile("
             + _asm(_stores(rank, "0x20", stamp, "weak", signal=True)) + ' ::: "memory")\n')
    if not runtime_payloads:
        return (event + "#define TL_IKET_EVENT_PAYLOAD_U32(ID, VALUE, ...) TL_IKET_EVENT(ID)\n"
                        "#define TL_IKET_EVENT_PAYLOAD_F32(ID, VALUE, ...) TL_IKET_EVENT(ID)\n")
    stamp_only = "asm volatile(" + _asm(_stores(rank, "0x20", stamp, "weak", signal=False)) + ' ::: "memory");'
    value = ("asm volatile(" + _asm(_stores(rank, "0x24", ["mov.u32 v, %0;"], "volatile", signal=True))
             + ' :: "r"(__tl_iket_u32) : "memory");')
    return (event
            + "#define TL_IKET_EVENT_PAYLOAD_U32(ID, VALUE, ...) do { \\\n"
            + "  unsigned int __tl_iket_u32 = (unsigned int)(VALUE); \\\n"
            + "  " + stamp_only + " \\\n"
            + "  " + value + " \\\n"
            + "} while (0)\n"
            + "#define TL_IKET_EVENT_PAYLOAD_F32(ID, VALUE, ...) \\\n"
            + "  TL_IKET_EVENT_PAYLOAD_U32(ID, __float_as_uint((float)(VALUE)))\n")


def instrument(source: str, arch: str, runtime_payloads: bool) -> str:
    """`source` with IKET's metadata and macros (see the module docstring)."""
    if MARKER in source:
        return source
    source, events = _renumber(source)
    if not events:
        return source
    at = source.find("#include")
    at = max(at, 0)
    block = (f"// {MARKER}: IKET event metadata and macros (tilelang.tools.cuda.iket)\n"
             + _declarations(events, runtime_payloads) + "\n" + _macros(arch, runtime_payloads) + "\n")
    return source[:at] + block + source[at:]
