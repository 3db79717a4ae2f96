"""Per-candidate time limits inside one process."""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

__all__ = ["CandidateTimeout", "deadline", "describe_error"]


class CandidateTimeout(Exception):
    """A candidate's compile, check or timing ran past the autotuner's `timeout`."""


@contextlib.contextmanager
def deadline(seconds: float | None, what: str) -> Iterator[None]:
    """Raise `CandidateTimeout` in the block after `seconds`.

    Uses SIGALRM, so it is enforced only in the main thread of a POSIX process, and only at
    Python bytecode boundaries: a call stuck inside native code (a device hang) is interrupted
    when it returns to Python. Elsewhere the block runs without a limit.
    """
    if not seconds or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum, frame):  # noqa: ARG001
        raise CandidateTimeout(f"{what} took longer than the timeout ({seconds:g} s)")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def describe_error(err: BaseException, limit: int = 4000) -> str:
    """`Type: message`, cut to `limit` characters (a toolchain log can be long)."""
    text = f"{type(err).__name__}: {err}".strip()
    return text if len(text) <= limit else text[:limit] + " ..."
