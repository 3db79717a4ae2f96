"""`tilelang new-backend NAME`: scaffold a backend package that installs, registers and
passes the conformance suite at the codegen level with no edit.

The package has the shape of every backend (target, codegen, lower, compile, detect,
runtime, plugin, include/, tests/); its files are the templates of `backend_template/`, with
`$name` (the target kind, e.g. "acme"), `$Name` (class prefix, "Acme") and `$NAME`
(macro prefix, "ACME") filled in. docs/backend-guide.md walks from there to a real device.
"""
from __future__ import annotations

import keyword
import re
import string
from pathlib import Path

__all__ = ["ScaffoldError", "scaffold_backend", "TEMPLATES"]

TEMPLATES = Path(__file__).parent / "backend_template"
_NAME = re.compile(r"[a-z][a-z0-9]*\Z")


class ScaffoldError(ValueError):
    """The backend name or the destination cannot be used."""


def _check_name(name: str) -> None:
    if not _NAME.match(name or "") or keyword.iskeyword(name):
        raise ScaffoldError(f"backend name {name!r}: use lowercase letters and digits, starting with a letter "
                            f"(it becomes the target kind, the distribution tilelang-NAME and the package "
                            f"tilelang_NAME), e.g. 'acme'")


def _destination_file(template: Path, root: Path, name: str) -> Path:
    relative = template.relative_to(TEMPLATES).with_suffix("")  # drop .tmpl
    parts = [f"tilelang_{name}" if p == "package" else p.replace("NAME", name) for p in relative.parts]
    return root.joinpath(*parts)


def scaffold_backend(name: str, destination: str | Path | None = None) -> Path:
    """Write the package of backend `name` into `destination` (default `./tilelang-NAME`)
    and return its folder. Refuses an invalid name or an existing destination."""
    _check_name(name)
    root = Path(destination) if destination is not None else Path.cwd() / f"tilelang-{name}"
    if root.exists():
        raise ScaffoldError(f"{root} already exists; pass another destination (--dest DIR) or remove it")
    values = {"name": name, "Name": name[0].upper() + name[1:], "NAME": name.upper()}
    for template in sorted(TEMPLATES.rglob("*.tmpl")):
        path = _destination_file(template, root, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(string.Template(template.read_text()).substitute(values))
    return root


def cmd_new_backend(args) -> int:
    """The CLI command: scaffold, then print what to do next."""
    try:
        root = scaffold_backend(args.name, args.dest)
    except ScaffoldError as exc:
        print(f"error: {exc}")
        return 2
    print(f"created {root} (backend {args.name!r}, distribution tilelang-{args.name})\n"
          f"next:\n  pip install -e {root}\n  tilelang backends\n"
          f"  tilelang conformance --backend {args.name} --level codegen\n"
          f"then follow docs/backend-guide.md from 'Your capability table'")
    return 0
