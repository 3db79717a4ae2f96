"""scripts/tilelang_examples.py: which files of an examples folder are example scripts, which
are left out and why, and how a run's outcome is read."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("tilelang_examples_runner", ROOT / "scripts" / "tilelang_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(folder: Path, rel: str, text: str) -> None:
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


MAIN = 'if __name__ == "__main__":\n    main()\n'


def test_discovery_finds_scripts_and_names_what_it_leaves_out(tmp_path):
    _write(tmp_path, "gemm/example_gemm.py", "import tilelang\nfrom helpers import f\ndef main(): pass\n" + MAIN)
    _write(tmp_path, "gemm/helpers.py", "import tilelang\ndef f(): pass\n")  # imported by a script: a helper
    _write(tmp_path, "gemm/test_example_gemm.py", "import tilelang\nimport example_gemm\n")  # TileLang's tests
    _write(tmp_path, "quickstart.py", "import tilelang\nprint('runs at top level')\n")
    _write(tmp_path, "amd/example_mfma.py", "import tilelang\n" + MAIN)
    _write(tmp_path, "attn/example_fa.py", "import tilelang\nimport flash_attn\n" + MAIN)
    _write(tmp_path, "gdn/example_cumsum.py",
           "import tilelang\ntry:\n    from fla.ops import cumsum\nexcept ImportError:\n    pass\n"
           "def main():\n    cumsum()\n" + MAIN)
    _write(tmp_path, "lin/example_optional.py",
           "import tilelang\ntry:\n    import fancy\nexcept ImportError:\n    fancy = None\n" + MAIN)
    _write(tmp_path, "torch_only.py", "import torch\n" + MAIN)
    run, left_out = _module().discover(tmp_path)
    assert run == ["gemm/example_gemm.py", "lin/example_optional.py", "quickstart.py"]
    assert left_out["amd/example_mfma.py"] == "AMD (ROCm) only"
    assert "flash_attn" in left_out["attn/example_fa.py"]
    assert "fla" in left_out["gdn/example_cumsum.py"]


def test_outcomes_are_read_honestly():
    runner = _module()
    record = {"example": "x/example.py", "outcome": "fail", "status": 1,
              "error": "ModuleNotFoundError: No module named 'flash_attn'"}
    assert runner.classify(record, "")["outcome"] == "left out"
    ours = {**record, "error": "ModuleNotFoundError: No module named 'tilelang.tools'"}
    assert runner.classify(ours, "")["outcome"] == "fail"  # our gap, never left out
    buggy = {"example": "autodd/tilelang_buggy.py", "outcome": "fail", "status": 1, "error": "KernelSyntaxError"}
    assert runner.classify(buggy, "T.gemm: K of A is 32 but K of B is 128")["outcome"] == "pass"
    assert runner.classify({**buggy, "status": 0, "outcome": "pass"}, "")["outcome"] == "fail"


def test_blackwell_only_names_leave_a_script_out(tmp_path):
    _write(tmp_path, "aws/gemm.py", "import tilelang\nimport tilelang.language as T\n"
                                    "def k():\n    C = T.alloc_tmem([128, 128], 'float32')\n" + MAIN)
    run, left_out = _module().discover(tmp_path)
    assert run == [] and "Blackwell" in left_out["aws/gemm.py"]
