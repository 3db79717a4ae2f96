"""The aliasing reaches the processes a program under `tilelang run` starts (a plain
subprocess, multiprocessing spawn and forkserver, a pytest-xdist worker), and never a plain
interpreter: there, `import tilelang` finds an installed upstream TileLang."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tilelang_core.env import COMPAT_ALIAS_VAR


@pytest.fixture
def upstream(tmp_path) -> Path:
    """A folder holding a stand-in for an installed upstream TileLang (`tilelang.ORIGIN`)."""
    (tmp_path / "site" / "tilelang").mkdir(parents=True)
    (tmp_path / "site" / "tilelang" / "__init__.py").write_text("ORIGIN = 'upstream'\n")
    return tmp_path / "site"


def _env(upstream: Path, alias: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != COMPAT_ALIAS_VAR}
    env["PYTHONPATH"] = os.pathsep.join([str(upstream), *filter(None, [env.get("PYTHONPATH")])])
    if alias:
        env[COMPAT_ALIAS_VAR] = "1"
    return env


CHILDREN = """
    import json, multiprocessing, subprocess, sys

    def name():
        import tilelang
        return getattr(tilelang, "ORIGIN", tilelang.__name__)

    if __name__ == "__main__":
        seen = {"parent": name()}
        code = "import tilelang; print(getattr(tilelang, 'ORIGIN', tilelang.__name__))"
        seen["subprocess"] = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                            text=True, check=True).stdout.strip()
        for method in ("spawn", "forkserver"):
            with multiprocessing.get_context(method).Pool(1) as pool:
                seen[method] = pool.apply(name)
        print(json.dumps(seen))
"""


def test_children_of_tilelang_run_resolve_the_alias(tmp_path, upstream):
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent(CHILDREN))
    out = subprocess.run([sys.executable, "-m", "tilelang_core.compat.run", str(program)], capture_output=True,
                         text=True, env=_env(upstream, alias=False), timeout=120)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == dict.fromkeys(("parent", "subprocess", "spawn", "forkserver"), "tilelang_core")


def test_xdist_workers_under_tilelang_run_resolve_the_alias(tmp_path, upstream):
    pytest.importorskip("xdist")
    (tmp_path / "test_worker.py").write_text(textwrap.dedent("""
        import os
        import tilelang

        def test_worker_sees_the_core():
            assert os.environ.get("PYTEST_XDIST_WORKER"), "not run in an xdist worker"
            assert tilelang.__name__ == "tilelang_core"
            import tilelang.language as T
            assert T.__name__ == "tilelang_core.language"
    """))
    out = subprocess.run([sys.executable, "-m", "tilelang_core.compat.run", "-m", "pytest", "-q", "-n", "1",
                          "-p", "no:cacheprovider", "test_worker.py"], capture_output=True, text=True,
                         cwd=tmp_path, env=_env(upstream, alias=False), timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout


def test_plain_interpreter_finds_upstream_tilelang(upstream):
    code = ("import sys, tilelang\n"
            "print(tilelang.ORIGIN, any(type(f).__name__ == 'TileLangFinder' for f in sys.meta_path))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(upstream, alias=False), timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["upstream", "False"]


def test_the_variable_alone_aliases_an_interpreter(upstream):
    """The documented one line for tools that start their own interpreters."""
    out = subprocess.run([sys.executable, "-c", "import tilelang; print(tilelang.__name__)"], capture_output=True,
                         text=True, env=_env(upstream, alias=True), timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "tilelang_core"
