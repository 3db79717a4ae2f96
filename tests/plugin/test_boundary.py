"""The core names no backend: no backend import, no comparison with a target's name.

Docstrings and comments may mention backends (documentation); code may not.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "tilelang_core"
BACKEND_WORDS = ("cpu", "cuda", "hip", "rocm", "musa", "metal", "nvidia", "amd", "llvm", "nvrtc", "hipcc")
PATTERN = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(BACKEND_WORDS) + r")(?![A-Za-z0-9])", re.I)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    docs = _docstring_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + ([node.module] if getattr(node, "module", None) else [])
            for name in names:
                if name and name.startswith("tilelang_") and not name.startswith("tilelang_core"):
                    if name != "tilelang_conformance.cli":  # optional CLI extension, not a backend
                        found.append(f"{path.name}:{node.lineno}: imports {name}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if PATTERN.search(node.value):
                found.append(f"{path.name}:{node.lineno}: string names a backend: {node.value[:60]!r}")
    return found


def test_core_names_no_backend():
    problems = []
    for path in sorted(CORE.rglob("*.py")):
        problems.extend(_violations(path))
    assert not problems, "\n".join(problems)


def test_checker_catches_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('"""cuda is fine in a docstring."""\nimport tilelang_cuda\nif t == "cuda": pass\n')
    problems = _violations(bad)
    assert len(problems) == 2
