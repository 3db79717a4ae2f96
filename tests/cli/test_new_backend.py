"""`tilelang new-backend NAME`: the scaffolded package installs (not editable, into a
temporary folder), registers through its entry point, and passes the conformance suite at
the codegen level with zero edits — checked by running the package's own test."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tilelang_core.cli.main import main
from tilelang_core.cli.new_backend import ScaffoldError, scaffold_backend

EXPECTED = {"pyproject.toml", "README.md", "tests/test_acme_conformance.py", "tilelang_acme/__init__.py",
            "tilelang_acme/target.py", "tilelang_acme/codegen.py", "tilelang_acme/lower.py",
            "tilelang_acme/compile.py", "tilelang_acme/detect.py", "tilelang_acme/runtime.py",
            "tilelang_acme/plugin.py", "tilelang_acme/include/tl_acme.h"}


def test_scaffold_installs_registers_and_passes_the_codegen_suite(tmp_path):
    assert main(["new-backend", "acme", "--dest", str(tmp_path / "acme")]) == 0
    root = tmp_path / "acme"
    assert {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()} == EXPECTED
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(site), str(root)], check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    listed = subprocess.run([sys.executable, "-m", "tilelang_core.cli.main", "backends", "--json"],
                            capture_output=True, text=True, env=env, check=True)
    acme = [b for b in json.loads(listed.stdout)["backends"] if b["backend"] == "acme"]
    assert acme and acme[0]["targets"][0]["target"] == "acme/generic"
    # the package's own test: the whole suite at the codegen level, every case PASS or N/A
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root / "tests")],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_bad_names_and_existing_destinations_are_refused(tmp_path, capsys):
    for bad in ("Acme", "1acme", "my-chip", "class", ""):
        with pytest.raises(ScaffoldError, match="lowercase letters and digits"):
            scaffold_backend(bad, tmp_path / "x")
    (tmp_path / "taken").mkdir()
    assert main(["new-backend", "acme", "--dest", str(tmp_path / "taken")]) == 2
    assert "already exists; pass another destination" in capsys.readouterr().out
