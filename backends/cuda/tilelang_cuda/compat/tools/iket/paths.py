"""Where IKET's exports go, and the command line that profiles a program (host side only:
nothing here runs the profiler). The directory is this process's setting, mirrored in
`TL_IKET_OUTPUT_DIR` for the profiler and child processes."""
from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

__all__ = ["set_output_dir", "output_dir", "output_path", "trace_files", "profile_command", "OUTPUT_DIR_VAR"]

OUTPUT_DIR_VAR = "TL_IKET_OUTPUT_DIR"  # IKET's variable, read and written only here
_directory: Path | None = None


def set_output_dir(path: str | os.PathLike | None) -> Path | None:
    """Export to `path` (created) from now on; None forgets the setting."""
    global _directory
    if path is None:
        _directory = None
        os.environ.pop(OUTPUT_DIR_VAR, None)
        return None
    _directory = Path(path).expanduser().absolute()
    _directory.mkdir(parents=True, exist_ok=True)
    os.environ[OUTPUT_DIR_VAR] = str(_directory)
    return _directory


def output_dir(default: str | os.PathLike | None = None) -> Path | None:
    """The export directory: the one set, else `TL_IKET_OUTPUT_DIR`, else `default`."""
    if _directory is not None:
        return _directory
    chosen = os.environ.get(OUTPUT_DIR_VAR) or default
    return None if chosen is None else Path(chosen).expanduser().absolute()


def output_path(name: str, *, directory: str | os.PathLike | None = None) -> Path:
    """`name` inside the export directory (`directory` when none is set), which is created."""
    base = output_dir(directory)
    if base is None:
        raise RuntimeError(f"iket.output_path({name!r}): no IKET output directory; call iket.set_output_dir(...), "
                           f"open iket.session(output_dir=...), or pass directory=")
    base.mkdir(parents=True, exist_ok=True)
    return base / name


def trace_files(*, directory: str | os.PathLike | None = None) -> list[Path]:
    """The profiler's JSON traces (`*.trace.json`) in the export directory, largest first."""
    base = output_dir(directory)
    if base is None or not base.is_dir():
        return []
    return sorted(base.glob("*.trace.json"), key=lambda p: p.stat().st_size, reverse=True)


def profile_command(command: str | Sequence[str], *, directory: str | os.PathLike, postprocess: str = "all",
                    clobber: bool = True) -> str:
    """The shell command that runs `command` under IKET's profiler, exporting to `directory`."""
    parts = ["python", "-m", "iket.cli.main", "--output-dir", str(Path(directory).expanduser())]
    parts += (["--clobber"] if clobber else []) + ["profile", "--postprocess", postprocess, "--"]
    head = " ".join(shlex.quote(p) for p in parts)
    tail = command if isinstance(command, str) else " ".join(shlex.quote(str(c)) for c in command)
    return f"{head} {tail}"


def snapshot() -> tuple[Path | None, str | None]:
    """The setting and the variable, for `restore`."""
    return _directory, os.environ.get(OUTPUT_DIR_VAR)


def restore(state: tuple[Path | None, str | None]) -> None:
    global _directory
    _directory, variable = state
    if variable is None:
        os.environ.pop(OUTPUT_DIR_VAR, None)
    else:
        os.environ[OUTPUT_DIR_VAR] = variable
