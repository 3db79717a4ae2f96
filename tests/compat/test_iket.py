"""`tilelang.tools.cuda.iket` (the CUDA backend's `compat.tools.iket`): event tokens, the
kernel-side calls, the instrumentation of a generated source and the session's bookkeeping.
(Compiling the instrumented examples for sm_90a is checked by hand: NVRTC needs the CUDA
toolkit; this file needs nothing.)"""
from __future__ import annotations

import re

import pytest

from tilelang_core import env
from tilelang_core.jit.postproc import register_postproc, registered_postproc, unregister_postproc
from tilelang_cuda.compat.tools import iket
from tilelang_cuda.compat.tools.iket.codegen import MARKER, instrument
from tilelang_cuda.compat.tools.iket.metadata import Event, decode_event, encode_event


def test_tokens_round_trip_and_bad_ones_are_named():
    event = Event(name="store_index", event_id=4, kind="mark", payload_type="int32", payload_iket_id=5)
    token = encode_event(event)
    assert re.fullmatch(r"__tl_iket_v1_[A-Za-z0-9_-]+", token) and decode_event(token) == event
    with pytest.raises(ValueError, match="no '__tl_iket_v1_' prefix"):
        decode_event("junk")
    with pytest.raises(ValueError, match="id 31 is reserved"):
        decode_event(encode_event(Event(name="x", event_id=31, kind="mark")))


def test_kernel_calls():
    iket.reset()
    call = iket.mark("load", payload=iket.payload(7))
    assert call.op.name == "tirx.call_extern" and str(call.args[0].value) == "TL_IKET_EVENT_PAYLOAD_U32"
    assert decode_event(call.args[-1].value).payload_type == "int32"
    iket.range_push("body")
    assert int(iket.range_pop("body").args[1]) == 31
    with pytest.raises(RuntimeError, match="without an open"):
        iket.range_pop()
    with pytest.raises(ValueError, match="one name, one payload type"):
        iket.mark("load")
    with pytest.raises(ValueError, match="at most 32 fit"):
        iket.mark("x" * 33)
    with pytest.raises(ValueError, match="int32, uint32 or float32"):
        iket.payload(1, dtype="float16")
    assert [e["name"] for e in iket.event_table()] == ["load", "body"]


def _call(kind: str, name: str, provisional_id: int, payload: str | None = None) -> str:
    event = Event(name=name, event_id=provisional_id, kind=kind, payload_type="int32" if payload else "NoPayload",
                  payload_iket_id=5 if payload else 0)
    if payload:
        return f'TL_IKET_EVENT_PAYLOAD_U32({provisional_id}, {payload}, "{encode_event(event)}");'
    return f'TL_IKET_EVENT({provisional_id}, "{encode_event(event)}");'


def test_instrumentation_numbers_events_and_declares_their_metadata():
    source = "\n".join(['#include "tl.h"', "__global__ void k() {", _call("range", "total", 7),
                        _call("mark", "store", 9, payload="i"), _call("mark", "store", 9, payload="i"),
                        "TL_IKET_EVENT(31);", "}"])
    out = instrument(source, "sm_90a", runtime_payloads=True)
    assert out.index(MARKER) < out.index('#include "tl.h"')
    ids = [int(m) for m in re.findall(r"TL_IKET_EVENT(?:_PAYLOAD_U32)?\((\d+)", out.split("__global__")[1])]
    assert ids == [1, 2, 2, 31]  # renumbered module-wide; the range end keeps IKET's 31
    meta = [int(x) for x in re.search(r"__iket_meta_info\[48\] = \{([^}]*)\}", out).group(1).split(", ")]
    assert meta[0] == 48 and meta[8] == 3 and meta[12] == 31 and meta[24:28] == [157, 241, 190, 186]
    assert meta[32] == 2  # the largest id
    store = [int(x) for x in re.search(r"__iket_evt_decl_store_2_attrs\[60\] = \{([^}]*)\}", out).group(1).split(", ")]
    assert store[4] == 2 and store[8] == 3 and store[12] == 5 and bytes(store[28:33]) == b"store"
    assert "%cluster_ctarank" in out and "st.volatile.shared.u32" in out
    assert instrument(out, "sm_90a", True) == out  # once only
    plain = instrument(source, "sm_80", runtime_payloads=False)
    assert "%cluster_ctarank" not in plain and "mov.u32 r, 0;" in plain
    assert "#define TL_IKET_EVENT_PAYLOAD_U32(ID, VALUE, ...) TL_IKET_EVENT(ID)" in plain
    assert instrument("__global__ void k() {}", "sm_90a", False) == "__global__ void k() {}"


def test_session_restores_the_callback_the_cache_and_the_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("TL_IKET_OUTPUT_DIR", raising=False)
    before = registered_postproc("cuda")
    mine = lambda source, target: source  # noqa: E731
    register_postproc("cuda", mine)
    cache_was = env.is_cache_enabled()
    try:
        with iket.session(output_dir=tmp_path / "out", runtime_payloads=True):
            assert iket.is_enabled() and iket.runtime_payloads_enabled()
            assert registered_postproc("cuda") is not mine and not env.is_cache_enabled()
            assert iket.output_path("k.cu") == tmp_path / "out" / "k.cu"
            with iket.session():  # nested: the outer one keeps instrumenting
                pass
            assert iket.is_enabled()
        assert registered_postproc("cuda") is mine and not iket.is_enabled()
        assert env.is_cache_enabled() == cache_was and not iket.runtime_payloads_enabled()
        assert iket.output_dir() is None
        command = iket.profile_command(["python", "a b.py"], directory=tmp_path)
        assert command.endswith("profile --postprocess all -- python 'a b.py'")
    finally:
        unregister_postproc("cuda") if before is None else register_postproc("cuda", before)
