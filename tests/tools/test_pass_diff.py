"""`tilelang_core.utils.pass_diff` (TileLang's pass diff report) and its environment hook."""
from __future__ import annotations

import pytest

import tilelang_core as tilelang
from tilelang_core import env
from tilelang_core import language as T
from tilelang_core.transform.pipeline import PASS_OBSERVERS
from tilelang_core.utils import pass_diff_hook
from tilelang_core.utils.pass_diff import _parse_diff_into_rows, _render_expand_details, pass_diff


def _program():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(threads=128):  # no grid extents: one block
            tid = T.get_thread_binding()
            for i in T.unroll(2):
                B[tid] = A[tid] + i

    return main


def test_pass_chain_reports_what_each_pass_changed(tmp_path, capsys):
    from tvm.tirx import transform

    report = tmp_path / "r.html"
    steps = pass_diff(_program(), [("simplify", transform.StmtSimplify()), transform.UnrollLoop()],
                      mode="both", html_path=str(report))
    assert [s["name"] for s in steps][0] == "simplify" and steps[1]["name"]
    unrolled = steps[1]
    assert unrolled["changed"] and unrolled["insertions"] > 0 and "T.unroll" not in unrolled["after_script"]
    assert "Pass 2/2" in capsys.readouterr().out
    page = report.read_text()
    assert page.startswith("<!DOCTYPE html>") and "2 passes" in page and 'class="pass-section"' in page
    with pytest.raises(ValueError, match="mode must be"):
        pass_diff(_program(), transform.UnrollLoop(), mode="svg")


def test_hidden_lines_between_hunks_are_expandable():
    import difflib

    before = [f"line {i}" for i in range(30)]
    after = list(before)
    after[3], after[25] = "changed 3", "changed 25"
    diff = list(difflib.unified_diff(before, after, lineterm="", n=2))
    rows, sections = _parse_diff_into_rows(diff, before, after)
    assert [r["type"] for r in rows].count("hunk") == 2
    assert [(s["hunk_idx"], s["position"], s["count"]) for s in sections] == [(0, "before", 1), (1, "before", 17),
                                                                             (1, "after", 2)]
    html_above, html_below = _render_expand_details(sections)[1]
    assert "Show 17 lines above" in html_above and "Show 2 lines below" in html_below


def test_hook_reports_core_pipeline_passes_only_while_installed(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))  # compile for real: no cached kernel
    monkeypatch.setenv("TILELANG_KERNEL_MEMO_SIZE", "0")
    pass_diff_hook.uninstall_pass_diff_hook()
    monkeypatch.setenv("TILELANG_PASS_DIFF", "off")
    assert env.get_pass_diff_mode() is None
    pass_diff_hook.install_pass_diff_hook()
    assert pass_diff_hook._original_call is None and not PASS_OBSERVERS
    monkeypatch.setenv("TILELANG_PASS_DIFF", "yes")
    assert env.get_pass_diff_mode() == "terminal"
    pass_diff_hook.install_pass_diff_hook()
    try:
        tilelang.compile(_program(), target="cpu")
        out = capsys.readouterr().out
        assert "inline_constants" in out and "partition_parallel" in out
    finally:
        pass_diff_hook.uninstall_pass_diff_hook()
    assert pass_diff_hook._original_call is None and not PASS_OBSERVERS
    monkeypatch.setenv("TILELANG_PASS_DIFF_OUTPUT", "x/y")
    assert str(env.TILELANG_PASS_DIFF_OUTPUT) == "x/y"
