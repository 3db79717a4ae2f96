"""The `Fragment` layout model: bijection checks, replication, projection, composition,
equality up to renaming."""
from __future__ import annotations

import numpy as np
import pytest

from tilelang_core.layout import Fragment, FragmentError, cyclic_fragment, row_fragment, xor


def mma_accumulator(warps_m: int, warps_n: int, m: int, n: int) -> Fragment:
    """mma.sync's C layout over a warp grid, written here from the PTX ISA for the tests."""
    warp_m, warp_n = m // warps_m, n // warps_n
    ni = warp_n // 8

    def element_of(t, s):
        warp, lane = t // 32, t % 32
        row0, col0 = (warp % warps_m) * warp_m, (warp // warps_m) * warp_n
        sub, v = s // 4, s % 4
        return row0 + (sub // ni) * 16 + lane // 4 + 8 * (v // 2), col0 + (sub % ni) * 8 + 2 * (lane % 4) + v % 2

    return Fragment((m, n), warps_m * warps_n * 32, (warp_m // 16) * ni * 4, element_of, "mma.C")


def test_a_bijection_checks_and_answers_both_ways():
    f = cyclic_fragment((16, 32), 64, vector=4).check()
    assert f.replicate == 1 and f.slots == 8
    for t in range(64):
        for s in range(8):
            idx = tuple(int(i) for i in f.element_of(t, s))
            assert f.holders(*idx) == (t,) and f.slot_of(*idx) == s
    assert f.forward_thread(0, 5) == 1 and f.forward_index(0, 5) == 1  # TileLang's names


def test_an_element_held_twice_in_one_thread_is_refused():
    bad = Fragment((4, 4), 4, 4, lambda t, s: (t, s * 0), "bad")
    with pytest.raises(FragmentError, match="in two slots"):
        bad.check()


def test_an_element_outside_the_tile_is_refused():
    with pytest.raises(FragmentError, match="outside shape"):
        Fragment((4, 4), 4, 4, lambda t, s: (t + 1, s), "off").check()


def test_replicas_must_share_a_slot():
    # threads 0 and 1 both hold all 4 elements, in different slot orders
    with pytest.raises(FragmentError, match="replicas must share a slot"):
        Fragment((4,), 2, 4, lambda t, s: ((s + t) % 4,), "rotated").check()


def test_projection_of_the_accumulator_is_replicated_over_a_lane_quad():
    acc = mma_accumulator(8, 1, 128, 128).check()
    rows = acc.project([0])
    assert rows.shape == (128,) and rows.slots == 2 and rows.replicate == 4
    assert rows.holders(0) == (0, 1, 2, 3) and rows.holders(8) == (0, 1, 2, 3) and rows.holders(17) == (36, 37, 38, 39)
    assert rows.replica_bits() == 0b11  # the quad's lanes differ in the low two bits


def test_projection_across_warps_names_the_warp_bit():
    rows = mma_accumulator(2, 2, 64, 64).check().project([0])
    assert rows.replicate == 8 and rows.replica_bits() == 0b1000011  # lane bits 0, 1 and warp bit 1


def test_column_projection():
    cols = mma_accumulator(8, 1, 128, 64).check().project([1])
    assert cols.shape == (64,) and cols.replicate == 256 * cols.slots // 64


def test_equality_is_up_to_renaming():
    a = row_fragment(32, 64, 128, 32)
    b = Fragment((32, 64), 128, 16, lambda t, s: ((s // 2) * 4 + t // 32, (s % 2) * 32 + t % 32), "same, other name")
    c = cyclic_fragment((32, 64), 128)
    assert a == b and hash(a) == hash(b)
    assert a != c


def test_replicate_over_and_repeat():
    base = cyclic_fragment((8, 8), 16).check()
    twice = base.replicate_over(2).check()
    assert twice.threads == 32 and twice.replicate == 2 and twice.holders(0, 0) == (0, 16)
    tall = base.repeat(2, dim=0, over="threads").check()
    assert tall.shape == (16, 8) and tall.threads == 32 and tall.holders(8, 0) == (16,)
    wide = base.repeat(3, dim=1, over="slots").check()
    assert wide.shape == (8, 24) and wide.slots == base.slots * 3 and wide.holders(0, 8) == (0,)


def test_element_of_gives_code_for_a_thread_variable():
    from tvm import ir, tirx

    t = tirx.Var("t", "int32")
    f = mma_accumulator(8, 1, 128, 128)
    row, col = f.element_of(t, 5)
    assert isinstance(row, ir.Expr) and isinstance(col, ir.Expr)
    # a derived layout reads its table for constant slots and refuses symbolic ones it cannot express
    rows = f.project([0])
    assert isinstance(rows.element_of(t, 1)[0], ir.Expr)


def test_xor_works_on_every_kind_of_value():
    from tvm import ir, tirx

    assert xor(6, 3) == 5
    assert (xor(np.arange(4), 1) == np.array([1, 0, 3, 2])).all()
    assert isinstance(xor(tirx.Var("x", "int32"), 1), ir.Expr)


def test_a_layout_draws_as_svg_and_png(tmp_path):
    import zlib

    acc = mma_accumulator(2, 1, 32, 16)
    svg = acc.draw(tmp_path / "acc.svg").read_text()
    assert svg.startswith("<svg") and svg.count("<rect") == 32 * 16
    assert "<title>[0,0] threads 0 slot 0</title>" in svg and "<title>[16,0] threads 32 slot 0</title>" in svg
    png = acc.draw(tmp_path / "acc.png", cell=4).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (16 * 4, 32 * 4)
    idat = png.index(b"IDAT")
    size = int.from_bytes(png[idat - 4:idat], "big")
    raw = zlib.decompress(png[idat + 4:idat + 4 + size])
    assert len(raw) == height * (1 + width * 3)
    # a replicated layout lists every holder
    rows = acc.project([0])
    assert "threads 0,1,2,3 slot 0" in rows.draw(tmp_path / "rows.svg").read_text()
    with pytest.raises(ValueError, match="svg or .png"):
        acc.draw(tmp_path / "acc.pdf")


def test_window_of_an_accumulator_keeps_each_threads_slots():
    # mma.sync's C over 2 x 1 warps, 64 x 64: a warp's 32 rows are 2 m16 blocks of 8 n8 blocks,
    # so columns 16..31 sit in the same 8 slots (n8 blocks 2 and 3 of both row blocks) of every thread
    acc = mma_accumulator(2, 1, 64, 64).check()
    win = acc.window((0, 16), (64, 16))
    assert win.shape == (64, 16) and win.threads == 64 and win.slots == acc.slots * 16 // 64
    for t in (0, 37, 63):
        for s in range(win.slots):
            r, c = (int(i) for i in win.element_of(t, s))
            source = int(win.source_slots[s])
            assert (r, c + 16) == tuple(int(i) for i in acc.element_of(t, source))
    # slots 8..11 and 40..43 are not one run: the window takes constant slots only
    assert not win.symbolic_slots and list(win.source_slots) == [8, 9, 10, 11, 12, 13, 14, 15,
                                                                 40, 41, 42, 43, 44, 45, 46, 47]
    # one row block per warp: columns 16..31 are slots 8..15, one run, symbolic slots kept
    one = mma_accumulator(4, 1, 64, 64).check().window((0, 16), (64, 16))
    assert one.symbolic_slots and list(one.source_slots) == list(range(8, 16))
    # columns 16..31 of a 2 x 2 warp grid are held by half of the warps only
    with pytest.raises(FragmentError, match="different slots"):
        mma_accumulator(2, 2, 64, 64).check().window((0, 16), (64, 16))


def test_window_refuses_what_threads_hold_in_different_slots():
    f = cyclic_fragment((16, 32), 64, vector=4).check()
    with pytest.raises(FragmentError, match="different slots"):
        f.window((0, 0), (1, 32))  # row 0: threads 0..7 hold it, the others do not
    with pytest.raises(FragmentError, match="not inside"):
        f.window((0, 24), (16, 16))
