"""The kernel side of IKET: `mark`, `range` / `range_push` / `range_pop`, `payload`.

Each returns (or, for the `range` scope, emits) a call of an extern the post-processing
defines: `TL_IKET_EVENT(id, "token")`, `TL_IKET_EVENT_PAYLOAD_U32(id, value, "token")` or
`..._F32`, and `TL_IKET_EVENT(31)` for a range's end. Ids given here are provisional (this
process's registry, for `event_table()`); the post-processing renumbers the events of each
generated module from their tokens.
"""
from __future__ import annotations

import threading
import zlib
from dataclasses import dataclass
from typing import Any

from tilelang_core import language as T

from .metadata import RANGE_END_ID, Event, check_name, encode_event

__all__ = ["PayloadSpec", "payload", "mark", "range", "range_push", "range_pop", "range_start", "range_end",
           "event_table", "reset", "EVENT", "EVENT_PAYLOAD_U32", "EVENT_PAYLOAD_F32"]

EVENT = "TL_IKET_EVENT"
EVENT_PAYLOAD_U32 = "TL_IKET_EVENT_PAYLOAD_U32"
EVENT_PAYLOAD_F32 = "TL_IKET_EVENT_PAYLOAD_F32"

# payload dtype -> IKET's number for it
_PAYLOAD_IDS = {"int32": 5, "uint32": 6, "float32": 13}
_PAYLOAD_ALIASES = {"int": "int32", "uint": "uint32", "float": "float32"}


@dataclass(frozen=True)
class PayloadSpec:
    """A 32-bit value (`expr`, of `dtype`) an event records, with IKET's number for the type."""

    expr: Any
    dtype: str
    iket_id: int


_lock = threading.RLock()
_events: dict[tuple[str, str], Event] = {}
_next_id = 1
_open_ranges = threading.local()


def _stack() -> list[str]:
    if not hasattr(_open_ranges, "names"):
        _open_ranges.names = []
    return _open_ranges.names


def reset() -> None:
    """Forget the events registered so far (kernels built afterwards number from 1 again)."""
    global _next_id
    with _lock:
        _events.clear()
        _stack().clear()
        _next_id = 1


def event_table() -> list[dict[str, Any]]:
    """The events registered since the last `reset`, by id: name, event_id, kind, range_id,
    payload_type, payload_iket_id, and runtime_payload_iket_id (0 unless runtime payloads are
    on: then the metadata declares the payload)."""
    from .session import runtime_payloads_enabled

    recorded = runtime_payloads_enabled()
    with _lock:
        return [{"name": e.name, "event_id": e.event_id, "kind": e.kind, "range_id": e.range_id,
                 "payload_type": e.payload_type, "payload_iket_id": e.payload_iket_id,
                 "runtime_payload_iket_id": e.payload_iket_id if recorded else 0}
                for e in sorted(_events.values(), key=lambda e: e.event_id)]


def payload(expr: Any, dtype: str | None = None) -> PayloadSpec:
    """`expr` as an event's payload: int32, uint32 or float32 (given, or read from `expr`:
    its `dtype`, or a Python bool / int / float)."""
    if dtype is None:
        if hasattr(expr, "dtype"):
            dtype = str(expr.dtype)
        elif isinstance(expr, bool):
            dtype = "uint32"
        elif isinstance(expr, int):
            dtype = "int32"
        elif isinstance(expr, float):
            dtype = "float32"
        else:
            raise TypeError(f"iket.payload: cannot tell the dtype of {expr!r}; pass dtype= int32, uint32 or float32")
    name = _PAYLOAD_ALIASES.get(str(dtype).lower(), str(dtype).lower())
    if name not in _PAYLOAD_IDS:
        raise ValueError(f"iket.payload: IKET records int32, uint32 or float32 payloads, not {dtype!r}")
    return PayloadSpec(expr=expr, dtype=name, iket_id=_PAYLOAD_IDS[name])


def _as_payload(value: Any) -> PayloadSpec | None:
    if value is None or isinstance(value, PayloadSpec):
        return value
    return payload(value)


def _register(name: str, kind: str, spec: PayloadSpec | None) -> Event:
    """The event (`kind`, `name`), registered on first use; one name keeps one payload type."""
    global _next_id
    check_name(name)
    payload_type = spec.dtype if spec is not None else "NoPayload"
    with _lock:
        known = _events.get((kind, name))
        if known is not None:
            if known.payload_type != payload_type:
                raise ValueError(f"IKET {kind} {name!r} was first used with payload {known.payload_type!r}, now "
                                 f"with {payload_type!r}: one name, one payload type")
            return known
        if _next_id == RANGE_END_ID:
            _next_id += 1
        event = Event(name=name, event_id=_next_id, kind=kind,
                      range_id=(zlib.crc32(name.encode("utf-8")) or 1) if kind == "range" else 0,
                      payload_type=payload_type, payload_iket_id=spec.iket_id if spec is not None else 0)
        _next_id += 1
        _events[(kind, name)] = event
        return event


def _call(event: Event, spec: PayloadSpec | None) -> Any:
    token = encode_event(event)
    if spec is None:
        return T.call_extern("handle", EVENT, event.event_id, token)
    extern = EVENT_PAYLOAD_F32 if spec.dtype == "float32" else EVENT_PAYLOAD_U32
    return T.call_extern("handle", extern, event.event_id, spec.expr, token)


def mark(name: str, payload: Any = None) -> Any:
    """An instant event at this point of the kernel (a statement of the kernel body)."""
    spec = _as_payload(payload)
    return _call(_register(name, "mark", spec), spec)


def range_push(name: str, payload: Any = None) -> Any:
    """The start of range `name` for the warp that runs it; `range_pop` ends it."""
    spec = _as_payload(payload)
    event = _register(name, "range", spec)
    _stack().append(name)
    return _call(event, spec)


def range_pop(name: str | None = None) -> Any:
    """The end of the innermost open range (which must be `name`, when given)."""
    stack = _stack()
    if not stack:
        raise RuntimeError("iket.range_pop() without an open iket.range_push()")
    if name is not None and stack[-1] != name:
        raise RuntimeError(f"iket.range_pop({name!r}) while range {stack[-1]!r} is the innermost open one")
    stack.pop()
    return T.call_extern("handle", EVENT, RANGE_END_ID)


range_start = range_push
range_end = range_pop


class _Range:
    """`with iket.range(name):` emits the range's start at entry and its end at exit."""

    def __init__(self, name: str, payload: Any = None) -> None:
        self.name, self.payload = name, payload

    def __enter__(self) -> "_Range":
        T.evaluate(range_push(self.name, payload=self.payload))
        return self

    def __exit__(self, *exc: Any) -> bool:
        T.evaluate(range_pop(self.name))
        return False


def range(name: str, payload: Any = None) -> _Range:  # noqa: A001 - TileLang's name
    """A scope whose statements form range `name`."""
    return _Range(name, payload)


