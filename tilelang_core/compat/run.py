"""`tilelang run prog.py [args...]` and `tilelang run -m module [args...]`: run a TileLang
program unchanged, with `import tilelang` resolved to tilelang-core for that process only.

Also `python -m tilelang_core.compat.run prog.py [args...]`. The program runs as `__main__`
(through `runpy`), with `sys.argv` and `sys.path[0]` set as `python prog.py` /
`python -m module` would set them; its exit status is the command's exit status. The
processes the program starts resolve `tilelang` the same way (`TILELANG_CORE_ALIAS`, see
`activate`).
"""
from __future__ import annotations

import os
import runpy
import sys

__all__ = ["main", "run_program", "USAGE"]

USAGE = "usage: tilelang run PROGRAM.py [ARGS...]  |  tilelang run -m MODULE [ARGS...]"


def _exit_status(code: object) -> int:
    """The status `sys.exit(code)` gives a process: None 0, an int itself, anything else 1
    (printed to stderr, as the interpreter does)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_program(argv: list[str]) -> int:
    """Install the import aliasing, then run `argv` (`[path, *args]` or `["-m", module, *args]`)
    as `__main__`. Returns the exit status; an exception the program raises propagates."""
    from ..env import COMPAT_ALIAS_VAR
    from .finder import install

    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    if argv[0] == "-m":
        if len(argv) < 2:
            print(f"error: -m needs a module name\n{USAGE}", file=sys.stderr)
            return 2
        module, args = argv[1], argv[2:]
        path = None
    else:
        path, args = argv[0], argv[1:]
        if not os.path.isfile(path):
            print(f"error: program {path!r} is not a file\n{USAGE}", file=sys.stderr)
            return 2
    # children (pytest-xdist workers, multiprocessing spawn) inherit the variable, and the
    # `.pth` tilelang-core installs aliases them at their start (see `activate`)
    os.environ[COMPAT_ALIAS_VAR] = "1"
    install()
    try:
        if path is not None:
            sys.argv = [path, *args]
            sys.path[0:1] = [os.path.dirname(os.path.abspath(path))]
            runpy.run_path(path, run_name="__main__")
        else:
            sys.argv = [module, *args]  # runpy puts the module's file in argv[0]
            sys.path[0:1] = [os.getcwd()]
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        return _exit_status(exc.code)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_program(list(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
