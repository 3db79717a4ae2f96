"""`tilelang run PROGRAM.py [args]`, `tilelang run -m MODULE [args]` and
`python -m tilelang_core.compat.run`: the program runs as `__main__` with `import tilelang`
resolved to tilelang-core, and its exit status is the command's."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TILELANG = shutil.which("tilelang", path=os.path.dirname(sys.executable))

PROGRAM = """
    import json, os, sys
    import tilelang
    import helper  # a module beside the program: sys.path[0] is the program's folder
    print(json.dumps({"name": __name__, "argv": sys.argv, "tilelang": tilelang.__name__,
                      "helper": helper.VALUE, "file": os.path.basename(__file__)}))
    sys.exit(int(sys.argv[-1]) if sys.argv[-1].isdigit() else None)
"""


@pytest.fixture
def program(tmp_path) -> Path:
    (tmp_path / "helper.py").write_text("VALUE = 'beside the program'\n")
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(PROGRAM))
    return path


def _run(args: list[str], cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, timeout=120)


def _last_json(out: subprocess.CompletedProcess) -> dict:
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(TILELANG is None, reason="the `tilelang` console script is not installed in this environment")
def test_tilelang_run_a_program(program, tmp_path):
    out = _run([TILELANG, "run", str(program), "--flag", "x", "3"], cwd=tmp_path.parent)
    assert out.returncode == 3, out.stderr
    assert _last_json(out) == {"name": "__main__", "argv": [str(program), "--flag", "x", "3"],
                               "tilelang": "tilelang_core", "helper": "beside the program", "file": "prog.py"}


def test_python_dash_m_run_and_exit_status_zero(program):
    out = _run([sys.executable, "-m", "tilelang_core.compat.run", str(program), "a"])
    assert out.returncode == 0, out.stderr
    assert _last_json(out)["argv"] == [str(program), "a"]


def test_run_a_module(tmp_path):
    (tmp_path / "mymod.py").write_text(textwrap.dedent("""
        import json, sys
        from tilelang.math import cdiv
        print(json.dumps({"name": __name__, "argv": sys.argv[1:], "cdiv": cdiv.__module__}))
        raise SystemExit("failed on purpose")
    """))
    out = _run([sys.executable, "-m", "tilelang_core.cli.main", "run", "-m", "mymod", "-q", "--x=1"], cwd=tmp_path)
    assert out.returncode == 1 and "failed on purpose" in out.stderr
    assert _last_json(out) == {"name": "__main__", "argv": ["-q", "--x=1"], "cdiv": "tilelang_core.compat.names"}


def test_an_exception_in_the_program_is_a_traceback_and_status_1(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import tilelang\nraise ValueError('bad input on purpose')\n")
    out = _run([sys.executable, "-m", "tilelang_core.compat.run", str(bad)])
    assert out.returncode == 1
    assert "ValueError: bad input on purpose" in out.stderr and "bad.py" in out.stderr


@pytest.mark.parametrize("args,status,needle", [
    ([], 2, "usage: tilelang run PROGRAM.py"),
    (["missing_program.py"], 2, "program 'missing_program.py' is not a file"),
    (["-m"], 2, "-m needs a module name"),
])
def test_usage_errors(args, status, needle, tmp_path):
    out = _run([sys.executable, "-m", "tilelang_core.cli.main", "run", *args], cwd=tmp_path)
    assert out.returncode == status and needle in out.stderr


def test_help_lists_run():
    out = _run([sys.executable, "-m", "tilelang_core.cli.main", "--help"])
    assert out.returncode == 0 and "run" in out.stdout and "import tilelang" in out.stdout
    out = _run([sys.executable, "-m", "tilelang_core.cli.main", "run", "--help"])
    assert out.returncode == 0 and "-m MODULE" in out.stdout


@pytest.mark.slow
def test_run_pytest_on_a_tilelang_style_test_file(tmp_path):
    """`tilelang run -m pytest FILE`: TileLang's own tests run this way; target "c" is the CPU."""
    (tmp_path / "test_tl_style.py").write_text(textwrap.dedent("""
        import numpy as np
        import tilelang
        import tilelang.language as T
        from tilelang import tvm


        def test_add_one_on_c():
            @T.prim_func
            def add_one(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
                with T.Kernel(1):
                    for i in T.serial(8):
                        B[i] = A[i] + 1.0

            with tvm.target.Target("c"):
                kernel = tilelang.compile(add_one, out_idx=[1])
            assert kernel.target.kind == "cpu"
            a = np.arange(8, dtype="float32")
            np.testing.assert_allclose(kernel(a), a + 1)


        def test_fails_on_purpose():
            assert tilelang.__name__ == "tilelang"  # it is tilelang_core: fails
    """))
    env = {**os.environ, "TILELANG_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-m", "tilelang_core.compat.run", "-m", "pytest", "-q", "-p",
                          "no:cacheprovider", "test_tl_style.py"], capture_output=True, text=True, cwd=tmp_path,
                         env=env, timeout=300)
    assert out.returncode == 1, out.stdout + out.stderr  # pytest's status: a test failed
    assert "1 failed, 1 passed" in out.stdout, out.stdout
