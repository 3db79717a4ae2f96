"""Import aliasing: `import tilelang[.x]` resolves to tilelang-core inside one process.

`install()` puts a `TileLangFinder` first on `sys.meta_path` of the calling process, so that a
TileLang program's `import tilelang`, `import tilelang.language as T`, `from tilelang import
tvm` and `from tilelang.carver.arch import driver` find our modules (see `aliases` for the
order in which a path resolves). Nothing is written to disk and no environment variable is
set: an installed TileLang stays what `import tilelang` finds in every other process, and
child processes (multiprocessing workers, pytest-xdist workers) do not inherit the aliasing.

An alias is the real module under a second name: `sys.modules["tilelang.language"] is
tilelang_core.language`, its `__name__` and `__spec__` stay ours, so pickling, relative
imports and `importlib.reload` keep working. Names a program imports from `tilelang_core`
that the core does not have as attributes (`from tilelang import tvm`) are looked up as
`tilelang_core.tvm` by Python; the finder answers those too, for the aliased paths only.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types
from typing import Any

from .aliases import (CORE_ALIASES, PACKAGE, TVM_ADDED_MODULES, TVM_ATTRIBUTE_SUBMODULES, TVM_MODULE_EXTRAS,
                      TVM_NAME_RENAMES, TVM_RENAMES)

__all__ = ["TileLangFinder", "install", "uninstall", "installed_finder"]

_CORE = CORE_ALIASES[PACKAGE]


def _longest_prefix(name: str, table: Any) -> str | None:
    """The longest key of `table` equal to `name` or a dotted prefix of it."""
    best = None
    for key in table:
        if (name == key or name.startswith(key + ".")) and (best is None or len(key) > len(best)):
            best = key
    return best


def _exists(name: str) -> bool:
    """Whether module `name` can be imported (its parents are imported to find out). A parent
    that fails for another reason than being absent raises: that is a bug to see, not hide."""
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if name == missing or name.startswith(missing + "."):
            return False
        raise


class _AliasLoader(importlib.abc.Loader):
    """Loads the real module `target` and hands it out under the alias's name."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._real_spec: Any = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = importlib.import_module(self.target)
        parent_name, _, child = spec.name.rpartition(".")
        parent = sys.modules.get(parent_name) if parent_name else None
        existing = vars(parent).get(child) if parent is not None else None
        if existing is not None and existing is not module:
            raise ImportError(
                f"{spec.name} would be {self.target}, but {parent_name}.{child} is already another "
                f"object ({type(existing).__name__}); tilelang-core's import aliasing does not replace it",
                name=spec.name,
            )
        self._real_spec = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # the import system stamped the alias's spec on the module: give it its own back
        alias = module.__spec__.name
        module.__spec__ = self._real_spec
        _alias_shadowed_submodules(alias, module)


class _StandInLoader(importlib.abc.Loader):
    """A package that exists only because claimed TileLang modules lie below it."""

    def __init__(self, below: list[str]) -> None:
        self.below = below

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        module.__doc__ = (
            f"A stand-in for TileLang's {module.__name__} made by tilelang-core's import aliasing: "
            f"it holds only the modules below it that tilelang-core or a backend provides: "
            + ", ".join(self.below)
        )
        module.__path__ = []


def _alias_shadowed_submodules(alias: str, module: types.ModuleType) -> None:
    """Register `ALIAS.child` for each loaded submodule of an aliased package whose attribute
    `child` is another object (the attribute `tilelang_core.jit` is the decorator, the module
    `tilelang_core.jit` the package). Without it, a later `import tilelang.jit.kernel` would
    import the package under the alias and set it as the attribute, replacing the decorator."""
    finder = installed_finder()
    if finder is None or not hasattr(module, "__path__"):
        return
    prefix = module.__name__ + "."
    for name, sub in list(sys.modules.items()):
        child = name[len(prefix):]
        if not name.startswith(prefix) or "." in child or sub is None:
            continue
        if vars(module).get(child, sub) is not sub:
            sys.modules.setdefault(f"{alias}.{child}", sub)
            finder.aliased.setdefault(f"{alias}.{child}", name)


class TileLangFinder(importlib.abc.MetaPathFinder):
    """Resolves `tilelang[.x]` (and TVM's renamed `tvm.tir`/`tvm.arith`) to our modules."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._claims: tuple[dict[str, Any], list[str]] | None = None
        self.aliased: dict[str, str] = {}  # alias -> real module name, for `uninstall`

    # -- the meta path protocol --------------------------------------------------------------

    def find_spec(self, fullname: str, path: Any = None, target: Any = None):
        if fullname == "tvm":
            return self._tvm_root()
        if getattr(self._local, "busy", False):
            return None
        if fullname == PACKAGE or fullname.startswith(PACKAGE + "."):
            handler = self._forward
        elif fullname.startswith(_CORE + "."):
            handler = self._reverse
        elif _longest_prefix(fullname, TVM_RENAMES) is not None:
            handler = self._tvm
        elif fullname in TVM_ADDED_MODULES:
            handler = self._tvm_added
        elif fullname in TVM_MODULE_EXTRAS:
            handler = self._tvm_extras
        else:
            return None
        self._local.busy = True
        try:
            return handler(fullname)
        finally:
            self._local.busy = False

    # -- resolution --------------------------------------------------------------------------

    def backend_claims(self) -> tuple[dict[str, Any], list[str]]:
        """TileLang path -> `CompatModule` from every backend's `tilelang_compat_modules`,
        and the problems met collecting them (read once per process)."""
        if self._claims is None:
            from ..plugin import get_plugin_manager

            self._claims = get_plugin_manager().compat_modules()
        return self._claims

    def resolve(self, fullname: str) -> tuple[str, Any]:
        """("module", real name) | ("stand-in", [claimed paths below]) | ("missing", message)."""
        key = _longest_prefix(fullname, CORE_ALIASES)
        if key is not None:
            candidate = CORE_ALIASES[key] + fullname[len(key):]
            if _exists(candidate):
                return "module", candidate
        claims, problems = self.backend_claims()
        claimed = _longest_prefix(fullname, claims)
        if claimed is not None:
            claim = claims[claimed]
            if claim.module is None:
                return "missing", (
                    f"TileLang module {fullname!r} is not provided by tilelang-core: it belongs to "
                    f"backend {claim.backend!r} (which claims {claimed!r}) and that backend does not "
                    f"provide it yet"
                )
            candidate = claim.module + fullname[len(claimed):]
            if _exists(candidate):
                return "module", candidate
            return "missing", (
                f"TileLang module {fullname!r} is not provided: backend {claim.backend!r} stands in "
                f"for {claimed!r} with {claim.module!r}, which has no {candidate!r}"
            )
        below = sorted(p for p in (*CORE_ALIASES, *claims) if p.startswith(fullname + "."))
        if below:
            return "stand-in", below
        owners = sorted({c.backend for c in claims.values()})
        message = (
            f"TileLang module {fullname!r} is not provided by tilelang-core"
            + (f" nor claimed by an installed backend ({', '.join(owners)})" if owners else "")
            + " (this process resolves `import tilelang` to tilelang-core: see docs/compat.md for "
            "what is supported)"
        )
        if problems:
            message += "; while asking the backends: " + "; ".join(problems)
        return "missing", message

    def _spec(self, fullname: str, outcome: tuple[str, Any], error: type[ImportError]):
        what, detail = outcome
        if what == "missing":
            raise error(detail, name=fullname)
        if what == "stand-in":
            spec = importlib.machinery.ModuleSpec(fullname, _StandInLoader(detail), is_package=True)
            self.aliased[fullname] = fullname
            return spec
        real = sys.modules.get(detail)
        is_package = hasattr(real, "__path__") if real is not None else bool(
            getattr(importlib.util.find_spec(detail), "submodule_search_locations", None))
        self.aliased[fullname] = detail
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(detail), is_package=is_package)

    def _forward(self, fullname: str):
        return self._spec(fullname, self.resolve(fullname), ModuleNotFoundError)

    def _reverse(self, fullname: str):
        """`tilelang_core.X` that Python asks for on `from tilelang import X` (or the real name
        below another aliased package, e.g. on `from tilelang.contrib import nvcc`): answered
        only when the alias is in the table or claimed and no real module has that name."""
        parent_name, _, child = fullname.rpartition(".")
        parent = sys.modules.get(parent_name)
        search = getattr(parent, "__path__", None)
        if search is None or importlib.machinery.PathFinder.find_spec(fullname, search) is not None:
            return None
        # the alias of the parent: `tilelang.contrib` for `tilelang_core.compat.modules.contrib`
        parent_alias = next((a for a, real in self.aliased.items() if real == parent_name and a != real), None)
        alias = f"{parent_alias}.{child}" if parent_alias else PACKAGE + fullname[len(_CORE):]
        claims, _ = self.backend_claims()
        if alias not in CORE_ALIASES and _longest_prefix(alias, claims) is None:
            return None
        # a plain ImportError: Python's `from X import Y` swallows ModuleNotFoundError of X.Y
        return self._spec(fullname, self.resolve(alias), ImportError)

    def _tvm_root(self):
        """TVM's own spec, its loader wrapped to add the renamed names once TVM has loaded.
        (Runs even inside another resolution: any first import of TVM must get them.)"""
        if getattr(self._local, "tvm_busy", False):
            return None
        self._local.tvm_busy = True
        try:
            spec = importlib.util.find_spec("tvm")
        finally:
            self._local.tvm_busy = False
        if spec is None or spec.loader is None or not _tvm_needs_renames(spec):
            return None
        spec.loader = _RenamingLoader(spec.loader)
        return spec

    def _tvm(self, fullname: str):
        old = _longest_prefix(fullname, TVM_RENAMES)
        if old is None:
            return None
        # once `tvm.arith` is our alias of `tvm.sym`, `tvm.arith.analyzer` must be the module
        # `tvm.sym.analyzer` too: left to Python's path finder it would run that file a second
        # time under the old name, defining its classes twice (TVM then refuses one of them:
        # "Do not know how to handle type tvm.arith.analyzer.ConstIntBound")
        aliased_old = old in sys.modules and sys.modules[old] is sys.modules.get(TVM_RENAMES[old])
        if not aliased_old and _exists(old):
            return None
        target_name = TVM_RENAMES[old] + fullname[len(old):]
        if not _exists(target_name):
            return None
        self.aliased[fullname] = target_name
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(target_name),
                                              is_package=hasattr(sys.modules[target_name], "__path__"))


    def _tvm_added(self, fullname: str):
        """A TVM module 0.27 lacks (`TVM_ADDED_MODULES`), as our module, when TVM has none."""
        if importlib.util.find_spec(fullname) is not None:
            return None
        target_name = TVM_ADDED_MODULES[fullname]
        self.aliased[fullname] = target_name
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(target_name), is_package=False)

    def _tvm_extras(self, fullname: str):
        """TVM's own module, its loader wrapped to add the names of `TVM_MODULE_EXTRAS`."""
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _ExtrasLoader(spec.loader, TVM_MODULE_EXTRAS[fullname])
        return spec


def _tvm_needs_renames(spec: importlib.machinery.ModuleSpec) -> bool:
    """Whether the TVM of `spec` lacks an old module name (checked without importing TVM)."""
    locations = list(spec.submodule_search_locations or [])
    return any(importlib.machinery.PathFinder.find_spec(old, locations) is None for old in TVM_RENAMES)


class _RenamingLoader(importlib.abc.Loader):
    """TVM's own loader, adding the old module names after TVM has run; everything else
    (resources, source, code) is the real loader's."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec):
        return self._real.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._real.exec_module(module)
        add_tvm_renames(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _ExtrasLoader(_RenamingLoader):
    """A TVM module's own loader, then the names of our `extras` module it lacks."""

    def __init__(self, real: Any, extras: str) -> None:
        super().__init__(real)
        self._extras = extras

    def exec_module(self, module: types.ModuleType) -> None:
        self._real.exec_module(module)
        extras = importlib.import_module(self._extras)
        for name in extras.__all__:
            if not hasattr(module, name):
                setattr(module, name, getattr(extras, name))
        fallback = getattr(extras, "module_getattr", None)
        if fallback is not None and "__getattr__" not in vars(module):
            module.__getattr__ = fallback


def add_tvm_renames(tvm: types.ModuleType) -> None:
    """Make `tvm.tir`/`tvm.arith` the renamed modules, where the installed TVM lacks them, give
    renamed classes their old names (`TVM_NAME_RENAMES`), `tvm` the submodules read as
    attributes (`TVM_ATTRIBUTE_SUBMODULES`), expressions their `dtype`
    (`exprs.add_expr_dtype`), the stand-ins of removed names
    (`removed_names.add_removed_names`) and `PassContext`
    TileLang's config keys
    (`transform.pass_context.accept_tilelang_keys`)."""
    for old, new in TVM_RENAMES.items():
        child = old.partition(".")[2]
        if getattr(tvm, child, None) is not None or old in sys.modules:
            continue
        module = importlib.import_module(new)
        setattr(tvm, child, module)
        sys.modules[old] = module
    for old, new in TVM_NAME_RENAMES.items():
        old_module, _, old_name = old.rpartition(".")
        new_module, _, new_name = new.rpartition(".")
        owner = importlib.import_module(old_module)
        if not hasattr(owner, old_name):
            setattr(owner, old_name, getattr(importlib.import_module(new_module), new_name))
    if "__getattr__" not in vars(tvm):
        tvm.__getattr__ = _import_attribute_submodule
    from ..transform.pass_context import accept_tilelang_keys
    from .exprs import add_expr_dtype
    from .removed_names import add_removed_names

    add_expr_dtype()
    add_removed_names()
    accept_tilelang_keys()


def _import_attribute_submodule(name: str) -> Any:
    """`tvm.<name>` for a submodule of `TVM_ATTRIBUTE_SUBMODULES` not imported yet (a module
    `__getattr__`, called only for names `tvm` does not have)."""
    if name in TVM_ATTRIBUTE_SUBMODULES:
        return importlib.import_module(f"tvm.{name}")
    raise AttributeError(f"module 'tvm' has no attribute {name!r}")


_LOCK = threading.Lock()


def installed_finder() -> TileLangFinder | None:
    """The finder on `sys.meta_path` of this process, if `install()` put one there."""
    return next((f for f in sys.meta_path if isinstance(f, TileLangFinder)), None)


def install() -> TileLangFinder:
    """Resolve `import tilelang[.x]` to tilelang-core in this process (idempotent).

    Raises ImportError when a module named `tilelang` is already imported from elsewhere (a
    real TileLang): the aliasing cannot take its place in a process that has it.
    """
    with _LOCK:
        finder = installed_finder()
        if finder is not None:
            return finder
        present = sys.modules.get(PACKAGE)
        if present is not None and getattr(present, "__name__", None) != _CORE:
            where = getattr(present, "__file__", None) or "an unknown location"
            raise ImportError(
                f"a module named {PACKAGE!r} is already imported in this process (from {where}); "
                f"run the program through `tilelang run` in a fresh process to use tilelang-core",
                name=PACKAGE,
            )
        finder = TileLangFinder()
        sys.meta_path.insert(0, finder)
        if "tvm" in sys.modules:
            add_tvm_renames(sys.modules["tvm"])
        return finder


def uninstall() -> None:
    """Remove the finder and the aliases it registered in `sys.modules` (attributes it set on
    modules, such as `tvm.tir`, stay)."""
    with _LOCK:
        finder = installed_finder()
        if finder is None:
            return
        sys.meta_path.remove(finder)
        for alias, real in finder.aliased.items():
            if alias != real:
                sys.modules.pop(alias, None)
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            sys.modules.pop(name, None)
