"""One IKET event, and the token that carries it through the IR into the generated source.

A token is `__tl_iket_v1_` + the event as compact JSON in URL-safe base64 without padding:
only `[A-Za-z0-9_-]`, so it survives as a C string literal and is found again by a regex.
"""
from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass

__all__ = ["Event", "TOKEN_PREFIX", "MAX_NAME_BYTES", "RANGE_END_ID", "encode_event", "decode_event"]

TOKEN_PREFIX = "__tl_iket_v1_"
MAX_NAME_BYTES = 32  # IKET's limit on a marker or range name
RANGE_END_ID = 31  # the event id IKET reserves for "the innermost range of this warp ends"
_VERSION = 1
_FIELDS = {"version", "name", "event_id", "kind", "range_id", "payload_type", "payload_iket_id"}


@dataclass(frozen=True)
class Event:
    """A marker (`kind` "mark") or range start ("range", with its `range_id`), its id among
    the kernel's events, and its payload: `payload_type` ("NoPayload", "int32", "uint32",
    "float32") and IKET's number for that type (0 for none)."""

    name: str
    event_id: int
    kind: str
    range_id: int = 0
    payload_type: str = "NoPayload"
    payload_iket_id: int = 0


def check_name(name: object) -> str:
    """`name` if it is a usable event name; a ValueError saying why not otherwise."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"IKET event name must be a non-empty str, got {name!r}")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise ValueError(f"IKET event name {name!r} is {len(name.encode('utf-8'))} UTF-8 bytes; at most "
                         f"{MAX_NAME_BYTES} fit IKET's metadata")
    return name


def encode_event(event: Event) -> str:
    """The token of `event`."""
    text = json.dumps({"version": _VERSION, **asdict(event)}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    return TOKEN_PREFIX + base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii").rstrip("=")


def decode_event(token: str) -> Event:
    """The event of `token`; a ValueError naming what is wrong with a token that is not one."""
    if not token.startswith(TOKEN_PREFIX):
        raise ValueError(f"not an IKET event token (no {TOKEN_PREFIX!r} prefix): {token[:40]!r}")
    body = token[len(TOKEN_PREFIX):]
    try:
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"IKET event token {token[:40]!r}... does not decode: {exc}") from None
    if not isinstance(data, dict) or set(data) != _FIELDS or data["version"] != _VERSION:
        raise ValueError(f"IKET event token of an unknown schema: {sorted(data) if isinstance(data, dict) else data}")
    check_name(data["name"])
    if data["kind"] not in ("mark", "range"):
        raise ValueError(f"IKET event {data['name']!r} has the unknown kind {data['kind']!r}")
    for key in ("event_id", "range_id", "payload_iket_id"):
        if type(data[key]) is not int or data[key] < 0:
            raise ValueError(f"IKET event {data['name']!r}: {key} must be a non-negative int, got {data[key]!r}")
    if data["event_id"] in (0, RANGE_END_ID):
        raise ValueError(f"IKET event {data['name']!r}: id {data['event_id']} is reserved")
    data.pop("version")
    return Event(**data)
