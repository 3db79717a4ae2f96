"""scripts/compat_doc.py: TileLang's exported names read statically from a small fake TileLang
tree, classified, rendered; and the committed docs/compat.md checked. Needs neither TileLang
nor TVM (the script imports both only when it classifies for real)."""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MIRROR = Path("/work/.mirror/tile-ai+tilelang/repo")


def _load_script():
    spec = importlib.util.spec_from_file_location("compat_doc", ROOT / "scripts" / "compat_doc.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


cd = _load_script()

FAKE_TREE = {
    "tilelang/__init__.py": """
        import os
        import sys
        from pathlib import Path

        __version__ = "0.0.1"
        from .math import *
        from .jit import jit, compile
        from . import language
        _private = 1

        def set_log_level(level):
            pass

        def _helper():
            pass

        if sys.platform.startswith("win32"):
            dll_dirs = []
        del _helper
    """,
    "tilelang/math.py": """
        import sys

        def cdiv(a, b):
            return (a + b - 1) // b

        def next_power_of_2(x):
            return 1 << (x - 1).bit_length()
    """,
    "tilelang/jit/__init__.py": """
        def jit(func=None):
            return func

        def compile(func):
            return func
    """,
    "tilelang/language/__init__.py": """
        from .common import *
        from .common import __all__ as _COMMON_ALL
        from .blackwell import tcgen05_gemm

        __all__ = tuple(dict.fromkeys((*_COMMON_ALL, "tcgen05_gemm")))
        del _COMMON_ALL
    """,
    "tilelang/language/common.py": """
        import tvm.tirx.script.parser as _parser
        from .exports import BACKEND_ONLY
        from .ops import gemm, copy, gemm_sp

        def Kernel(*extents, threads=128):
            pass

        _LOCAL = ("gemm", "copy")
        __all__ = [n for n in _parser.__all__ if n not in BACKEND_ONLY] + list(_LOCAL)
        __all__ += ["Kernel"]
        __all__.extend(("gemm_sp", "mystery"))
    """,
    "tilelang/language/exports.py": """
        CUDA_ONLY = frozenset({"ptx_mma"})
        ROCM_ONLY = frozenset({"tvm_mfma"})
        BACKEND_ONLY = CUDA_ONLY | ROCM_ONLY
    """,
    "tilelang/language/ops.py": """
        def gemm(a, b, c):
            pass

        def copy(src, dst):
            pass

        def gemm_sp(A, B, C):
            pass
    """,
    "tilelang/language/blackwell.py": """
        def tcgen05_gemm(a, b, c):
            pass
    """,
}

# what the fake `tvm.tirx.script.parser` lists
TVM_NAMES = ["int8", "float16", "ptx_mma", "tvm_mfma"]


@pytest.fixture
def fake_tilelang(tmp_path: Path) -> Path:
    for rel, text in FAKE_TREE.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return tmp_path


def _external(module: str):
    return list(TVM_NAMES) if module == "tvm.tirx.script.parser" else None


def _tree(path: Path):
    return cd.TileLangTree(cd.TileLangSource(path), _external)


def _names(exports) -> dict[str, object]:
    return {e.name: e for e in exports}


def test_top_level_names_are_the_bindings_of_its_init(fake_tilelang):
    exports = _names(cd.exported_names(_tree(fake_tilelang), "tilelang"))
    # star import resolved through math's public names; submodules the init imports from are
    # attributes too; private names, deleted names and standard-library imports are not exports
    assert set(exports) == {"__version__", "cdiv", "next_power_of_2", "math", "jit", "compile",
                            "language", "set_log_level", "dll_dirs"}
    assert exports["jit"].kind == "def" and exports["jit"].origin == "tilelang.jit"
    assert exports["language"].kind == "module"
    assert exports["cdiv"].origin == "tilelang.math"


def test_language_names_come_from_the_evaluated_all(fake_tilelang):
    tree = _tree(fake_tilelang)
    exports = _names(cd.exported_names(tree, "tilelang.language"))
    # comprehension over the external list minus a frozenset union, `+=`, `.extend`, starred
    # tuple inside `dict.fromkeys`
    assert set(exports) == {"int8", "float16", "gemm", "copy", "Kernel", "gemm_sp", "mystery",
                            "tcgen05_gemm"}
    assert exports["int8"].origin == "tvm.tirx.script.parser"
    assert exports["gemm"].origin == "tilelang.language.ops"
    assert exports["Kernel"].origin == "tilelang.language.common"
    assert tree.external_used == {"tvm.tirx.script.parser": len(TVM_NAMES)}


def test_an_unevaluable_all_is_reported_not_guessed(fake_tilelang):
    (fake_tilelang / "tilelang/language/common.py").write_text("__all__ = make_names()\ndef gemm(): pass\n")
    tree = _tree(fake_tilelang)
    exports = _names(cd.exported_names(tree, "tilelang.language"))
    assert "gemm" in exports  # fell back to the public names of the star-imported module
    assert any("make_names()" in p for p in tree.problems())


def _resolves(supported: set[str], details: dict[str, str] | None = None):
    def resolves(module: str, name: str):
        return name in supported, (details or {}).get(name, "")
    return resolves


def test_classification_uses_the_reasons_table(fake_tilelang):
    tree = _tree(fake_tilelang)
    exports = [e for m in cd.MODULES for e in cd.exported_names(tree, m)]
    supported = {"__version__", "jit", "compile", "language", "gemm", "copy", "Kernel", "int8", "float16"}
    cd.classify(exports, _resolves(supported, {"cdiv": "tilelang-core has it as `x.cdiv`"}))
    status = {(e.module, e.name): (e.status, e.reason) for e in exports}
    assert status[("tilelang.language", "gemm")] == ("supported", "")
    blackwell = status[("tilelang.language", "tcgen05_gemm")]
    assert blackwell[0] == "not applicable" and "Blackwell" in blackwell[1]
    assert status[("tilelang", "dll_dirs")][0] == "not applicable"
    sparse = status[("tilelang.language", "gemm_sp")]
    assert sparse[0] == "not yet" and "sparse" in sparse[1]
    assert status[("tilelang", "cdiv")] == ("not yet", "tilelang-core has it as `x.cdiv`")
    assert status[("tilelang.language", "mystery")] == ("not yet", "not implemented")
    assert all(e.reason for e in exports if e.status != "supported")


def test_markdown_has_its_sections(fake_tilelang):
    section = cd.examples_section(None, ["a.py", "b.py"])
    document, exports = cd.build(cd.TileLangSource(fake_tilelang), _external,
                                 _resolves({"gemm", "jit"}), section)
    for heading in ("# TileLang compatibility", "## Summary", "## `tilelang`", "## `tilelang.language`",
                    "### The largest \"not yet\" groups", "## TileLang's examples on tilelang-core"):
        assert heading in document
    assert "resolution, not proof of full behaviour" in document
    assert "Not measured yet" in document
    assert "| `tilelang.language.gemm` | supported |" in document
    assert "| `tilelang` | 9 | 1 | 7 | 1 |" in document
    assert "tvm.tirx.script.parser` (4 names)" in document


def test_example_table_and_keeping_it():
    data = {"date": "2026-11-24", "device": "NVIDIA H100 80GB HBM3", "tilelang_revision": "a35008a",
            "records": [{"example": "a.py", "outcome": "pass", "status": 0, "seconds": 3.5, "error": ""},
                        {"example": "b.py", "outcome": "fail", "status": 1, "seconds": 1.0,
                         "error": "ValueError: x | y"}]}
    section = cd.examples_section(data, ["a.py", "b.py", "c.py"])
    assert "**1 of 3 pass.**" in section
    assert "2026-11-24" in section and "NVIDIA H100 80GB HBM3" in section
    assert "| `b.py` | fail | 1.0 | ValueError: x \\| y |" in section
    assert "| `c.py` | not run |" in section
    document = f"# doc\n\n{section}\n\n## more\n"
    kept = cd.existing_examples_section(document)
    assert kept == section
    assert cd.examples_section(None, ["a.py"], kept) == section


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_reads_a_bare_git_directory(fake_tilelang, tmp_path):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(fake_tilelang)], check=True)
    subprocess.run([*git, "-C", str(fake_tilelang), "add", "tilelang"], check=True)
    subprocess.run([*git, "-C", str(fake_tilelang), "commit", "-qm", "fake"], check=True)
    bare = tmp_path / "bare.git"
    subprocess.run([*git, "clone", "-q", "--bare", str(fake_tilelang), str(bare)], check=True)
    source = cd.TileLangSource(bare)
    assert source.bare and len(source.commit()) == 40
    names = {e.name for e in cd.exported_names(cd.TileLangTree(source, _external), "tilelang")}
    assert "cdiv" in names and "os" not in names


# -- the committed document -------------------------------------------------------------------

DOC = ROOT / "docs" / "compat.md"


def _rows(document: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `([\w.]+)` \| ([a-z ]+) \|", document, re.M)}


def test_committed_doc_lists_the_core_names_as_supported():
    document = DOC.read_text()
    rows = _rows(document)
    for name in ("tilelang.language.gemm", "tilelang.language.copy", "tilelang.language.Kernel",
                 "tilelang.language.prim_func", "tilelang.compile", "tilelang.jit"):
        assert rows.get(name) == "supported", name
    for module in cd.MODULES:  # the summary agrees with the rows
        mine = [s for n, s in rows.items() if n.rpartition(".")[0] == module and s in
                (cd.SUPPORTED, cd.NOT_YET, cd.NOT_APPLICABLE)]
        counts = [mine.count(s) for s in (cd.SUPPORTED, cd.NOT_YET, cd.NOT_APPLICABLE)]
        assert f"| `{module}` | {len(mine)} | {counts[0]} | {counts[1]} | {counts[2]} |" in document
    assert cd.EXAMPLES_BEGIN in document and cd.EXAMPLES_END in document


@pytest.mark.skipif(not MIRROR.is_dir(), reason=f"TileLang's source is not at {MIRROR}")
def test_committed_doc_has_every_name_tilelang_defines():
    """The names TileLang itself defines (TVM's left out: reading them imports TVM)."""
    source = cd.TileLangSource(MIRROR)
    written = re.search(r"TileLang commit `(\w+)`", DOC.read_text()).group(1)
    if source.commit() != written:
        pytest.skip(f"docs/compat.md is for TileLang {written[:9]}, the mirror holds "
                    f"{source.commit()[:9]}: regenerate it with scripts/compat_doc.py")
    tree = cd.TileLangTree(source, lambda module: [])
    rows = _rows(DOC.read_text())
    missing = [f"{e.module}.{e.name}" for m in cd.MODULES for e in cd.exported_names(tree, m)
               if f"{e.module}.{e.name}" not in rows]
    assert not missing
