"""Reports: the feature x outcome table in the terminal (rich), JSON, and Markdown.

Every count names its evidence level ("12 run", "3 codegen"): outcomes reached at different
levels are never added together.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Iterable, Sequence

from .result import LEVELS, NA, OUTCOMES, Result, level_rank

__all__ = ["feature_summary", "format_cell", "claim_status", "to_json", "to_markdown", "print_terminal",
           "case_catalogue"]

_STYLE = {"PASS": "green", "FAIL": "bold red", "XFAIL": "yellow", "XPASS": "bold magenta", "N/A": "dim"}


def feature_summary(results: Iterable[Result]) -> dict[str, dict[str, Counter]]:
    """feature -> outcome -> Counter of evidence levels ("-" for N/A)."""
    table: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for r in results:
        table[r.feature][r.outcome][r.level or "-"] += 1
    return {f: dict(v) for f, v in table.items()}


def format_cell(levels: Counter | None) -> str:
    """"12 run", "2 codegen · 9 run" (weakest evidence first); "" when empty."""
    if not levels:
        return ""
    keys = sorted(levels, key=lambda k: level_rank(k) if k in LEVELS else -1)
    return " · ".join(str(levels[k]) if k == "-" else f"{levels[k]} {k}" for k in keys)


def claim_status(claim: Any, by_case: dict[str, Result], switched_off: dict[str, str] | None = None) -> str:
    """What the probes of one declared capability found; a capability the run's pass configs
    switch off is reported as such, whatever its probes did (they probed the other path)."""
    if switched_off and claim.capability in switched_off:
        return f"switched off by {switched_off[claim.capability]}: not probed in this run"
    if not claim.cases:
        return "not probed (no case exercises it)"
    seen = [by_case[c] for c in claim.cases if c in by_case]
    if not seen:
        return "not evaluated (probes filtered out)"
    worst = sorted(seen, key=lambda r: OUTCOMES.index(r.outcome))
    bad = [r for r in seen if r.failing]
    if bad:
        return "FAIL: " + ", ".join(f"{r.case} ({r.outcome} at {r.level})" for r in bad)
    counts = Counter(f"{r.outcome} ({r.level})" if r.level else r.outcome for r in worst)
    return ", ".join(f"{n}x {k}" if n > 1 else k for k, n in counts.items())


def _totals(results: Sequence[Result]) -> str:
    counts = Counter(r.outcome for r in results)
    return ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o])


def to_json(reports: Sequence[Any]) -> dict[str, Any]:
    out = []
    for rep in reports:
        by_case = {r.case: r for r in rep.results}
        out.append({
            "target": rep.target,
            "level": rep.level,
            "level_reason": rep.level_reason,
            "seed": rep.seed,
            "header": rep.header,
            "pass_configs": rep.pass_configs,
            "switched_off": rep.switched_off,
            "capabilities": dict(rep.capabilities),
            "summary": {f: {o: dict(lv) for o, lv in v.items()} for f, v in feature_summary(rep.results).items()},
            "claims": [{"capability": c.capability, "cases": list(c.cases),
                        "status": claim_status(c, by_case, rep.switched_off)}
                       for c in rep.claims],
            "results": [r.to_dict() for r in rep.results],
        })
    return {"format": "tilelang-conformance/1", "targets": out}


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def _markdown_target(rep: Any) -> list[str]:
    by_case = {r.case: r for r in rep.results}
    lines = [f"## {rep.target} — evidence level: {rep.level}", "",
             f"Level chosen because: {_md(rep.level_reason)}. Seed: `{rep.seed}`. "
             f"Totals: {_totals(rep.results)}.", "", "| | |", "|---|---|"]
    lines += [f"| {_md(k)} | {_md(v)} |" for k, v in rep.header.items()]
    lines += ["", "### Features", "", "| feature | " + " | ".join(OUTCOMES) + " |",
              "|---|" + "---|" * len(OUTCOMES)]
    for feature, row in sorted(feature_summary(rep.results).items()):
        lines.append(f"| {feature} | " + " | ".join(format_cell(row.get(o)) for o in OUTCOMES) + " |")
    lines += ["", "### Declared capabilities and their probes", "", "| capability | probes | found |", "|---|---|---|"]
    for claim in rep.claims:
        lines.append(f"| `{claim.capability}` | {_md(', '.join(claim.cases) or '-')} | {_md(claim_status(claim, by_case, rep.switched_off))} |")
    lines += ["", "### Cases", "", "| case | needs | outcome | evidence | detail |", "|---|---|---|---|---|"]
    for r in rep.results:
        detail = r.detail if r.outcome != "PASS" else r.detail[:80]
        lines.append(f"| `{r.case}` | {_md(', '.join(r.needs) or '-')} | {r.outcome} | {r.level or '-'} | "
                     f"{_md((r.stage + ': ' if r.stage else '') + detail)[:400]} |")
    lines += ["", "<details><summary>Capability table</summary>", "", "| capability | value |", "|---|---|"]
    lines += [f"| {_md(k)} | {_md(v)} |" for k, v in rep.capabilities]
    lines += ["", "</details>", ""]
    return lines


def to_markdown(reports: Sequence[Any], title: str = "Conformance") -> str:
    """One document: a section per target (header facts, features, claims, cases, table)."""
    lines = [f"# {title}", "",
             "Generated by `tilelang conformance`. Evidence levels: **run** = executed and every "
             "element matched a float64 NumPy reference; **compile** = the vendor toolchain accepted "
             "the generated code; **codegen** = source produced and checked without the vendor "
             "compiler. Counts at different levels are never added together.", ""]
    lines += ["| target | level | totals |", "|---|---|---|"]
    lines += [f"| {rep.target} | {rep.level} | {_totals(rep.results)} |" for rep in reports]
    lines.append("")
    for rep in reports:
        lines += _markdown_target(rep)
    return "\n".join(lines)


def _short(text: str, limit: int = 400) -> str:
    """One paragraph of at most `limit` characters, for a terminal cell."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def case_catalogue(cases: Iterable[Any]) -> str:
    """The static cases as a Markdown table: name, feature, capabilities needed, the
    capabilities it probes, the lowest level it means something at, what it checks."""
    lines = ["# Conformance cases", "",
             "Generated by `tilelang conformance --list --markdown PATH`. A target that lacks a capability in "
             "*needs* reports the case N/A; a case listed under *probes* is the evidence for that declared "
             "capability. Targets also get generated probes for declared dtypes and atomics not listed here.",
             "", "| case | feature | needs | probes | min level | checks |", "|---|---|---|---|---|---|"]
    for c in sorted(cases, key=lambda c: (c.feature, c.name)):
        lines.append(f"| `{c.name}` | {c.feature} | {_md(', '.join(c.needs) or '-')} | "
                     f"{_md(', '.join(c.claims) or '-')} | {c.min_level} | {_md(c.description)} |")
    return "\n".join(lines) + "\n"


def print_terminal(reports: Sequence[Any], console: Any = None, verbose: bool = False) -> None:
    """Per target: the header, the feature x outcome table, then failures (every case and
    the capability table with `verbose`). Text from backends and toolchains is escaped: it is not rich markup."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console()
    for rep in reports:
        head = " · ".join(f"{k} {v}" for k, v in rep.header.items() if k not in ("date", "python", "numpy"))
        console.print(f"[bold]{escape(rep.target)}[/bold] at level [bold]{rep.level}[/bold] "
                      f"({escape(rep.level_reason)}); seed {rep.seed}\n[dim]{escape(head)}[/dim]")
        table = Table(title=escape(f"conformance of {rep.target}: feature x outcome (count + evidence level)"))
        table.add_column("feature")
        for outcome in OUTCOMES:
            table.add_column(outcome, style=_STYLE[outcome])
        for feature, row in sorted(feature_summary(rep.results).items()):
            table.add_row(escape(feature), *(format_cell(row.get(o)) for o in OUTCOMES))
        console.print(table)
        shown = rep.results if verbose else [r for r in rep.results if r.outcome not in ("PASS", NA)]
        if shown:
            cases = Table(title=escape(f"{rep.target}: " + ("every case" if verbose else "cases not passing")))
            for col in ("case", "outcome", "evidence", "stage", "detail"):
                cases.add_column(col, overflow="fold")
            for r in shown:
                cases.add_row(escape(r.case), f"[{_STYLE[r.outcome]}]{r.outcome}[/]", r.level or "-",
                              escape(r.stage), escape(_short(r.detail)))
            console.print(cases)
        if verbose:
            caps = Table(title=escape(f"capability table of {rep.target}"))
            caps.add_column("capability")
            caps.add_column("value", overflow="fold")
            for key, value in rep.capabilities:
                caps.add_row(escape(key), escape(value))
            console.print(caps)
        unprobed = [c.capability for c in rep.claims if not c.cases]
        if unprobed:
            console.print(f"[dim]declared but not probed by any case: {escape(', '.join(unprobed))}[/dim]")
        console.print(f"totals: {_totals(rep.results)}\n")
