"""`tilelang backends`, `tilelang info TARGET`, `tilelang ops`, `tilelang run PROGRAM`, `tilelang new-backend NAME`,
`tilelang conformance ...`."""
from __future__ import annotations

import argparse
import json
import sys

__all__ = ["main"]


def _backends_rows() -> list[dict]:
    from ..plugin import get_plugin_manager

    manager = get_plugin_manager()
    detections = manager.detections()
    rows = []
    for info in manager.backends.values():
        targets = []
        for kind in info.kinds:
            tk = manager.registry.kinds[kind]
            dets = {d.arch: d for d in detections if d.kind == kind}
            for arch in tk.archs:
                det = dets.get(arch)
                targets.append({
                    "target": f"{kind}/{arch}",
                    "usable": det.usable if det else "neither",
                    "reason": det.reason if det else "backend reported nothing for this arch",
                })
        rows.append({
            "backend": info.name,
            "distribution": info.distribution,
            "version": info.version,
            "status": "broken" if info.broken else "loaded",
            "error": info.error,
            "targets": targets,
        })
    return rows


def cmd_backends(args: argparse.Namespace) -> int:
    from ..plugin import get_plugin_manager

    rows = _backends_rows()
    advice = get_plugin_manager().selection_advice()  # TILELANG_BACKENDS naming or leaving out backends
    if args.json:
        print(json.dumps({"backends": rows, "selection": advice}, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title="tilelang backends")
    for col in ("backend", "distribution", "version", "status", "target", "usable here", "why"):
        table.add_column(col, overflow="fold")
    if not rows:
        table.add_row("-", "-", "-", "none loaded" if advice else "none installed", "-", "-",
                      advice or "install a backend package (tilelang-<kind>)")
    for row in rows:
        if row["error"]:
            table.add_row(row["backend"], row["distribution"], row["version"], "[red]broken[/red]",
                          "-", "-", row["error"])
            continue
        for i, t in enumerate(row["targets"]):
            first = i == 0
            table.add_row(row["backend"] if first else "", row["distribution"] if first else "",
                          row["version"] if first else "", "loaded" if first else "",
                          t["target"], t["usable"], t["reason"])
    Console(width=max(140, Console().width)).print(table)
    if advice and rows:
        print(advice)
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from ..plugin import TargetError, get_plugin_manager

    try:
        target = get_plugin_manager().parse_target(args.target)
    except TargetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    caps = target.capabilities
    if args.json:
        print(json.dumps(caps.to_dict(), indent=2, default=str))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"capabilities of {target}")
    table.add_column("capability")
    table.add_column("value", overflow="fold")
    for key, value in caps.rows():
        table.add_row(key, value)
    Console(width=max(120, Console().width)).print(table)
    return 0


def _ops_rows(target_spec: str | None) -> list[dict]:
    """One row per (operator, target): its kernels, the config that target runs the
    operator's example problem with (table, backend hook, tuned), and the tuned problems."""
    from .. import ops
    from ..ops.launch import tuned_configs
    from ..ops.registry import resolve_config
    from ..plugin import get_plugin_manager

    manager = get_plugin_manager()
    if target_spec:
        targets = [manager.parse_target(target_spec)]
    else:
        targets = [manager.parse_target(f"{kind}/{tk.default_arch}") for kind, tk in sorted(manager.registry.kinds.items())]
    tuned = tuned_configs()
    rows = []
    for name, op in sorted(ops.operators().items()):
        for target in targets:
            try:
                config, source = resolve_config(op, target, op.example)
                kernel = config.pop("kernel")
                config = {"kernel": kernel if isinstance(kernel, str) else getattr(kernel, "__name__", "custom"), **config}
            except Exception as exc:  # noqa: BLE001 - a backend's hook that fails is shown, not fatal
                config, source = {}, f"error: {exc}"
            owner = manager.registry.owner_names.get(target.kind, "?")
            tuned_here = [{"problem": dict(json.loads(k)[2]), "config": v} for k, v in tuned.items()
                          if json.loads(k)[:2] == [name, str(target)]]
            rows.append({"op": name, "summary": op.summary, "kernels": sorted(op.kernels), "backend": owner,
                         "target": str(target), "config": config, "source": source, "tuned": tuned_here})
    return rows


def cmd_ops(args: argparse.Namespace) -> int:
    from ..plugin import TargetError

    try:
        rows = _ops_rows(args.target)
    except TargetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"ops": rows}, indent=2, default=str))
        return 0
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="tilelang ops: ready operators, the config each backend runs their example problem with")
    for col in ("operator", "kernels", "backend", "target", "config of the example problem (source)",
                "tuned configs (problem: config)"):
        table.add_column(col, overflow="fold")
    last = None
    for row in rows:
        first = row["op"] != last
        last = row["op"]
        config = ", ".join(f"{k}={v}" for k, v in row["config"].items())
        table.add_row(row["op"] if first else "", ", ".join(row["kernels"]) if first else "", row["backend"],
                      row["target"], escape(f"{config} ({row['source']})"),
                      escape("; ".join(f"{t['problem']}: {t['config']}" for t in row["tuned"]) or "-"))
    Console(width=max(160, Console().width)).print(table)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from ..compat.run import run_program

    return run_program(list(args.program))


def _cmd_new_backend(args: argparse.Namespace) -> int:
    from .new_backend import cmd_new_backend

    return cmd_new_backend(args)


# subcommands that optional distributions add: name -> (distribution, what it does)
OPTIONAL_COMMANDS = {
    "conformance": ("tilelang-conformance", "runs the shared conformance suite and prints the compliance table"),
}


def _versions() -> str:
    """`tilelang --version`: the core's version and every installed backend's."""
    from importlib import metadata

    from .. import __version__

    lines = [f"tilelang-core {__version__}"]
    for ep in sorted(metadata.entry_points(group="tilelang.backends"), key=lambda e: e.name):
        dist = getattr(ep, "dist", None)
        if dist is not None:
            lines.append(f"{dist.metadata['Name']} {dist.version}")
    try:
        lines.append(f"tilelang-conformance {metadata.version('tilelang-conformance')}")
    except metadata.PackageNotFoundError:
        pass
    return "\n".join(lines)


class _VersionAction(argparse.Action):
    """`--version`: one line per distribution, read when asked (not at every start)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(_versions())
        parser.exit()


def _missing_command(name: str) -> int:
    distribution, what = OPTIONAL_COMMANDS[name]
    print(f"tilelang {name}: this command comes with the optional distribution {distribution} (it {what}), "
          f"which is not installed here. Install it with:\n    pip install {distribution}", file=sys.stderr)
    return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tilelang", description="tilelang-core command line")
    parser.add_argument("--version", action=_VersionAction,
                        help="print the versions of tilelang-core and the installed backends, then exit")
    sub = parser.add_subparsers(dest="command", required=True)
    parser.set_defaults(commands=sub.choices)
    p = sub.add_parser("backends", help="installed backends, their targets and whether they are usable here")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_backends)
    p = sub.add_parser("info", help="the capability table of a target (KIND or KIND/ARCH)")
    p.add_argument("target")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_info)
    p = sub.add_parser("ops", help="the ready operators (tilelang_core.ops), their backends and configs")
    p.add_argument("--target", help="only this target (KIND or KIND/ARCH); default: each backend's default arch")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_ops)
    p = sub.add_parser(
        "run", help="run a TileLang program unchanged, `import tilelang` resolved to tilelang-core",
        description="Run PROGRAM.py (or -m MODULE) as __main__ with `import tilelang[.x]` resolved to "
                    "tilelang-core for this process only; the exit status is the program's.",
        usage="tilelang run PROGRAM.py [ARGS...] | tilelang run -m MODULE [ARGS...]")
    p.add_argument("program", nargs=argparse.REMAINDER, help="PROGRAM.py [ARGS...] or -m MODULE [ARGS...]")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("new-backend", help="scaffold a backend package (target, codegen, lower, compile, runtime, "
                                           "plugin, include/, tests) that passes the conformance suite at codegen level")
    p.add_argument("name", help="the backend's target kind: lowercase letters and digits, e.g. acme")
    p.add_argument("--dest", metavar="DIR", help="where to create the package (default: ./tilelang-NAME)")
    p.set_defaults(func=_cmd_new_backend)
    try:
        from tilelang_conformance.cli import add_subcommand  # optional distribution
    except ImportError:
        pass
    else:
        add_subcommand(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except ModuleNotFoundError as exc:
        from .. import _COMPILER_MODULES, COMPILER_HINT

        if exc.name is None or exc.name.split(".")[0] not in _COMPILER_MODULES:
            raise
        print(f"tilelang {argv[0] if argv else ''}: this command needs the compiler (apache-tvm), which is not "
              f"installed here (a runtime-only install). {COMPILER_HINT}", file=sys.stderr)
        return 1


def _main(argv: list[str]) -> int:
    if argv[:1] == ["run"] and argv[1:2] not in (["-h"], ["--help"]):
        # the program's own options (and `-m`) are not ours to parse
        from ..compat.run import run_program

        return run_program(argv[1:])
    parser = build_parser()
    if argv[:1] and argv[0] in OPTIONAL_COMMANDS and argv[0] not in parser.get_default("commands"):
        return _missing_command(argv[0])
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
