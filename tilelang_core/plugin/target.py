"""Targets: a kind plus an arch (plus options), and the registry of what backends declare."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .capabilities import Capabilities

__all__ = ["Target", "TargetError", "TargetKind", "TargetRegistry"]


class TargetError(ValueError):
    """A target string that names no declared kind or arch."""


@dataclass(frozen=True)
class TargetKind:
    """A kind of target a backend declares: its archs and their capability tables.

    `default_arch` is used for a bare kind (`KIND` rather than `KIND/ARCH`); `aliases` map
    extra arch names (such as "host") to declared ones.
    """

    name: str
    archs: Mapping[str, Capabilities]
    default_arch: str
    description: str = ""
    aliases: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Target:
    """A compilation target. Parse one with `Target.parse("KIND/ARCH")`."""

    kind: str
    arch: str
    capabilities: Capabilities = field(compare=False, repr=False)
    options: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        return f"{self.kind}/{self.arch}"

    @property
    def caps(self) -> Capabilities:
        return self.capabilities

    def option(self, name: str, default: Any = None) -> Any:
        return dict(self.options).get(name, default)

    @staticmethod
    def parse(spec: "str | Target", options: Mapping[str, Any] | None = None) -> "Target":
        """Parse `kind[/arch]` or `auto` against the installed backends."""
        if isinstance(spec, Target):
            return spec
        from .manager import get_plugin_manager

        return get_plugin_manager().registry.parse(spec, options)


class TargetRegistry:
    """Target kinds declared through `tilelang_register_targets`, and who owns each."""

    def __init__(self) -> None:
        self.kinds: dict[str, TargetKind] = {}
        self.owners: dict[str, object] = {}
        self.owner_names: dict[str, str] = {}
        self._current_plugin: object | None = None
        self._current_name: str = ""

    def add_kind(self, kind: TargetKind) -> None:
        """Declare a target kind. Called by a backend from `tilelang_register_targets`."""
        if kind.name in self.kinds:
            raise TargetError(
                f"target kind {kind.name!r} is declared twice (by {self.owner_names[kind.name]!r} "
                f"and {self._current_name!r}); uninstall one of the two backends"
            )
        if kind.default_arch not in kind.archs:
            raise TargetError(f"target kind {kind.name!r}: default arch {kind.default_arch!r} is not declared")
        self.kinds[kind.name] = kind
        self.owners[kind.name] = self._current_plugin
        self.owner_names[kind.name] = self._current_name

    def owner(self, kind: str) -> object:
        return self.owners[kind]

    def parse(self, spec: str, options: Mapping[str, Any] | None = None, detected=None) -> Target:
        text = str(spec).strip()
        opts = tuple(sorted((options or {}).items()))
        if text == "auto":
            from .manager import get_plugin_manager

            best = get_plugin_manager().best_detected_target()
            return Target(best.kind, best.arch, best.capabilities, opts)
        kind_name, _, arch = text.partition("/")
        valid = ", ".join(sorted(self.kinds)) or "none (no backend is installed)"
        if kind_name not in self.kinds:
            raise TargetError(
                f"unknown target kind {kind_name!r} in {text!r}. Valid kinds: {valid}, or 'auto'. "
                f"Install the backend for {kind_name!r} (e.g. pip install tilelang-{kind_name}) "
                f"or check `tilelang backends`."
            )
        kind = self.kinds[kind_name]
        if not arch:
            arch = kind.default_arch
        arch = kind.aliases.get(arch, arch)
        if arch not in kind.archs:
            archs = ", ".join(list(kind.archs) + list(kind.aliases))
            raise TargetError(
                f"unknown arch {arch!r} for target kind {kind_name!r} in {text!r}. "
                f"Valid archs for {kind_name}: {archs}"
            )
        caps = kind.archs[arch]
        if detected is not None:
            caps = detected
        return Target(kind_name, arch, caps, opts)

    def all_targets(self) -> list[str]:
        return [f"{k}/{a}" for k, kind in sorted(self.kinds.items()) for a in kind.archs]
