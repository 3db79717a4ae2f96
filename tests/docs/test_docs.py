"""The documentation site: it builds with `mkdocs build --strict`, its environment-variable page
names every variable `tilelang_core.env` reads, and its compliance page is generated from the
conformance reports kept beside it."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_every_environment_variable_is_documented():
    read = set(re.findall(r'environ\.get\("(TILELANG_[A-Z_]+)"', (ROOT / "tilelang_core" / "env.py").read_text()))
    documented = set(re.findall(r"`(TILELANG_[A-Z_]+)`", (ROOT / "docs" / "environment.md").read_text()))
    assert read and read <= documented, f"not in docs/environment.md: {sorted(read - documented)}"


def test_the_compliance_page_is_generated_from_the_reports():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "compliance_table.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    page = (ROOT / "docs" / "compliance.md").read_text()
    assert "| cuda/sm_86 | compile |" in page and "| cuda/sm_120 | compile |" in page
    assert "**FAIL**" not in page


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install 'tilelang-core[docs]')")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed (pip install 'tilelang-core[docs]')")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    index = (tmp_path / "site" / "index.html").read_text()
    assert "tilelang-core" in index
    assert (tmp_path / "site" / "api" / "index.html").read_text().count("compile") > 3
