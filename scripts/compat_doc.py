"""Write docs/compat.md: every name TileLang's `tilelang` and `tilelang.language` export, its status
on tilelang-core, and the table of TileLang's own examples run on a device.

    python scripts/compat_doc.py --tilelang /work/.mirror/tile-ai+tilelang/repo
    python scripts/compat_doc.py --tilelang ~/src/tilelang --examples-json examples.json
    python scripts/compat_doc.py --tilelang ... --suite-json suite.json

The names are read from TileLang's source without importing it (it need not be installed):
each module is parsed with `ast`, the names its top level binds are collected (through `if`,
`with` and `try` blocks, minus what it deletes), `from x import *` is resolved through `x`'s
`__all__` (evaluated from literals, concatenations, unions, `tuple(dict.fromkeys(...))` and
comprehensions) or else its public names; statements it does not model (loops, writes to
`globals()`) are skipped, and an `__all__` it cannot evaluate is named in the document. A
module outside TileLang's tree (TVM's script namespace, which `tilelang.language` re-exports)
is asked in a child interpreter of the installed version. `--tilelang` takes a checkout or a
bare git directory.

A name is "supported" when `from tilelang import NAME` (or `from tilelang.language import
NAME`) succeeds in a process that resolves `tilelang` to tilelang-core through its import
aliasing: resolution, not proof of the same behaviour. Every other name gets its reason from
`REASONS` below, a reviewed table; else from what the check found nearby (tilelang-core has
the name at another path; a backend claims the module); else "not yet: not implemented".

The example section comes from `--examples-json` (written by `scripts/tilelang_examples.py`),
the test-suite section from `--suite-json` (written by `scripts/tilelang_suite.py`, classified
by `SUITE_REASONS` in `scripts/compat_suite.py`); without them, the sections already in the
output file are kept.
"""
from __future__ import annotations

import argparse
import ast
import datetime
import importlib.util
import json
import operator
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

ROOT = Path(__file__).resolve().parent.parent
MODULES = ("tilelang", "tilelang.language")
EXAMPLES_BEGIN = "<!-- examples:begin -->"
EXAMPLES_END = "<!-- examples:end -->"
SUPPORTED, NOT_YET, NOT_APPLICABLE = "supported", "not yet", "not applicable"


# -- reading TileLang's source ----------------------------------------------------------------

class TileLangSource:
    """TileLang's files, from a checkout (a folder holding `tilelang/`) or a bare git directory."""

    def __init__(self, path: Path, revision: str = "HEAD") -> None:
        self.path = Path(path)
        self.revision = revision
        self.bare = not (self.path / "tilelang" / "__init__.py").is_file()
        if self.bare and not (self.path / "HEAD").is_file():
            raise SystemExit(f"--tilelang {path}: neither a checkout (no tilelang/__init__.py) "
                             f"nor a bare git directory (no HEAD)")
        self._files: set[str] | None = None
        self._texts: dict[str, str] | None = None

    def _git(self, *args: str) -> str | None:
        where = ["--git-dir", str(self.path)] if self.bare else ["-C", str(self.path)]
        done = subprocess.run(["git", *where, *args], capture_output=True, text=True)
        return done.stdout if done.returncode == 0 else None

    def files(self) -> set[str]:
        if self._files is None:
            if self.bare:
                listing = self._git("ls-tree", "-r", "--name-only", self.revision, "tilelang/") or ""
                self._files = set(listing.split())
            else:
                self._files = {p.relative_to(self.path).as_posix()
                               for p in (self.path / "tilelang").rglob("*.py")}
        return self._files

    def read(self, rel: str) -> str:
        if not self.bare:
            return (self.path / rel).read_text()
        if self._texts is None:  # every Python file in one `git cat-file --batch`
            paths = sorted(p for p in self.files() if p.endswith(".py"))
            request = "".join(f"{self.revision}:{p}\n" for p in paths).encode()
            out = subprocess.run(["git", "--git-dir", str(self.path), "cat-file", "--batch"],
                                 input=request, capture_output=True, check=True).stdout
            self._texts, at = {}, 0
            for path in paths:
                header_end = out.index(b"\n", at)
                header = out[at:header_end].split()
                at = header_end + 1
                if header[-1] == b"missing":
                    continue
                size = int(header[2])
                self._texts[path] = out[at:at + size].decode("utf-8", errors="replace")
                at += size + 1
        return self._texts.get(rel, "")

    def commit(self) -> str:
        return (self._git("rev-parse", self.revision if self.bare else "HEAD") or "unknown").strip()

    def tvm_submodule(self) -> str | None:
        """The commit of TileLang's TVM fork (its `3rdparty/tvm` submodule), when git says."""
        listing = self._git("ls-tree", self.revision if self.bare else "HEAD", "3rdparty/tvm")
        parts = (listing or "").split()
        return parts[2] if len(parts) >= 3 and parts[1] == "commit" else None


def installed_module_names(module: str) -> list[str] | None:
    """`__all__` (else the public names) of an installed module outside TileLang, asked in a
    child interpreter so that nothing this process imported later (tilelang-core registers a
    script namespace into TVM's `__all__`) changes the answer. None when it does not import."""
    code = ("import importlib, json, sys\nm = importlib.import_module(sys.argv[1])\n"
            "names = getattr(m, '__all__', None)\n"
            "names = list(names) if names is not None else [n for n in vars(m) if not n.startswith('_')]\n"
            "print(json.dumps(names))")
    done = subprocess.run([sys.executable, "-c", code, module], capture_output=True, text=True)
    return json.loads(done.stdout.splitlines()[-1]) if done.returncode == 0 and done.stdout else None


# -- static analysis of one module ------------------------------------------------------------

class Unevaluable(Exception):
    """An expression this small evaluator does not reduce to a value."""


class _Name(str):
    """A name with the module whose `__all__` supplied it (None: the module that lists it)."""
    origin: str | None = None


@dataclass
class Binding:
    kind: str                  # "def", "class", "value", "import", "module"
    source: str | None = None  # for "import": the module it comes from; for "module": its name
    attr: str | None = None    # for "import": the name in `source`


@dataclass
class ModuleInfo:
    name: str
    bindings: dict[str, Binding] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    all: list[str] | None = None
    problems: list[str] = field(default_factory=list)


_STDLIB = set(sys.stdlib_module_names) | {"__future__"}
_CALLS = {"tuple": tuple, "list": list, "set": set, "frozenset": frozenset, "sorted": sorted}
_STR_METHODS = {"startswith", "endswith", "isupper", "islower", "isidentifier"}
_BINOPS = {ast.Add: operator.add, ast.BitOr: operator.or_, ast.Sub: operator.sub,
           ast.BitAnd: operator.and_}
_COMPARE = {ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}


class TileLangTree:
    """Modules of a TileLang source tree, analysed on demand and cached."""

    def __init__(self, source: TileLangSource, external: Callable[[str], list[str] | None],
                 root: str = "tilelang") -> None:
        self.source = source
        self.external = external
        self.root = root
        self._modules: dict[str, ModuleInfo] = {}
        self._busy: set[str] = set()
        self.external_used: dict[str, int] = {}

    # -- where modules are

    def is_internal(self, module: str) -> bool:
        return module == self.root or module.startswith(self.root + ".")

    def file_of(self, module: str) -> tuple[str, bool] | None:
        base = module.replace(".", "/")
        files = self.source.files()
        if f"{base}/__init__.py" in files:
            return f"{base}/__init__.py", True
        if f"{base}.py" in files:
            return f"{base}.py", False
        return None

    def absolute(self, module: str, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        found = self.file_of(module)
        parts = module.split(".")
        if not (found and found[1]):
            parts = parts[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        return ".".join([*parts, *([node.module] if node.module else [])])

    # -- what a module offers

    def analyse(self, module: str) -> ModuleInfo:
        if module in self._modules:
            return self._modules[module]
        if module in self._busy:
            raise Unevaluable(f"import cycle through {module}")
        found = self.file_of(module)
        if found is None:
            raise Unevaluable(f"no source for {module}")
        self._busy.add(module)
        try:
            info = ModuleInfo(module)
            _ModuleWalker(self, info, is_package=found[1]).walk(ast.parse(self.source.read(found[0])).body)
        finally:
            self._busy.discard(module)
        self._modules[module] = info
        return info

    def problems(self) -> list[str]:
        """What could not be evaluated in the modules analysed so far."""
        return sorted({f"`{name}`: {p}" for name, info in self._modules.items() for p in info.problems})

    def exports_of(self, module: str) -> list[str]:
        """What `from module import *` binds: its `__all__`, else its public names (names it
        imports from the standard library left out)."""
        if not self.is_internal(module):
            names = self.external(module)
            if names is None:
                raise Unevaluable(f"{module} (outside TileLang) could not be imported here")
            self.external_used[module] = len(names)
            out = []
            for name in names:
                tagged = _Name(name)
                tagged.origin = module
                out.append(tagged)
            return out
        info = self.analyse(module)
        if info.all is not None:
            return list(info.all)
        return [n for n, b in info.bindings.items() if _is_public(n) and not _from_stdlib(b)]

    def value_of(self, module: str, name: str) -> Any:
        """The evaluated value of `module.name` (a constant such as a list of names)."""
        if not self.is_internal(module):
            if name == "__all__":
                return self.exports_of(module)
            raise Unevaluable(f"{module}.{name} is outside TileLang")
        info = self.analyse(module)
        if name == "__all__" and info.all is not None:
            return info.all
        if name in info.values:
            return info.values[name]
        binding = info.bindings.get(name)
        if binding is not None and binding.kind == "import":
            return self.value_of(binding.source, binding.attr)
        raise Unevaluable(f"{module}.{name} has no value known statically")

    def origin_of(self, module: str, name: str, seen: frozenset = frozenset()) -> tuple[str, str]:
        """(the module that defines `module.name`, what it is there: "def", "class", "value",
        "module", or "import" when it comes from outside TileLang), following imports."""
        if not self.is_internal(module) or (module, name) in seen:
            return module, "import"
        try:
            info = self.analyse(module)
        except Unevaluable:
            return module, "import"
        binding = info.bindings.get(name)
        if binding is None:  # listed in `__all__` only: served by the module's __getattr__
            tagged = next((n for n in info.all or () if n == name), None)
            origin = getattr(tagged, "origin", None)
            return (origin, "import") if origin else (module, "value")
        if binding.kind == "import":
            return self.origin_of(binding.source, binding.attr, seen | {(module, name)})
        if binding.kind == "module":
            return binding.source, "module"
        return module, binding.kind


def _is_public(name: str) -> bool:
    return not name.startswith("_") or name == "__version__"


def _from_stdlib(binding: Binding) -> bool:
    return binding.kind in ("import", "module") and (binding.source or "").split(".")[0] in _STDLIB


class _ModuleWalker:
    """Collects the names one module's top level binds, in order, and evaluates `__all__`."""

    def __init__(self, tree: TileLangTree, info: ModuleInfo, is_package: bool) -> None:
        self.tree, self.info, self.is_package = tree, info, is_package

    def walk(self, body: Iterable[ast.stmt]) -> None:
        for node in body:
            self.statement(node)

    def statement(self, node: ast.stmt) -> None:
        info = self.info
        if isinstance(node, (ast.If, ast.Try, ast.With)):  # both branches: either may run
            for part in ("body", "orelse", "finalbody"):
                self.walk(getattr(node, part, []))
            for handler in getattr(node, "handlers", []):
                self.walk(handler.body)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            info.bindings[node.name] = Binding("class" if isinstance(node, ast.ClassDef) else "def")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                info.bindings[bound] = Binding("module", alias.name if alias.asname else bound)
        elif isinstance(node, ast.ImportFrom):
            self.import_from(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in _target_names(target):
                    info.bindings[name] = Binding("value")
                    info.values.pop(name, None)
                if isinstance(target, ast.Name):
                    self.assign(target.id, lambda: self.evaluate(node.value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            name, op = node.target.id, _BINOPS.get(type(node.op))
            if op is not None:
                self.assign(name, lambda: op(self.lookup(name), self.evaluate(node.value)))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            self.method_call(node.value)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                for name in _target_names(target):
                    info.bindings.pop(name, None)
                    info.values.pop(name, None)
                    if name == "__all__":
                        info.all = None

    def import_from(self, node: ast.ImportFrom) -> None:
        info, tree = self.info, self.tree
        source = tree.absolute(info.name, node)
        if self.is_package and source.startswith(info.name + "."):
            # importing a submodule makes it an attribute of this package
            child = source[len(info.name) + 1:].split(".")[0]
            info.bindings.setdefault(child, Binding("module", f"{info.name}.{child}"))
        for alias in node.names:
            if alias.name == "*":
                try:
                    names = tree.exports_of(source)
                except Unevaluable as exc:
                    info.problems.append(f"`from {source} import *`: {exc}")
                    continue
                for name in names:
                    info.bindings[name] = Binding("import", source, name)
                    info.values.pop(name, None)
                continue
            bound = alias.asname or alias.name
            submodule = f"{source}.{alias.name}"
            if tree.is_internal(source) and tree.file_of(submodule) and not self._binds(source, alias.name):
                info.bindings[bound] = Binding("module", submodule)
            else:
                info.bindings[bound] = Binding("import", source, alias.name)
            info.values.pop(bound, None)

    def _binds(self, module: str, name: str) -> bool:
        try:
            return name in self.tree.analyse(module).bindings
        except Unevaluable:
            return False

    def method_call(self, call: ast.Call) -> None:
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            return
        name, method = func.value.id, func.attr
        if method in ("extend", "append", "remove") and len(call.args) == 1:
            def change():
                current = list(self.lookup(name))
                argument = self.evaluate(call.args[0])
                if method == "extend":
                    return current + list(argument)
                if method == "append":
                    return current + [argument]
                current.remove(argument)
                return current
            self.assign(name, change)

    def assign(self, name: str, compute: Callable[[], Any]) -> None:
        try:
            value = compute()
        except Unevaluable as exc:
            self.info.values.pop(name, None)
            if name == "__all__":
                self.info.all = None
                self.info.problems.append(f"`__all__` not evaluated statically: {exc}")
            return
        self.info.values[name] = value
        if name == "__all__":
            self.info.all = [n for n in value] if not isinstance(value, str) else [value]
            self.info.problems = [p for p in self.info.problems if not p.startswith("`__all__`")]

    # -- the expression evaluator

    def lookup(self, name: str, local: dict | None = None) -> Any:
        if local and name in local:
            return local[name]
        if name in self.info.values:
            return self.info.values[name]
        binding = self.info.bindings.get(name)
        if binding is not None and binding.kind == "import":
            return self.tree.value_of(binding.source, binding.attr)
        raise Unevaluable(f"{name} has no value known statically")

    def evaluate(self, node: ast.expr, local: dict | None = None) -> Any:
        ev = lambda n: self.evaluate(n, local)  # noqa: E731
        if isinstance(node, ast.Constant):
            return _Name(node.value) if isinstance(node.value, str) else node.value
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items: list = []
            for element in node.elts:
                items.extend(ev(element.value) if isinstance(element, ast.Starred) else [ev(element)])
            return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
        if isinstance(node, ast.Name):
            return self.lookup(node.id, local)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            binding = self.info.bindings.get(node.value.id)
            if binding is not None and binding.kind == "module":
                return self.tree.value_of(binding.source, node.attr)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.Call) and not node.keywords:
            return self.call(node, ev)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)) and len(node.generators) == 1:
            generator = node.generators[0]
            if not isinstance(generator.target, ast.Name) or generator.is_async:
                raise Unevaluable(ast.unparse(node))
            out = []
            for item in ev(generator.iter):
                inner = {**(local or {}), generator.target.id: item}
                if all(self.evaluate(cond, inner) for cond in generator.ifs):
                    out.append(self.evaluate(node.elt, inner))
            return set(out) if isinstance(node, ast.SetComp) else out
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
            return _COMPARE[type(node.ops[0])](ev(node.left), ev(node.comparators[0]))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not ev(node.operand)
        if isinstance(node, ast.BoolOp):
            values = (ev(v) for v in node.values)
            return all(values) if isinstance(node.op, ast.And) else any(values)
        raise Unevaluable(ast.unparse(node))

    def call(self, node: ast.Call, ev: Callable[[ast.expr], Any]) -> Any:
        func, args = node.func, [ev(a) for a in node.args]
        if isinstance(func, ast.Name) and func.id in _CALLS and len(args) <= 1:
            return _CALLS[func.id](*args)
        if isinstance(func, ast.Attribute):
            if ast.unparse(func) == "dict.fromkeys" and len(args) == 1:
                return dict.fromkeys(args[0])
            if func.attr in _STR_METHODS:
                owner = ev(func.value)
                if isinstance(owner, str):
                    return getattr(str, func.attr)(owner, *args)
        raise Unevaluable(ast.unparse(node))


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for element in target.elts for n in _target_names(element)]
    return []


# -- the names a module exports ---------------------------------------------------------------

@dataclass
class Export:
    module: str        # "tilelang" or "tilelang.language"
    name: str
    origin: str        # the module that defines it (TileLang's, or TVM's)
    kind: str          # "module", "def", "class", "value", "import"
    status: str = ""
    reason: str = ""


def exported_names(tree: TileLangTree, module: str) -> list[Export]:
    """Every public name `module` exports: its `__all__`, or the names its top level binds
    (names imported from the standard library left out), sorted."""
    info = tree.analyse(module)
    names = info.all if info.all is not None else [
        n for n, b in info.bindings.items() if _is_public(n) and not _from_stdlib(b)]
    exports = []
    for name in sorted(set(names), key=lambda n: (n.lower(), n)):
        origin, kind = tree.origin_of(module, name)
        exports.append(Export(module, str(name), origin, kind))
    return exports


# -- status on tilelang-core ------------------------------------------------------------------

@dataclass(frozen=True)
class Reason:
    """A reviewed reason for names tilelang-core does not resolve: `names` (exact), `pattern`
    (a regular expression searched in the name) or `origin` (a prefix of the defining module)."""
    status: str
    why: str
    names: frozenset = frozenset()
    pattern: str = ""
    origin: str = ""
    module: str = ""   # "" = both modules

    def matches(self, export: Export) -> bool:
        if self.module and export.module != self.module:
            return False
        return (export.name in self.names or bool(self.pattern and re.search(self.pattern, export.name))
                or bool(self.origin and export.origin.startswith(self.origin)))


def _names(*names: str) -> frozenset:
    return frozenset(names)


# First match wins. Each entry is a judgement: review it when TileLang or tilelang-core moves.
REASONS: list[Reason] = [
    # -- not applicable: hardware no target of ours has, TileLang's own build, TVMScript's own
    Reason(NOT_APPLICABLE, "Blackwell only (sm_100/sm_120: tcgen05 MMA, tensor memory, 2-SM and "
           "block-scaled MMA, cluster launch control): no target of tilelang-core's backends "
           "declares these instruction families",
           pattern=r"tcgen05|TCGEN05|tmem|_umma|_2sm|blockscale|block_scale|^clc_|SM120"),
    Reason(NOT_APPLICABLE, "sm_100 PTX (256-bit global loads and stores, ld/st.global.v8.b32; TMA "
           "tile::gather4 / tile::scatter4): Blackwell instructions no target of tilelang-core's "
           "backends declares (the 32-, 64- and 128-bit forms are provided)",
           names=_names("ldg256", "stg256", "tma_gather4", "tma_scatter4", "tma_gather4_bytes"),
           module="tilelang.language"),
    Reason(NOT_APPLICABLE, "TileLang's Volta (sm_70) tensor-core form (m16n16k4 over mma.m8n8k4 quad-pairs): "
           "no target of tilelang-core's backends declares sm_70 (sm_80 and newer use T.ptx_mma)",
           names=_names("ptx_mma_sm70"), module="tilelang.language"),
    Reason(NOT_APPLICABLE, "unpacked FP4 (one E2M1 value per byte of shared memory): TileLang uses it only "
           "for Blackwell's tcgen05 kind::f8f6f4 MMA and its TMA format, which no target of "
           "tilelang-core's backends declares (packed float4_e2m1fn is a dtype here)",
           names=_names("float4_e2m1_unpacked"), module="tilelang.language"),
    Reason(NOT_APPLICABLE, "Windows DLL search set-up for TileLang's native library; tilelang-core "
           "ships no native library of its own",
           names=_names("dll_dirs", "runtime_dll_dirs", "get_windows_runtime_dll_dirs",
                        "prepend_dll_search_path"), module="tilelang"),
    Reason(NOT_APPLICABLE, "locates TileLang's C++ library (libtilelang); tilelang-core has none: its "
           "passes are Python over apache-tvm", names=_names("libinfo"), module="tilelang"),
    Reason(NOT_APPLICABLE, "TileLang's WebGPU namespace: no WebGPU backend in this project",
           names=_names("webgpu"), module="tilelang"),
    Reason(NOT_APPLICABLE, "TileLang's compiler internals (bindings of its C++ analyses, its tile-op "
           "classes): tilelang-core's compiler is its own (tilelang_core.ir, .transform), with "
           "nothing there to be source-compatible with", names=_names("analysis", "tileop"),
           module="tilelang"),
    Reason(NOT_APPLICABLE, "TVMScript's own name (this list takes TVM's script namespace from the "
           "installed apache-tvm): tilelang-core's language leaves it out on purpose (another "
           "meaning here, or none in a TileLang kernel)",
           names=_names("jit", "constexpr", "Optional", "Ptr", "register_script_namespace"),
           module="tilelang.language"),
    Reason(NOT_APPLICABLE, "TVM's `tir.ret` (the value a compiled function returns, printed `return v;`; "
           "TVM uses it in the host functions it generates): every function a tilelang-core kernel "
           "compiles to, on every target, is a device entry that returns nothing (results leave through "
           "its tensors), as TileLang's `__global__ void` kernels are, so there is nothing for it to "
           "return to; apache-tvm 0.27 registers no such op either",
           names=_names("ret"), module="tilelang.language"),
    # -- not yet, the CUDA backend's: Hopper and PTX features by name
    Reason(NOT_YET, "TileLang's explicit warp-specialization schedules (T.WSSchedule and its parts, "
           "materialized by TileLang's MaterializeWSSchedule pass): tilelang-core warp-specializes "
           "T.Pipelined on sm_90a by itself and T.ws / T.WarpSpecialize split roles by hand; the "
           "schedule objects need a pass of their own: not yet",
           pattern=r"^WS|^ws_op$|^annotate_ws_schedule$"),
    Reason(NOT_YET, "TileLang's wgmma macro generator (a port of CuTe's make_gmma_desc: it decodes the "
           "shared layouts of tilelang.layout's bank-swizzle makers, which tilelang-core does not provide "
           "yet, into descriptor parameters): not yet; the wgmma names it builds on (T.alloc_wgmma_desc, "
           "T.initialize_wgmma_descriptor, T.ptx_wgmma_ss / rs, T.warpgroup_*) are provided",
           names=_names("WGMMATensorCoreIntrinEmitter", "WGMMADescriptorParams", "compute_gmma_descriptor")),
    Reason(NOT_YET, "2:4 structured-sparse tensor-core instructions by name (mma.sp / wgmma.sp emitters, "
           "the explicitly asynchronous T.wgmma_gemm_sp / T.tcgen05_gemm_sp): not yet; T.gemm_sp itself runs "
           "on every target (the dense A rebuilt from its values and metadata, then T.gemm)",
           pattern=r"_sp$|_sp_|Sparse"),
    Reason(NOT_YET, "TMA multicast and SM-to-SM copies inside a cluster: not yet (T.ClusterKernel "
           "and the cluster barriers are provided)", names=_names("copy_cluster")),
    Reason(NOT_YET, "Philox random numbers on the device (curand's generator): not yet",
           origin="tilelang.cuda.language.random"),
    Reason(NOT_YET, "CUDA PTX-level intrinsics: the CUDA backend's to provide, not yet",
           pattern=r"^ptx_|^mma_|ldmatrix|mma_micro|swizzle_layout|^(ld|st)[gs]\d+$|^cp_async",
           origin="tilelang.cuda."),
    # -- not yet, the core's: portable language features
    Reason(NOT_YET, "TileLang's reducer buffers (cross-thread accumulation through "
           "`T.alloc_reducer`): not yet", pattern=r"reducer"),
    Reason(NOT_YET, "bitwise reductions (the core has reduce_max/min/sum/abssum/absmax and cumsum): "
           "not yet", pattern=r"^reduce_bit"),
    Reason(NOT_YET, "vector-width and memory-ordered atomics (T.atomic_add/max/min are supported): "
           "not yet", pattern=r"^atomic_"),
    # -- not yet, top level
    Reason(NOT_YET, "TVM's `DataType`, re-exported: tilelang_core.compat has it, the top level does "
           "not re-export it yet", names=_names("DataType"), module="tilelang"),
    Reason(NOT_YET, "TileLang's Metal namespace: the Metal backend's to provide, not yet",
           names=_names("metal"), module="tilelang"),
    Reason(NOT_APPLICABLE, "post-processing of TileLang's generated host C wrapper: tilelang-core "
           "generates no host code (each backend's runtime launches from Python); device source "
           "has `register_<kind>_postproc`", names=_names("register_c_postproc"), module="tilelang"),
    Reason(NOT_APPLICABLE, "TileLang's instruments for its own C++ pass pipeline (lowering trace per "
           "pass, pass timing and diffs, the pass visualizer): they observe passes tilelang-core does "
           "not run; its compile report and `TILELANG_DEBUG` dumps are its own (`tilelang.tools` has "
           "`plot_layout` and `Analyzer`)",
           names=_names("instrumentation"), module="tilelang"),
    Reason(NOT_YET, "the build date TileLang's wheels put in their version string: not yet "
           "(tilelang-core's version carries none)", names=_names("build_date"), module="tilelang"),
]
DEFAULT_REASON = Reason(NOT_YET, "not implemented")


def classify(exports: list[Export], resolves: Callable[[str, str], tuple[bool, str]],
             reasons: list[Reason] = REASONS) -> list[Export]:
    """Set `status` and `reason` of each export: supported when `resolves(module, name)` says so;
    else the first matching entry of `reasons` (a reviewed judgement); else "not yet" with what
    `resolves` found nearby (tilelang-core has the name at another path, a backend claims the
    module); else the default."""
    for export in exports:
        ok, detail = resolves(export.module, export.name)
        if ok:
            export.status, export.reason = SUPPORTED, ""
            continue
        reason = next((r for r in reasons if r.matches(export)), None)
        reason = reason or (Reason(NOT_YET, detail) if detail else DEFAULT_REASON)
        export.status, export.reason = reason.status, reason.why
    return exports


def tilelang_core_resolves(module: str, name: str) -> tuple[bool, str]:
    """Whether `from MODULE import NAME` succeeds with `tilelang` resolved to tilelang-core;
    when not, a fact that says more (a backend claims the module; tilelang-core has the name
    at another path), or ""."""
    import importlib

    from tilelang_core.compat import install

    install()
    for loaded in MODULES:  # the same modules loaded whatever is asked first: see _elsewhere_in_core
        importlib.import_module(loaded)
    owner = importlib.import_module(module)
    try:
        found = getattr(owner, name)
    except AttributeError:
        try:
            found = importlib.import_module(f"{module}.{name}")
        except ImportError as exc:
            claimed = re.search(r"belongs to backend '(\w+)'", str(exc))
            if claimed:
                return False, (f"the {claimed.group(1)} backend's to provide (it claims the module), "
                               f"not provided yet")
            elsewhere = _elsewhere_in_core(name)
            return False, (f"tilelang-core has it as `{elsewhere}`, not at this path yet"
                           if elsewhere else "")
    doc = getattr(found, "__doc__", None) or ""
    if isinstance(found, type(sys)) and doc.startswith("A stand-in"):
        return False, "only a stand-in package holding the modules backends provide below it"
    return True, ""


def _elsewhere_in_core(name: str) -> str | None:
    """`module.name` for the shortest loaded tilelang_core module that defines `name` (a
    function or class of tilelang-core's own, or one of its modules), if any."""
    places = []
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("tilelang_core.") or module is None:
            continue
        value = vars(module).get(name)
        if value is None and module_name != "tilelang_core.language" and "__getattr__" in vars(module):
            try:  # a lazily resolved name (tilelang_core.compat.DataType)
                value = getattr(module, name)
            except Exception:  # noqa: BLE001 - any failure means: not here
                value = None
        own = getattr(value, "__module__", None) or getattr(value, "__name__", None) or ""
        if value is not None and own.startswith("tilelang_core"):
            places.append(f"{module_name}.{name}")
    return min(places, key=lambda p: (p.count("."), p)) if places else None


# -- the example table ------------------------------------------------------------------------

def acceptance_examples() -> list[str]:
    """The examples the compatibility issue lists, from `scripts/tilelang_examples.py`."""
    path = Path(__file__).with_name("tilelang_examples.py")
    spec = importlib.util.spec_from_file_location("tilelang_examples", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.EXAMPLES)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def examples_section(data: dict | None, examples: list[str], previous: str | None = None) -> str:
    """The example section: from `data` (the JSON of `tilelang_examples.py`) when given, else
    `previous` (the section already in the document), else "not measured yet". A whole-folder
    run (`--all`) is counted over every example it ran, with the named acceptance list as a
    line of its own and the examples left out listed with their reasons."""
    if data is None:
        if previous:
            return previous
        return (f"{EXAMPLES_BEGIN}\n## TileLang's examples on tilelang-core\n\n"
                f"Not measured yet: none of the {len(examples)} examples has been run on a device "
                f"for this document. To measure, run `scripts/tilelang_examples.py --all --json "
                f"examples.json` on the device and regenerate with `--examples-json examples.json`."
                f"\n{EXAMPLES_END}")
    records = {r["example"]: r for r in data.get("records", [])}
    ran = [r for r in records.values() if r.get("outcome") != "left out"]
    left_out = {**data.get("left_out", {}), **{r["example"]: r.get("error", "") for r in records.values()
                                                if r.get("outcome") == "left out"}}
    passed = sum(r.get("outcome") == "pass" for r in ran)
    named = sum(records.get(e, {}).get("outcome") == "pass" for e in examples)
    lines = [EXAMPLES_BEGIN, "## TileLang's examples on tilelang-core", "",
             f"Run on {data.get('date', 'an unknown date')}, device: {data.get('device', 'unknown')}, "
             f"TileLang examples at revision {data.get('tilelang_revision') or 'unrecorded'}. Each "
             f"example runs unchanged through `tilelang run` in its own process and passes when it "
             f"exits with status 0 (the examples check their own results). "
             f"`scripts/tilelang_examples.py --all` finds every example script of the folder; the ones "
             f"for other hardware or needing a package the GPU machine lacks are left out, each with "
             f"its reason (below).", ""]
    if data.get("left_out") is not None:
        share = f" ({100.0 * passed / len(ran):.1f}%)" if ran else ""
        lines += [f"**{passed} of {len(ran)} examples pass{share}**; {len(left_out)} left out; "
                  f"the {len(examples)} named in the first compatibility issue: {named} of {len(examples)}.", ""]
    else:
        lines += [f"**{named} of {len(examples)} pass.**", ""]
    lines += ["| example | outcome | seconds | reason for a failure |", "|---|---|---:|---|"]
    order = [e for e in examples if e in records] + sorted(e for e in records if e not in examples)
    for example in [*[e for e in examples if e not in records], *order]:
        record = records.get(example)
        if record is None:
            lines.append(f"| `{example}` | not run | | |")
            continue
        if record.get("outcome") == "left out":
            continue
        seconds = record.get("seconds")
        where = record.get("device")
        outcome = record.get("outcome", "?") + (f" (on {where})" if where and where != data.get("device") else "")
        outcome += " (run alone)" if record.get("retried") else ""
        lines.append(f"| `{example}` | {outcome} | {'' if seconds is None else seconds} "
                     f"| {_cell(record.get('error') or '')} |")
    if left_out:
        lines += ["", "Left out:", "", "| example | reason |", "|---|---|"]
        lines += [f"| `{e}` | {_cell(why)} |" for e, why in sorted(left_out.items())]
    lines.append(EXAMPLES_END)
    return "\n".join(lines)


def _suite_module():
    """scripts/compat_suite.py (the test-suite section and its reviewed table)."""
    path = Path(__file__).with_name("compat_suite.py")
    spec = importlib.util.spec_from_file_location("compat_suite", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("compat_suite", module)
    spec.loader.exec_module(module)
    return module


def existing_examples_section(document: str) -> str | None:
    start, end = document.find(EXAMPLES_BEGIN), document.find(EXAMPLES_END)
    return document[start:end + len(EXAMPLES_END)] if 0 <= start < end else None


# -- the document -----------------------------------------------------------------------------

def _counts(exports: list[Export]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for export in exports:
        row = counts.setdefault(export.module, {SUPPORTED: 0, NOT_YET: 0, NOT_APPLICABLE: 0})
        row[export.status] += 1
    return counts


def not_yet_groups(exports: list[Export]) -> list[tuple[str, list[Export]]]:
    """The "not yet" names grouped by reason, largest group first."""
    groups: dict[str, list[Export]] = {}
    for export in exports:
        if export.status == NOT_YET:
            groups.setdefault(export.reason, []).append(export)
    return sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))


def core_revision() -> str:
    """This tree's commit, and whether the code the statuses come from differs from it."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short=9", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "tilelang_core", "backends")
    return f"`{head}`" + (" with uncommitted changes to tilelang_core/ or backends/" if dirty else "")


def _short(export: Export) -> str:
    return f"T.{export.name}" if export.module == "tilelang.language" else f"{export.module}.{export.name}"


def render(exports: list[Export], *, commit: str, examples: str, notes: list[str],
           core: str = "", date: str = "", suite: str = "") -> str:
    """The Markdown document."""
    counts = _counts(exports)
    out = [
        "# TileLang compatibility",
        "",
        "<!-- Generated by scripts/compat_doc.py: edit the script (its REASONS table), not this file. -->",
        "",
        f"Every name TileLang's `tilelang` and `tilelang.language` export (TileLang commit "
        f"`{commit}`), and its status on tilelang-core"
        + (f" at {core}" if core else "") + (f", measured {date}" if date else "") + ":",
        "",
        "- **supported**: `from tilelang import NAME` (or `from tilelang.language import NAME`) "
        "succeeds in a process that resolves `tilelang` to tilelang-core through its import "
        "aliasing (`tilelang run`, `tilelang_core.compat.install()`). This is resolution, not "
        "proof of full behaviour: a supported name may still lack an argument or an option "
        "TileLang has. The example table below is the behavioural evidence.",
        "- **not yet**: tilelang-core does not provide it; the reason says what it is and, where "
        "known, whose it is to provide (the core or a backend).",
        "- **not applicable**: tilelang-core will not provide it at this path, for the reason given "
        "(hardware no target of ours declares, TileLang's own native build, TVMScript's own names).",
        "",
        "The names are read statically from TileLang's source: each module's top-level bindings "
        "(imports, definitions, assignments, through `if`/`with`/`try`, minus `del`), `from x "
        "import *` resolved through `x`'s `__all__` or its public names; a module's `__all__` "
        "wins where it has one. Names the package binds by importing the standard library are "
        "left out.",
        *[line for note in notes for line in ("", note)],
        "",
        "## Summary",
        "",
        "| module | names | supported | not yet | not applicable |",
        "|---|---:|---:|---:|---:|",
    ]
    for module in MODULES:
        row = counts.get(module, {SUPPORTED: 0, NOT_YET: 0, NOT_APPLICABLE: 0})
        out.append(f"| `{module}` | {sum(row.values())} | {row[SUPPORTED]} | {row[NOT_YET]} | "
                   f"{row[NOT_APPLICABLE]} |")
    out += ["", "### The largest \"not yet\" groups", "", "| names | reason | examples |", "|---:|---|---|"]
    for reason, group in not_yet_groups(exports)[:12]:
        sample = ", ".join(f"`{_short(e)}`" for e in group[:6]) + (", ..." if len(group) > 6 else "")
        out.append(f"| {len(group)} | {_cell(reason)} | {sample} |")
    out += ["", examples, ""]
    if suite:
        out += [suite, ""]
    for module in MODULES:
        out += [f"## `{module}`", "", "| name | status | reason | defined in |", "|---|---|---|---|"]
        for export in (e for e in exports if e.module == module):
            out.append(f"| `{module}.{export.name}` | {export.status} | {_cell(export.reason)} | "
                       f"`{export.origin}` |")
        out.append("")
    return "\n".join(out)


def build(source: TileLangSource, external: Callable[[str], list[str] | None],
          resolves: Callable[[str, str], tuple[bool, str]],
          examples: str, core: str = "", date: str = "", suite: str = "") -> tuple[str, list[Export]]:
    """Read the names, classify them, render the document."""
    tree = TileLangTree(source, external)
    exports = [e for module in MODULES for e in exported_names(tree, module)]
    classify(exports, resolves)
    notes = []
    tvm = source.tvm_submodule()
    for module, count in sorted(tree.external_used.items()):
        notes.append(
            f"`tilelang.language` re-exports TVM's script namespace `{module}` ({count} names): "
            f"TileLang takes it from its own TVM fork" + (f" (submodule commit `{tvm}`)" if tvm else "")
            + ", whose source is not read here; the list comes from the apache-tvm installed where "
            "this document was generated, so names the fork adds or lacks may be missing or extra.")
    problems = tree.problems()
    if problems:
        notes.append("Not evaluated statically (the list may miss names these would add): "
                     + "; ".join(problems) + ".")
    document = render(exports, commit=source.commit(), examples=examples, notes=notes,
                      core=core, date=date, suite=suite)
    return document, exports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tilelang", type=Path, required=True,
                        help="TileLang's source: a checkout or a bare git directory")
    parser.add_argument("--revision", default="HEAD", help="the commit to read from a bare git directory")
    parser.add_argument("--examples-json", type=Path,
                        help="records written by scripts/tilelang_examples.py --json")
    parser.add_argument("--suite-json", type=Path,
                        help="the record written by scripts/tilelang_suite.py (collection and/or run)")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "compat.md")
    args = parser.parse_args(argv)
    old = args.output.read_text() if args.output.is_file() else ""
    data = json.loads(args.examples_json.read_text()) if args.examples_json else None
    section = examples_section(data, acceptance_examples(), existing_examples_section(old) if old else None)
    suite_module = _suite_module()
    suite_data = json.loads(args.suite_json.read_text()) if args.suite_json else None
    suite = suite_module.suite_section(suite_data, suite_module.existing_suite_section(old) if old else None)
    document, exports = build(TileLangSource(args.tilelang, args.revision), installed_module_names,
                              tilelang_core_resolves, section, core=core_revision(),
                              date=datetime.date.today().isoformat(), suite=suite)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(document)
    for module, row in _counts(exports).items():
        print(f"{module}: " + ", ".join(f"{n} {status}" for status, n in row.items()))
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
