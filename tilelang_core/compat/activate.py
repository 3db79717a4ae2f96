"""The aliasing in every process of a run: `TILELANG_CORE_ALIAS=1` and a `.pth` file.

tilelang-core installs `tilelang_core_alias.pth` at the top of site-packages. Python runs it
at every interpreter start; it does nothing unless the environment variable
`TILELANG_CORE_ALIAS` is set (and not "0"), and then imports this module, which calls
`finder.install()`. So a process started by a process that runs under `tilelang run`
(pytest-xdist workers, multiprocessing spawn and forkserver children, the autotuner's
workers, `subprocess.run([sys.executable, ...])`) resolves `import tilelang` to
tilelang-core as its parent does, while a plain interpreter, whose environment lacks the
variable, finds an installed upstream TileLang as always.

`tilelang run` sets the variable for its own process (inherited by its children). A tool
that starts its own interpreters without `tilelang run` needs one line:

    TILELANG_CORE_ALIAS=1 python -m pytest -n 16 testing/python

(or `os.environ["TILELANG_CORE_ALIAS"] = "1"` before it starts them). The `.pth` reads the
variable itself rather than through `tilelang_core.env`, so that an interpreter that is not
asked pays nothing but one dictionary lookup.
"""
from __future__ import annotations

from ..env import compat_alias

__all__ = ["ENV_VAR", "activate"]

ENV_VAR = "TILELANG_CORE_ALIAS"


def activate() -> bool:
    """Install the aliasing in this process when `TILELANG_CORE_ALIAS` asks for it; returns
    whether it is installed. A process that already imported an upstream `tilelang` keeps it
    (a warning says so) rather than failing at interpreter start."""
    if not compat_alias():
        return False
    from .finder import install

    try:
        install()
    except ImportError as exc:
        import warnings

        warnings.warn(f"{ENV_VAR} is set but the aliasing was not installed: {exc}", stacklevel=2)
        return False
    return True


activate()
