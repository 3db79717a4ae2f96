"""`tilelang conformance` (also `tilelang-conformance`): run the suite, print the table,
write JSON/Markdown reports, export for another machine, or run such an export.

Exit status: 0 when nothing FAILed or XPASSed, 1 otherwise, 2 for a usage error (an unknown
backend or target, a level this machine cannot give).
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any, Sequence

__all__ = ["add_subcommand", "build_parser", "main"]

_EPILOG = """examples:
  tilelang conformance --backend cpu                     every cpu target, best level each
  tilelang conformance --target cuda/sm_90a --level compile --markdown docs/conformance/
  tilelang conformance --target cuda/sm_90a --export /tmp/sm90    (then, on the GPU machine:)
  tilelang conformance --from /tmp/sm90 --json sm90.json
  tilelang conformance --target cuda/sm_90a --export /tmp/sm90-mma \
      --pass-config tl.disable_wgmma=1 --pass-config tl.disable_tma_lower=1 \
      --pass-config tl.disable_warp_specialized=1     the older path (mma.sync + cp.async) on Hopper
  tilelang conformance --list --target hip/gfx942        cases and what they need
"""


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", action="append", default=[], metavar="NAME",
                        help="run on every target this installed backend declares (repeatable)")
    parser.add_argument("--target", action="append", default=[], metavar="KIND/ARCH",
                        help="run on this target (repeatable)")
    parser.add_argument("--level", default="auto", choices=("auto", "run", "compile", "codegen"),
                        help="evidence level: run needs the device, compile the toolchain; auto (default) "
                             "takes the highest this machine gives for each target")
    parser.add_argument("-k", "--cases", action="append", default=[], metavar="GLOB",
                        help="only cases whose name matches (repeatable), e.g. 'gemm.*'")
    parser.add_argument("--seed", type=int, default=None, help="seed of the inputs (default: fresh, reported)")
    parser.add_argument("--pass-config", dest="pass_configs", action="append", default=[], metavar="KEY=VALUE",
                        help="compile every case with this pass config (repeatable; TileLang's keys, e.g. "
                             "tl.disable_wgmma=1); recorded in the report and in an --export. A case that probes "
                             "a capability the configs switch off is N/A")
    parser.add_argument("--json", metavar="PATH", help="write the JSON report here")
    parser.add_argument("--markdown", metavar="PATH",
                        help="write the Markdown report here; a directory gets <name>-<date>.md")
    parser.add_argument("--export", metavar="DIR", help="compile every case for ONE target into DIR, to run elsewhere")
    parser.add_argument("--from", dest="from_dir", metavar="DIR", help="run an --export directory here (no TVM needed)")
    parser.add_argument("--list", action="store_true",
                        help="list the cases and what they need, then exit (--markdown PATH: write the catalogue)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case, not only those not passing")


def add_subcommand(subparsers: Any) -> argparse.ArgumentParser:
    """Register `conformance` on the `tilelang` command (called by tilelang_core.cli)."""
    parser = subparsers.add_parser("conformance", help="run the shared conformance suite against a backend",
                                   description=__doc__, epilog=_EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(parser)
    parser.set_defaults(func=run_command)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tilelang-conformance", description=__doc__, epilog=_EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser().parse_args(argv))


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def run_command(args: argparse.Namespace) -> int:
    from .configs import PassConfigError, parse_pass_configs

    try:
        args.pass_config_map = parse_pass_configs(args.pass_configs)
    except PassConfigError as exc:
        return _error(str(exc))
    if args.from_dir:
        if args.backend or args.target or args.export or args.list:
            return _error("--from takes no --backend/--target/--export/--list: the export names its target")
        from .export import block_tvm

        block_tvm()  # the run side of "compile here, run there" must not need TVM
        try:
            report = _run_from(args)
        except (OSError, ValueError, RuntimeError) as exc:  # a missing/foreign DIR, no backend
            return _error(f"--from {args.from_dir}: {type(exc).__name__}: {exc}")
        return _finish([report], args)
    if not args.backend and not args.target:
        return _error("name a backend (--backend NAME) or a target (--target KIND/ARCH); "
                      "`tilelang backends` lists what is installed")
    from tilelang_core.plugin import TargetError

    from .suite import resolve_targets

    try:
        targets = resolve_targets(args.backend, args.target)
    except (ValueError, TargetError) as exc:
        return _error(str(exc))
    if args.list:
        return _list(targets, args.cases, args.markdown, args.pass_config_map)
    if args.export:
        return _export(targets, args)
    return _run(targets, args)


def _progress():
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    transient=True, redirect_stdout=False, redirect_stderr=False)


def _run(targets: Sequence[Any], args: argparse.Namespace) -> int:
    from .case import registry, select
    from .levels import LevelError
    from .probes import cases_for
    from .suite import run_target

    named = set(args.target)  # targets named one by one must give the level; a backend's others may not
    reports, skipped = [], []
    for target in targets:
        total = len(select(cases_for(target, registry().values()), args.cases))
        with _progress() as progress:
            task = progress.add_task(f"{target}", total=total)
            try:
                report = run_target(target, args.level, args.cases, args.seed,
                                    on_result=lambda r: progress.update(task, advance=1, description=f"{target} {r.case}"),
                                    pass_configs=args.pass_config_map)
            except LevelError as exc:
                if str(target) in named:
                    return _error(str(exc))
                skipped.append(str(exc))
                continue
        reports.append(report)
    for reason in skipped:
        print(f"skipped {reason}", file=sys.stderr)
    if not reports:
        return _error(f"no target of the backend gives --level {args.level} here (see the lines above)")
    return _finish(reports, args)


def _run_from(args: argparse.Namespace) -> Any:
    from .export import run_from

    with _progress() as progress:
        task = progress.add_task(f"from {args.from_dir}", total=None)
        return run_from(args.from_dir, args.cases,
                        on_result=lambda r: progress.update(task, advance=1, description=r.case),
                        pass_configs=args.pass_config_map if args.pass_configs else None)


def _export(targets: Sequence[Any], args: argparse.Namespace) -> int:
    if len(targets) != 1:
        return _error(f"--export takes exactly one target, got {', '.join(map(str, targets))}; use --target KIND/ARCH")
    from .export import export_suite

    with _progress() as progress:
        task = progress.add_task(f"export {targets[0]}", total=None)
        root = export_suite(targets[0], args.export, args.cases, args.seed,
                            on_case=lambda name: progress.update(task, advance=1, description=name),
                            pass_configs=args.pass_config_map)
    size = sum(p.stat().st_size for p in Path(root).rglob("*") if p.is_file())
    print(f"exported {targets[0]} to {root} ({size / 1e6:.1f} MB); run it with: "
          f"tilelang conformance --from {root}")
    return 0


def _list(targets: Sequence[Any], patterns: Sequence[str], markdown: str | None = None,
          pass_configs: dict[str, Any] | None = None) -> int:
    """Print the cases each target gets (with the generated probes) and whether they apply
    (with these pass configs, at the run level); with `markdown`, also write the catalogue."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from .case import registry, select
    from .evaluate import not_applicable
    from .probes import cases_for

    for target in targets:
        table = Table(title=f"cases for {target}")
        for col in ("case", "feature", "needs", "min level", "here", "description"):
            table.add_column(col, overflow="fold")
        for case in select(cases_for(target, registry().values()), patterns):
            why = not_applicable(case, target, "run", pass_configs)
            table.add_row(case.name, case.feature, ", ".join(case.needs) or "-", case.min_level,
                          escape(f"N/A: {why}") if why else "yes", escape(case.description))
        Console(width=max(140, Console().width)).print(table)
    if markdown:
        from .report import case_catalogue

        Path(markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(markdown).write_text(case_catalogue(select(registry().values(), patterns)))
        print(f"case catalogue: {markdown}")
    return 0


def report_name(reports: Sequence[Any]) -> str:
    """The Markdown file's stem: the target kind when all reports share one ("cuda"), else
    the targets joined."""
    kinds = list(dict.fromkeys(r.target.partition("/")[0] for r in reports))
    return kinds[0] if len(kinds) == 1 else "-".join(r.target.replace("/", "-") for r in reports)


def _finish(reports: Sequence[Any], args: argparse.Namespace) -> int:
    from rich.console import Console

    from .configs import describe
    from .report import print_terminal, to_json, to_markdown

    print_terminal(reports, Console(width=max(120, Console().width)), args.verbose)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(to_json(reports), indent=1, default=str))
    if args.markdown:
        path = Path(args.markdown)
        if path.is_dir() or args.markdown.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            path = path / f"{report_name(reports)}-{datetime.date.today().isoformat()}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        configs = {describe(r.pass_configs) for r in reports if r.pass_configs}
        title = f"Conformance: {', '.join(r.target for r in reports)}" + \
            (f" (pass configs: {'; '.join(sorted(configs))})" if configs else "")
        path.write_text(to_markdown(reports, title))
        print(f"markdown report: {path}")
    return 1 if any(r.failing for rep in reports for r in rep.results) else 0


if __name__ == "__main__":
    sys.exit(main())
