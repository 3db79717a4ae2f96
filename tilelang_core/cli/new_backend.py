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


# the distributions of this project that are no backend: tilelang-NAME must not shadow them
_CORE_PACKAGES = ("core", "conformance")


def _installed_as(name: str) -> str | None:
    """What already answers to backend `name` here: an entry point of group
    `tilelang.backends`, a distribution `tilelang-NAME` or a module `tilelang_NAME`."""
    import importlib.metadata
    import importlib.util

    if any(ep.name == name for ep in importlib.metadata.entry_points(group="tilelang.backends")):
        return f"the installed backend {name!r} (entry point of group tilelang.backends)"
    try:
        importlib.metadata.distribution(f"tilelang-{name}")
        return f"the installed distribution tilelang-{name}"
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        if importlib.util.find_spec(f"tilelang_{name}") is not None:
            return f"the importable package tilelang_{name}"
    except (ImportError, ValueError):
        pass
    return None


def _check_free(name: str) -> None:
    """Refuse a name that would replace a core package or a backend already installed."""
    if name in _CORE_PACKAGES:
        raise ScaffoldError(f"backend name {name!r} is taken by the core package tilelang-{name}; installing the "
                            f"scaffold would replace it. Pick another name, e.g. 'acme'")
    taken = _installed_as(name)
    if taken:
        raise ScaffoldError(f"backend name {name!r} is taken by {taken}; installing a tilelang-{name} scaffold would "
                            f"replace it. Pick a name no backend uses (see `tilelang backends`), e.g. 'acme'")


def _destination_file(template: Path, root: Path, name: str) -> Path:
    relative = template.relative_to(TEMPLATES).with_suffix("")  # drop .tmpl
    parts = [f"tilelang_{name}" if p == "package" else p.replace("NAME", name) for p in relative.parts]
    return root.joinpath(*parts)


def scaffold_backend(name: str, destination: str | Path | None = None) -> Path:
    """Write the package of backend `name` into `destination` (default `./tilelang-NAME`)
    and return its folder. Refuses an invalid name, the name of a core package or of an
    installed backend, or an existing destination."""
    _check_name(name)
    _check_free(name)
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
