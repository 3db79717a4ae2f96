"""What a tuning run shows: a rich progress display over compile and benchmark (drawn only
when the console is a terminal) and a summary of the outcome (always printed: the best
config, and every skipped config with its reason)."""
from __future__ import annotations

from typing import Any, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .param import CandidateOutcome

__all__ = ["TuningProgress", "make_console", "print_summary"]


def make_console() -> Console:
    """The console tuning reports on: standard error, so a program's own output stays clean."""
    return Console(stderr=True)


class TuningProgress:
    """Two bars, "compile" and "benchmark", each over the candidates; a context manager."""

    def __init__(self, name: str, total: int, console: Console) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.fields[note]}"), console=console, disable=not console.is_terminal)
        self._compile = self._progress.add_task(f"{name}: compile", total=total, note="")
        self._bench = self._progress.add_task(f"{name}: benchmark", total=total, note="")
        self.enabled = console.is_terminal

    def __enter__(self) -> "TuningProgress":
        self._progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._progress.stop()

    def compiled(self, note: str = "") -> None:
        self._progress.update(self._compile, advance=1, note=note)

    def benched(self, best_latency: float | None) -> None:
        note = f"best {best_latency:.4g} ms" if best_latency is not None else ""
        self._progress.update(self._bench, advance=1, note=note)

    def skip_benchmarks(self, count: int) -> None:
        """Candidates that never reach the benchmark still fill its bar."""
        if count:
            self._progress.update(self._bench, advance=count)


def print_summary(console: Console, name: str, outcomes: Sequence[CandidateOutcome],
                  best: CandidateOutcome | None, ref_latency: float | None) -> None:
    """The best config (or that none survived) and the skipped configs with their reasons."""
    skipped = [o for o in outcomes if o.status == "skipped"]
    if best is not None:
        ref = f", reference {ref_latency:.4g} ms" if ref_latency is not None else ""
        console.print(f"autotune {name}: best of {len(outcomes)} configs is {best.config} at {best.latency:.4g} ms"
                      f"{ref}; {len(skipped)} skipped", highlight=False, soft_wrap=True)
    if not skipped:
        return
    table = Table(title=f"autotune {name}: skipped configs", title_justify="left", show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("config")
    table.add_column("reason")
    for outcome in skipped:
        table.add_row(str(outcome.index), str(outcome.config), outcome.reason.splitlines()[0] if outcome.reason else "")
    console.print(table)
