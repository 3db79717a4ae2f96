"""Every backend package imports only the core's public API.

The public API is `tilelang_core.PUBLIC_MODULES`: the top-level package and the subpackages
listed there, each exposing the names in its `__all__`. A backend may write
`from tilelang_core.codegen import CStyleCodegen` (a name in that `__all__`) or
`from tilelang_core import language` (a public module), never
`from tilelang_core.codegen.cexpr import ...` (an internal module) nor a name a public module
does not export. Every folder under backends/ with a pyproject.toml is checked, so a new
backend is covered the day it lands.
"""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import tilelang_core

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = sorted(p.parent for p in (ROOT / "backends").glob("*/pyproject.toml"))


def _public_names(module: str) -> set[str]:
    return set(getattr(importlib.import_module(module), "__all__", ()))


def violations(package: Path) -> list[str]:
    """`file:line: what` for every import of the core that is not its public API."""
    public = set(tilelang_core.PUBLIC_MODULES)
    found = []
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package.parent)
        if any(part in ("build", "dist") or part.startswith(".") for part in where.parts[1:]):
            continue  # build outputs (copies of the sources), not the package
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("tilelang_core") and alias.name not in public:
                        found.append(f"{where}:{node.lineno}: imports internal module {alias.name}")
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("tilelang_core"):
                if node.module not in public:
                    found.append(f"{where}:{node.lineno}: imports from internal module {node.module}")
                    continue
                exported = _public_names(node.module)
                for alias in node.names:
                    if alias.name not in exported and f"{node.module}.{alias.name}" not in public:
                        found.append(f"{where}:{node.lineno}: {alias.name} is not in {node.module}.__all__")
    return found


def test_the_public_modules_export_what_they_list():
    for module in tilelang_core.PUBLIC_MODULES:
        mod = importlib.import_module(module)
        missing = [name for name in getattr(mod, "__all__", ()) if not hasattr(mod, name)]
        assert not missing, f"{module}.__all__ lists names it does not have: {missing}"


def test_public_functions_and_classes_have_docstrings():
    undocumented = []
    for module in tilelang_core.PUBLIC_MODULES:
        if module == "tilelang_core.language":  # TileLang's and TVMScript's names, documented there
            continue
        mod = importlib.import_module(module)
        for name in getattr(mod, "__all__", ()):
            value = getattr(mod, name)
            if (callable(value) or isinstance(value, type)) and not (getattr(value, "__doc__", None) or "").strip():
                undocumented.append(f"{module}.{name}")
    assert not undocumented, f"public names without a docstring: {undocumented}"


@pytest.mark.parametrize("package", BACKENDS, ids=[p.name for p in BACKENDS])
def test_backend_imports_only_the_public_api(package):
    problems = violations(package)
    assert not problems, "\n".join(problems)


def test_the_checker_catches_internal_imports(tmp_path):
    package = tmp_path / "fake"
    package.mkdir()
    (package / "bad.py").write_text(
        "from tilelang_core.codegen.cexpr import PREC_ATOM\n"
        "import tilelang_core.transform.simt\n"
        "from tilelang_core.codegen import _reset_everything\n"
        "from tilelang_core.codegen import CStyleCodegen\n"
        "from tilelang_core import language\n")
    problems = violations(package)
    assert len(problems) == 3, problems
    assert "internal module tilelang_core.codegen.cexpr" in problems[0]
