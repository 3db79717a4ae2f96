"""Every ```python block of README.md runs as pasted (on the CPU), each in a fresh process."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def readme_blocks(path: Path = ROOT / "README.md") -> list[str]:
    """The Python code blocks of a Markdown file, in order."""
    return BLOCK.findall(path.read_text())


def test_the_readme_has_a_first_kernel():
    blocks = readme_blocks()
    assert blocks and "T.prim_func" in blocks[0] and "assert_allclose" in blocks[0]


@pytest.mark.parametrize("index", range(len(readme_blocks())))
def test_readme_block_runs_as_pasted(index, tmp_path):
    script = tmp_path / f"readme_block_{index}.py"  # T.prim_func reads its source from a file
    script.write_text(readme_blocks()[index])
    env = {**os.environ, "TILELANG_BACKENDS": "cpu"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=600)
    assert done.returncode == 0, f"README block {index} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
