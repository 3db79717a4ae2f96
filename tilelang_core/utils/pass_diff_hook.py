"""The pass-diff hook (TileLang's `tilelang.utils.pass_diff_hook`): with `TILELANG_PASS_DIFF` set
(`terminal`, `html` or `both`; see `tilelang_core.env.get_pass_diff_mode`), every pass reports how
it changed the IR, with no change to the program:

    TILELANG_PASS_DIFF=terminal python my_kernel.py
    TILELANG_PASS_DIFF=html TILELANG_PASS_DIFF_OUTPUT=reports python my_kernel.py

"Every pass" is each TVM `Pass` called (its `__call__` is wrapped while the hook is installed)
and each pass of the core's pipeline (through `tilelang_core.transform.pipeline.PASS_OBSERVERS`).
HTML reports go to `TILELANG_PASS_DIFF_OUTPUT/pass_diff_<time>.html`, rewritten after every pass
so a crash leaves the passes before it. `install_pass_diff_hook()` does nothing when the variable
is off and is idempotent; `uninstall_pass_diff_hook()` restores everything.
"""
from __future__ import annotations

import atexit
import os
import time
from typing import Any

from .. import env
from . import pass_diff as _diff

__all__ = ["install_pass_diff_hook", "uninstall_pass_diff_hook"]

_original_call = None  # Pass.__call__ while the hook is installed, else None
_html_path: str | None = None
_mode: str | None = None
_steps: list[dict] = []
_counter = 0
_atexit_registered = False


def _script(ir: Any) -> str:
    try:
        return ir.script()
    except Exception as err:  # noqa: BLE001 - a report must not stop the compile
        return f"<no script: {type(err).__name__}: {err}>"


def _report(name: str, before: Any, after: Any) -> None:
    global _counter
    _counter += 1
    before_script, after_script = _script(before), _script(after)
    diff = _diff._compute_diff(before_script.splitlines(), after_script.splitlines(), context=3)
    insertions, deletions = _diff._count_changes(diff)
    step = {"name": f"Pass {_counter}: {name}", "before_script": before_script, "after_script": after_script,
            "diff_lines": diff, "insertions": insertions, "deletions": deletions,
            "changed": bool(insertions or deletions)}
    if _mode in ("terminal", "both"):
        _diff._print_step_header(_counter, "?", name)
        _diff._print_colored_diff(diff)
    if _mode in ("html", "both") and _html_path:
        _steps.append(step)
        _diff._generate_html(_steps, _html_path)


def _patched_call(self, mod, *args, **kwargs):
    result = _original_call(self, mod, *args, **kwargs)
    _report(_diff._pass_name(self), mod, result)
    return result


def _write_at_exit() -> None:
    if _html_path and _steps:
        _diff._generate_html(_steps, _html_path)
        print(f"[pass_diff] HTML report: {_html_path}")


def install_pass_diff_hook() -> None:
    """Start reporting every pass, when `TILELANG_PASS_DIFF` asks for it (see the module)."""
    global _original_call, _html_path, _mode, _atexit_registered
    mode = env.get_pass_diff_mode()
    if mode is None or _original_call is not None:
        return
    from tvm.ir.transform import Pass

    from ..transform.pipeline import PASS_OBSERVERS

    _mode = mode
    if mode in ("html", "both"):
        folder = str(env.TILELANG_PASS_DIFF_OUTPUT)
        os.makedirs(folder, exist_ok=True)
        _html_path = os.path.join(folder, f"pass_diff_{time.strftime('%Y%m%d_%H%M%S')}.html")
    _original_call = Pass.__call__
    Pass.__call__ = _patched_call
    PASS_OBSERVERS.append(_report)
    if not _atexit_registered:
        atexit.register(_write_at_exit)
        _atexit_registered = True


def uninstall_pass_diff_hook() -> None:
    """Stop reporting and restore `Pass.__call__` (nothing to do when not installed)."""
    global _original_call, _html_path, _mode, _counter
    if _original_call is None:
        return
    from tvm.ir.transform import Pass

    from ..transform.pipeline import PASS_OBSERVERS

    Pass.__call__ = _original_call
    if _report in PASS_OBSERVERS:
        PASS_OBSERVERS.remove(_report)
    _original_call, _html_path, _mode, _counter = None, None, None, 0
    _steps.clear()
