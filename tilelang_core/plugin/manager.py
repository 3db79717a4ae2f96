"""Finding backends through entry points, loading them one by one, and dispatching hooks.

A backend that fails to import (or whose registration raises) is recorded as broken with its
error; it never breaks `import tilelang_core` nor the other backends.
"""
from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy

from .. import env
from . import hookspecs
from .capabilities import Capabilities
from .target import Target, TargetError, TargetRegistry

__all__ = [
    "ENTRY_POINT_GROUP",
    "BackendInfo",
    "CompatModule",
    "Detection",
    "PluginManager",
    "UnusableDeviceWarning",
    "get_plugin_manager",
    "reset_plugin_manager",
]

ENTRY_POINT_GROUP = "tilelang.backends"


class UnusableDeviceWarning(UserWarning):
    """`auto` chose a target although a backend saw a device it cannot use (which, and why)."""


@dataclass(frozen=True)
class Detection:
    """Whether a target is usable on this machine, and why (not)."""

    kind: str
    arch: str
    device: bool = False
    toolchain: bool = False
    reason: str = ""
    capabilities: Capabilities | None = None
    priority: int = 0  # higher wins for `auto`; CPU backends use 0, devices more
    # a device the backend saw but cannot use, and why ("GeForce GTX 1080 (sm_61): not a declared
    # arch ..."): `auto` names it when it falls back to a device of lower priority (the CPU)
    unusable_device: str = ""

    @property
    def usable(self) -> str:
        if self.device:
            return "device found"
        if self.toolchain:
            return "toolchain found"
        return "neither"


@dataclass(frozen=True)
class CompatModule:
    """A TileLang module path a backend claims: the module standing for it (None: owned by that
    backend, not provided yet)."""

    path: str
    module: str | None
    backend: str


@dataclass
class BackendInfo:
    """One entry point of group `tilelang.backends`, loaded or broken."""

    name: str
    distribution: str
    version: str
    module: str
    plugin: Any = None
    error: str | None = None
    kinds: list[str] = field(default_factory=list)

    @property
    def broken(self) -> bool:
        return self.error is not None


class PluginManager:
    """The pluggy manager plus the target registry built from the loaded backends."""

    def __init__(self, entry_points: list[metadata.EntryPoint] | None = None) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.registry = TargetRegistry()
        self.registry.manager = self
        self.backends: dict[str, BackendInfo] = {}
        self.left_out: list[str] = []  # installed entry points TILELANG_BACKENDS leaves out
        self.not_installed: list[str] = []  # names TILELANG_BACKENDS asks for that none provides
        self._detections: list[Detection] | None = None
        self._language_names: tuple[dict, dict] | None = None
        self._language_keywords: tuple[dict, dict] | None = None
        self._load(entry_points)

    # -- loading ---------------------------------------------------------------------------

    def _load(self, entry_points: list[metadata.EntryPoint] | None) -> None:
        if entry_points is None:
            entry_points = list(metadata.entry_points(group=ENTRY_POINT_GROUP))
        wanted = env.enabled_backends()
        if wanted is not None:
            self.not_installed = [name for name in wanted if name not in {ep.name for ep in entry_points}]
        for ep in sorted(entry_points, key=lambda e: e.name):
            if wanted is not None and ep.name not in wanted:
                self.left_out.append(ep.name)
                continue
            dist = getattr(ep, "dist", None)
            info = BackendInfo(
                name=ep.name,
                distribution=dist.metadata["Name"] if dist else "?",
                version=dist.version if dist else "?",
                module=ep.value,
            )
            self.backends[ep.name] = info
            try:
                plugin = ep.load()
            except BaseException as exc:  # noqa: BLE001 - any import failure means "broken"
                info.error = _describe(exc)
                continue
            self.register_plugin(info, plugin)

    def register_module(self, name: str, module: str) -> BackendInfo:
        """Register a backend from its plugin module's import path ("pkg.plugin" or
        "pkg.plugin:attr"): for a checkout on PYTHONPATH that no installed entry point
        provides (a lent GPU machine). Raises when the module does not import or register."""
        from importlib import import_module

        info = BackendInfo(name, "(not installed: imported from the path)", "?", module)
        self.backends[name] = info
        module_name, _, attr = module.partition(":")
        try:
            loaded = import_module(module_name)
        except BaseException as exc:  # noqa: BLE001 - reported like an entry point that breaks
            info.error = _describe(exc)
        else:
            self.register_plugin(info, getattr(loaded, attr) if attr else loaded)
        if info.broken:
            raise RuntimeError(f"backend {name!r} ({module}) failed to register: {info.error}")
        self._detections = None
        self.__dict__.pop("_by_kind", None)
        return info

    def register_plugin(self, info: BackendInfo, plugin: Any) -> None:
        """Register one backend module and let it declare its targets."""
        self._language_names = None  # collected again with this backend's names
        self._language_keywords = None
        try:
            self.pm.register(plugin, name=info.name)
        except BaseException as exc:  # noqa: BLE001
            info.error = _describe(exc)
            return
        info.plugin = plugin
        before = set(self.registry.kinds)
        self.registry._current_plugin = plugin
        self.registry._current_name = info.name
        try:
            impl = getattr(plugin, "tilelang_register_targets", None)
            if impl is not None:
                impl(self.registry)
        except BaseException as exc:  # noqa: BLE001
            info.error = _describe(exc)
            self.registry.remove_backend(info.name)
            self.pm.unregister(plugin)
            info.plugin = None
            return
        finally:
            self.registry._current_plugin = None
            self.registry._current_name = ""
        info.kinds = sorted(set(self.registry.kinds) - before)

    def selection_advice(self, kind: str | None = None) -> str:
        """What `TILELANG_BACKENDS` has to do with a missing target kind (`kind`, or any when
        None): names it asks for that no installed backend provides, and the installed
        backend(s) it leaves out, with the setting that loads them. "" when it plays no part."""
        wanted = env.enabled_backends()
        if wanted is None:
            return ""
        setting = f"TILELANG_BACKENDS={','.join(wanted)}"
        installed = sorted(set(self.backends) | set(self.left_out))
        parts = []
        if self.not_installed:
            parts.append(f"{setting} names {', '.join(repr(n) for n in self.not_installed)}, which no installed "
                         f"backend provides (installed: {', '.join(installed) or 'none'})")
        left_out = [n for n in self.left_out if kind is None or n == kind]
        if left_out:
            keep = [n for n in wanted if n not in self.not_installed]
            parts.append(f"{setting} leaves out the installed backend(s) {', '.join(left_out)}: set "
                         f"TILELANG_BACKENDS={','.join(keep + left_out)}, or unset it to load every installed backend")
        return "; ".join(parts) + "." if parts else ""

    # -- dispatch --------------------------------------------------------------------------

    def hook_for(self, target: Target | str, name: str):
        """The hook caller of `name` restricted to the plugin that owns `target`'s kind."""
        kind = target.kind if isinstance(target, Target) else str(target)
        if kind not in self.registry.owners:
            raise TargetError(f"no installed backend owns target kind {kind!r}")
        owner = self.registry.owners[kind]
        others = [p for p in self.pm.get_plugins() if p is not owner]
        return self.pm.subset_hook_caller(name, remove_plugins=others)

    def detections(self, refresh: bool = False) -> list[Detection]:
        """`tilelang_detect_targets` of every backend; one that raises reports the error."""
        if self._detections is None or refresh:
            found: list[Detection] = []
            for info in self.backends.values():
                impl = getattr(info.plugin, "tilelang_detect_targets", None)
                if info.broken or impl is None:
                    continue
                try:
                    found.extend(impl() or [])
                except Exception as exc:  # noqa: BLE001
                    for kind in info.kinds:
                        found.append(Detection(kind, self.registry.kinds[kind].default_arch,
                                               reason=f"detection failed: {_describe(exc)}"))
            self._detections = found
        return self._detections

    def detections_of(self, kind: str) -> list[Detection]:
        """The detections of the one backend that owns `kind` (cached per process)."""
        if self._detections is not None:
            return [d for d in self._detections if d.kind == kind]
        cache = self.__dict__.setdefault("_by_kind", {})
        if kind not in cache:
            plugin = self.registry.owners.get(kind)
            impl = getattr(plugin, "tilelang_detect_targets", None)
            try:
                found = list(impl() or []) if impl is not None else []
            except Exception:  # noqa: BLE001 - a failing probe means "nothing detected"
                found = []
            cache[kind] = [d for d in found if d.kind == kind]
        return cache[kind]

    def best_detected_target(self) -> Target:
        """The usable target with a device and the highest priority; CPU last."""
        candidates = [d for d in self.detections() if d.device and d.kind in self.registry.kinds]
        if not candidates:
            advice = self.selection_advice()
            raise TargetError(
                "target 'auto' found no usable device; loaded kinds: "
                + (", ".join(sorted(self.registry.kinds)) or "none")
                + ". " + (advice + " " if advice else "Install a backend with a usable device, or ")
                + ("name a target explicitly." if not advice else "Or name a target explicitly.")
            )
        best = max(candidates, key=lambda d: d.priority)
        seen = sorted({d.unusable_device for d in self.detections() if d.unusable_device and d.kind != best.kind})
        if seen:
            import warnings

            warnings.warn(
                f"target 'auto' picked {best.kind}/{best.arch}, but this machine has "
                + "; ".join(seen) + f". Name a target (target='{best.kind}' or TILELANG_TARGET) to silence this, "
                "or see `tilelang backends` for what each backend needs", UnusableDeviceWarning, stacklevel=3)
        caps = best.capabilities or self.registry.kinds[best.kind].archs[best.arch]
        return Target(best.kind, best.arch, caps)

    def compat_modules(self) -> tuple[dict[str, CompatModule], list[str]]:
        """What `tilelang_compat_modules` of every loaded backend declares: TileLang module path
        -> `CompatModule`, and one line per backend whose hook raised or whose claim collides
        with another backend's (the colliding path is dropped: neither backend gets it)."""
        found: dict[str, CompatModule] = {}
        problems: list[str] = []
        clashes: set[str] = set()
        for info in self.backends.values():
            impl = getattr(info.plugin, "tilelang_compat_modules", None)
            if info.broken or impl is None:
                continue
            try:
                declared = dict(impl() or {})
            except Exception as exc:  # noqa: BLE001 - reported, never breaks an import of ours
                problems.append(f"backend {info.name!r}: tilelang_compat_modules failed: {_describe(exc)}")
                continue
            for path, module in declared.items():
                if not isinstance(path, str) or not (module is None or isinstance(module, str)):
                    problems.append(f"backend {info.name!r}: tilelang_compat_modules entry {path!r}: "
                                    f"{module!r} is not a module path or None")
                    continue
                if path in found or path in clashes:
                    other = found.pop(path, None)
                    clashes.add(path)
                    if other is not None:
                        problems.append(f"{path} is claimed by backends {other.backend!r} and {info.name!r}; "
                                        f"uninstall one of the two")
                    continue
                found[path] = CompatModule(path, module, info.name)
        return found, problems

    def language_names(self) -> tuple[dict[str, Any], dict[str, str]]:
        """What `tilelang_language_names` of every loaded backend offers: name -> object, and
        name -> why it is withheld (a hook that raised is reported under the name "", a name
        two backends offer is given to neither). Collected once per manager."""
        if self._language_names is not None:
            return self._language_names
        found: dict[str, Any] = {}
        owner: dict[str, str] = {}
        withheld: dict[str, str] = {}
        for info in self.backends.values():
            impl = getattr(info.plugin, "tilelang_language_names", None)
            if info.broken or impl is None:
                continue
            try:
                declared = dict(impl() or {})
            except Exception as exc:  # noqa: BLE001 - reported when a name is missing
                withheld[""] = f"backend {info.name!r}: tilelang_language_names failed: {_describe(exc)}"
                continue
            for name, value in declared.items():
                if name in found or name in withheld:
                    other = owner.pop(name, None)
                    found.pop(name, None)
                    if other is not None:
                        withheld[name] = (f"T.{name} is offered by backends {other!r} and {info.name!r}; "
                                          f"uninstall one of the two")
                    continue
                found[name], owner[name] = value, info.name
        self._language_names = (found, withheld)
        return self._language_names

    def language_keywords(self) -> tuple[dict[str, dict[str, tuple[Any, str]]], dict[str, str]]:
        """What `tilelang_language_keywords` of every loaded backend offers: call name ->
        keyword -> (check function, backend name), and "call.keyword" -> why it is withheld (a
        hook that raised is reported under ""; a keyword two backends offer for one call is
        given to neither). Collected once per manager."""
        if self._language_keywords is not None:
            return self._language_keywords
        found: dict[str, dict[str, tuple[Any, str]]] = {}
        withheld: dict[str, str] = {}
        for info in self.backends.values():
            impl = getattr(info.plugin, "tilelang_language_keywords", None)
            if info.broken or impl is None:
                continue
            try:
                declared = {call: dict(words) for call, words in dict(impl() or {}).items()}
            except Exception as exc:  # noqa: BLE001 - reported when a keyword is refused
                withheld[""] = f"backend {info.name!r}: tilelang_language_keywords failed: {_describe(exc)}"
                continue
            for call, words in declared.items():
                for word, check in words.items():
                    key = f"{call}.{word}"
                    if key in withheld:
                        continue
                    other = found.get(call, {}).pop(word, None)
                    if other is not None:
                        withheld[key] = (f"T.{call}({word}=...) is offered by backends {other[1]!r} and "
                                         f"{info.name!r}; uninstall one of the two")
                        continue
                    found.setdefault(call, {})[word] = (check, info.name)
        self._language_keywords = (found, withheld)
        return self._language_keywords

    def parse_target(self, spec: Any = None, options=None) -> Target:
        """Parse a target (see `TargetRegistry.parse`); None means `TILELANG_TARGET` (default `auto`)."""
        if isinstance(spec, Target):
            return spec
        spec = env.default_target() if spec is None else spec
        target = self.registry.parse(spec, options)
        # A detected device refines the declared table with what the driver reports; only
        # the owner of the kind is asked, so naming a target never probes other backends.
        for det in self.detections_of(target.kind):
            if det.kind == target.kind and det.arch == target.arch and det.capabilities is not None:
                return Target(target.kind, target.arch, det.capabilities, target.options)
        return target


def _describe(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" (at {last[0].filename}:{last[0].lineno})" if last else ""
    return f"{type(exc).__name__}: {exc}{where}"


_MANAGER: PluginManager | None = None
_LOCK = threading.Lock()


def get_plugin_manager() -> PluginManager:
    """The process-wide plugin manager, loaded on first use."""
    global _MANAGER
    with _LOCK:
        if _MANAGER is None:
            _MANAGER = PluginManager()
        return _MANAGER


def reset_plugin_manager() -> None:
    """Forget the loaded backends (tests; after changing `TILELANG_BACKENDS`)."""
    global _MANAGER
    with _LOCK:
        _MANAGER = None
