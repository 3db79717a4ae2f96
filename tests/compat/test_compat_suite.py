"""scripts/tilelang_suite.py (reading pytest's collection output) and scripts/compat_suite.py
(classifying the files that do not collect, rendering the section of docs/compat.md)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


suite = _load("tilelang_suite")
cs = _load("compat_suite")

OUTPUT = """
language/test_a.py::test_one
language/test_a.py::test_two
cpu/test_b.py::test_three
<unknown>:0: in tvm::Target::Target(tvm::ffi::String const&)
==================================== ERRORS ====================================
_________________ ERROR collecting debug/test_pass_events.py __________________
ImportError while importing test module 'debug/test_pass_events.py'.
E   ModuleNotFoundError: TileLang module 'tilelang.instrumentation' is not provided by tilelang-core
_________________ ERROR collecting language/test_span.py ______________________
E   ImportError: cannot import name 'get_buffer_span' from 'tilelang_core.ir'
___________________ ERROR collecting amd/test_mfma.py _________________________
E   AttributeError: no rocm
    (a line pytest adds)
E   assert 1
=========================== short test summary info ============================
3 tests collected, 3 errors in 1.00s
"""


def test_collection_errors_keep_the_exception_line():
    errors = suite.collection_errors(OUTPUT)
    assert errors == {
        "debug/test_pass_events.py": "ModuleNotFoundError: TileLang module 'tilelang.instrumentation' is not "
                                     "provided by tilelang-core",
        "language/test_span.py": "ImportError: cannot import name 'get_buffer_span' from 'tilelang_core.ir'",
        "amd/test_mfma.py": "AttributeError: no rocm",
    }
    assert suite._folder("language/test_a.py") == "language" and suite._folder("test_top.py") == "."


def test_files_are_classified_by_the_reviewed_table():
    errors = suite.collection_errors(OUTPUT)
    status = {path: cs.classify_file(path, error)[0] for path, error in errors.items()}
    assert status == {"debug/test_pass_events.py": cs.NOT_APPLICABLE, "language/test_span.py": cs.NOT_YET,
                      "amd/test_mfma.py": cs.OTHER_HARDWARE}
    assert cs.classify_file("transform/test_x.py", "ImportError: cannot import name '_ffi_api' from 'x'")[0] \
        == cs.NOT_APPLICABLE
    # a not-yet file keeps its error as the reason
    assert cs.classify_file("language/test_span.py", errors["language/test_span.py"])[1].startswith("ImportError")


def test_section_counts_per_folder_and_merges_runs():
    errors = suite.collection_errors(OUTPUT)
    collect = {"kind": "collect", "date": "2026-11-29", "device": "x86_64", "summary": "3 tests collected",
               "folders": {"language": {"collected": 2, "collection_errors": {
                               "language/test_span.py": errors["language/test_span.py"]}},
                           "debug": {"collected": 0, "collection_errors": {
                               "debug/test_pass_events.py": errors["debug/test_pass_events.py"]}}}}
    run = {"kind": "run", "date": "2026-11-29", "device": "NVIDIA H200", "summary": "1 passed", "args": ["-n", "16"],
           "folders": {"language": {"passed": 1, "failed": 1, "skipped": 0, "errors": 0, "failures": {}}}}
    later = {"kind": "run", "folders": {"cpu": {"passed": 3, "failed": 0, "skipped": 0, "errors": 0, "failures": {}}}}
    merged = suite.merge([collect, run, later])
    assert set(merged["run"]["folders"]) == {"language", "cpu"}
    text = cs.suite_section(merged)
    assert text.startswith(cs.SUITE_BEGIN) and text.endswith(cs.SUITE_END)
    assert "| `language` | 2 | 1 | 0 | 0 | 1 |" in text
    assert "| `debug` | 0 | 1 | 0 | 1 | 0 |" in text
    assert "| **all** | **2** | **2** | 0 | 1 | **1** |" in text
    assert "| `cpu` | 3 | 0 | 0 | 0 |" in text and "NVIDIA H200" in text
    assert cs.existing_suite_section("x\n" + text + "\ny") == text


def test_collected_files_of_tilelang_internals_count_against_the_share():
    assert cs.classify_collected("debug/test_pass_diff.py")[0] == cs.NOT_APPLICABLE
    assert cs.classify_collected("transform/test_tilelang_transform_tmem_arena_packing.py")[0] == cs.OTHER_HARDWARE
    assert cs.classify_collected("language/test_tilelang_language_copy.py") is None
    # eager frontend internals do not collect and are not applicable
    assert cs.classify_file("language/test_x.py", "ModuleNotFoundError: No module named "
                            "'tilelang.language.eager.ast'")[0] == cs.NOT_APPLICABLE
    collect = {"kind": "collect", "summary": "",
               "folders": {"debug": {"collected": 30, "collection_errors": {},
                                     "files": {"debug/test_pass_diff.py": 10, "debug/test_other.py": 20}},
                           "cpu": {"collected": 70, "collection_errors": {}, "files": {"cpu/test_a.py": 70}}}}
    assert cs.not_applicable_share(collect) == (10, 100)
    text = cs.suite_section({"collect": collect})
    assert "| `debug` | 30 | 0 | 0 | 0 | 0 | 10 | 0 |" in text and "10 of 100 (10.0%)" in text
    assert "`debug/test_pass_diff.py` (10)" in text
