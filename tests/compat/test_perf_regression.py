"""`tilelang.testing.regression()` runs a script's `regression_*` cases as TileLang's
regression examples expect."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap


SCRIPT = textwrap.dedent('''
    import tilelang_core.testing as testing

    calls = []

    def bench(scale=1.0):
        calls.append(scale)
        return 0.5 * scale

    def regression_b():
        testing.process_func(bench, scale=2.0)

    def regression_a():
        testing.process_func(bench)

    def not_a_case():
        raise AssertionError("must not run")

    testing.regression()
    assert calls == [1.0, 2.0], calls
''')


def _run(tmp_path, env=None, script=SCRIPT):
    path = tmp_path / "regression_demo.py"
    path.write_text(script)
    import os
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def test_cases_run_in_name_order_and_print_their_latency(tmp_path):
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [l for l in done.stdout.splitlines() if l.startswith("__main__")]
    assert lines == ["__main__: 0.5", "__main__: 1.0"], done.stdout


def test_json_format_and_only_filter(tmp_path):
    script = SCRIPT.replace("assert calls == [1.0, 2.0], calls", "assert calls == [2.0], calls")
    done = _run(tmp_path, {"TL_PERF_REGRESSION_FORMAT": "json", "TL_PERF_REGRESSION_ONLY": "b"}, script)
    assert done.returncode == 0, done.stderr
    marker = [l for l in done.stdout.splitlines() if l.startswith("__TILELANG_PERF_RESULTS_JSON__=")]
    assert json.loads(marker[0].split("=", 1)[1]) == [{"name": "__main__", "latency": 1.0, "case": "b"}]


def test_a_failing_case_fails_the_script(tmp_path):
    script = SCRIPT.replace("return 0.5 * scale", "raise RuntimeError('kernel broke')")
    done = _run(tmp_path, script=script)
    assert done.returncode != 0 and "kernel broke" in done.stderr
