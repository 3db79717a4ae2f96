"""Targets: a kind plus an arch (plus options), and the registry of what backends declare.

Our syntax is `KIND[/ARCH]` or `auto`. Other tools spell targets their own way (TileLang's
short names, TVM's `"NAME -arch=ARCH"`, `{"kind": NAME, "arch": ARCH}`, a `tvm.target.Target`):
a backend declares the spellings it owns with `TargetRegistry.add_spelling`, and the registry
maps a spelling only through the backend that declared it.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Union

from .capabilities import Capabilities

__all__ = ["Target", "TargetError", "TargetKind", "TargetRegistry", "TargetSpelling", "split_target_spec"]

SpellingMeaning = Union[str, Callable[[Mapping[str, Any]], str]]


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
class TargetSpelling:
    """A target name in another tool's syntax, owned by the backend that declared it.

    `meaning` is a target in our syntax (`"cpu"`), or a function that takes the spelling's
    attributes (`{"arch": ARCH}`; a TVM tag such as `"VENDOR/DEVICE"` arrives as
    `{"tag": ...}`) and returns one. A fixed meaning reads no attributes.
    """

    name: str
    meaning: SpellingMeaning
    owner: str

    def resolve(self, attrs: Mapping[str, Any], text: str) -> str:
        if isinstance(self.meaning, str):
            return self.meaning
        result = self.meaning(dict(attrs))
        if not isinstance(result, str):
            raise TargetError(
                f"backend {self.owner!r} resolved target {text!r} to {result!r}, not a target "
                f"string (KIND[/ARCH]); this is a bug in that backend's spelling {self.name!r}"
            )
        return result


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
    def parse(spec: Any, options: Mapping[str, Any] | None = None) -> "Target":
        """Parse `kind[/arch]`, `auto`, or a spelling a backend declares (see the registry)."""
        if isinstance(spec, Target):
            return spec
        from .manager import get_plugin_manager

        return get_plugin_manager().registry.parse(spec, options)


def _plain(value: Any) -> Any:
    """An attribute value as a plain Python value (TVM hands out its own string and int types)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (list, tuple)) or type(value).__name__ == "Array":
        return [_plain(v) for v in value]
    return str(value)


def _split_words(text: str) -> tuple[str, dict[str, Any]]:
    """`"NAME -arch=ARCH -max_num_threads=1024"` -> ("NAME", {"arch": "ARCH", "max_num_threads": "1024"})."""
    words = text.split()
    attrs: dict[str, Any] = {}
    for word in words[1:]:
        if not word.startswith("-"):
            raise TargetError(
                f"target {text!r}: {word!r} is not an attribute; write attributes as 'NAME -key=value' "
                f"or pass a dict such as {{'kind': NAME, 'arch': ARCH}}"
            )
        key, eq, value = word.lstrip("-").partition("=")
        if not key:
            raise TargetError(f"target {text!r}: {word!r} names no attribute")
        attrs[key] = value if eq else True
    return words[0], attrs


def split_target_spec(spec: Any) -> tuple[str, dict[str, Any], str]:
    """(name, attributes, text for messages) of a target in any accepted form.

    Forms: `"KIND[/ARCH]"`, `"auto"`, `"name -key=value ..."`, a JSON object string, a mapping
    with a `"kind"` key, and a `tvm.target.Target` (anything with `.kind.name` and `.attrs`).
    """
    if isinstance(spec, str):
        text = spec.strip()
        if not text:
            raise TargetError("target: empty string; write KIND[/ARCH] or 'auto' (`tilelang backends` lists the targets)")
        if text.startswith("{"):
            try:
                spec = json.loads(text)
            except ValueError as exc:
                raise TargetError(f"target {text!r}: not valid JSON ({exc})") from None
        else:
            name, attrs = _split_words(text)
            return name, attrs, text
    if isinstance(spec, Mapping):
        kind = spec.get("kind")
        if not isinstance(kind, str) or not kind.strip():
            raise TargetError(f"target {dict(spec)!r}: a target given as a dict needs a 'kind' string")
        attrs = {str(k): _plain(v) for k, v in spec.items() if k != "kind"}
        return kind.strip(), attrs, json.dumps({"kind": kind, **attrs}, default=str)
    kind = getattr(getattr(spec, "kind", None), "name", None)
    if isinstance(kind, str) and hasattr(spec, "attrs"):
        attrs = {str(k): _plain(v) for k, v in dict(spec.attrs).items()}
        return str(kind), attrs, str(spec)
    raise TargetError(
        f"target must be a string (KIND[/ARCH], 'auto', or another tool's spelling 'NAME -key=value'), a dict "
        f"with a 'kind', a tvm.target.Target or a Target; got {type(spec).__name__}: {spec!r}"
    )


def _tvm_current_target() -> Any:
    """The `tvm.target.Target` of an enclosing `with Target(...)` block, if TVM is loaded."""
    module = sys.modules.get("tvm.target")
    current = getattr(getattr(module, "Target", None), "current", None)
    return current(allow_none=True) if current is not None else None


class TargetRegistry:
    """Target kinds declared through `tilelang_register_targets`, who owns each, and the
    spellings of other tools that each backend maps to its own targets."""

    def __init__(self) -> None:
        self.kinds: dict[str, TargetKind] = {}
        self.owners: dict[str, object] = {}
        self.owner_names: dict[str, str] = {}
        self.spellings: dict[str, TargetSpelling] = {}
        self.manager: Any = None  # the PluginManager, for detections (set by it)
        self._current_plugin: object | None = None
        self._current_name: str = ""

    def add_kind(self, kind: TargetKind) -> None:
        """Declare a target kind. Called by a backend from `tilelang_register_targets`."""
        if kind.name in self.kinds:
            raise TargetError(
                f"target kind {kind.name!r} is declared twice (by {self.owner_names[kind.name]!r} "
                f"and {self._current_name!r}); uninstall one of the two backends"
            )
        other = self.spellings.get(kind.name)
        if other is not None and other.owner != self._current_name:
            raise TargetError(
                f"target kind {kind.name!r} of {self._current_name!r} is already a target spelling of "
                f"{other.owner!r}; uninstall one of the two backends"
            )
        if kind.default_arch not in kind.archs:
            raise TargetError(f"target kind {kind.name!r}: default arch {kind.default_arch!r} is not declared")
        self.kinds[kind.name] = kind
        self.owners[kind.name] = self._current_plugin
        self.owner_names[kind.name] = self._current_name

    def add_spelling(self, name: str, meaning: SpellingMeaning) -> None:
        """Declare that target `name` of another tool (a TileLang or TVM target name) means
        one of this backend's targets. Called by a backend from `tilelang_register_targets`,
        after its `add_kind`.

        `meaning` is a target in our syntax whose kind this backend declared (`"cpu"`), or a
        function `resolve(attrs) -> str` given the spelling's attributes (from `"NAME
        -arch=ARCH"`, `{"kind": NAME, "arch": ARCH}` or a `tvm.target.Target`) that
        raises `TargetError` naming the attribute when a value has no counterpart here.
        A result without an arch means the device of that kind found on this machine, else
        the kind's default arch (a bare TileLang GPU name is the GPU at hand). A spelling may share
        its name with this backend's own kind: then a bare `KIND` is read as the spelling,
        and `KIND/ARCH` stays our syntax.
        """
        if not self._current_name:
            raise TargetError("add_spelling must be called from a backend's tilelang_register_targets")
        if not isinstance(name, str) or not name or any(c.isspace() for c in name) or "/" in name:
            raise TargetError(f"add_spelling: name must be one word without '/' or spaces, got {name!r}")
        if not (isinstance(meaning, str) or callable(meaning)):
            raise TargetError(f"add_spelling({name!r}): meaning must be a target string or a function, got {meaning!r}")
        if isinstance(meaning, str):
            kind = meaning.partition("/")[0]
            if self.owner_names.get(kind) != self._current_name:
                raise TargetError(
                    f"add_spelling({name!r}, {meaning!r}): kind {kind!r} is not declared by "
                    f"{self._current_name!r}; a backend maps spellings to its own kinds only"
                )
        if name in self.spellings:
            raise TargetError(
                f"target spelling {name!r} is declared twice (by {self.spellings[name].owner!r} and "
                f"{self._current_name!r}); uninstall one of the two backends"
            )
        if name in self.kinds and self.owner_names[name] != self._current_name:
            raise TargetError(
                f"target spelling {name!r} of {self._current_name!r} is the target kind of "
                f"{self.owner_names[name]!r}; uninstall one of the two backends"
            )
        self.spellings[name] = TargetSpelling(name, meaning, self._current_name)

    def remove_backend(self, name: str) -> None:
        """Forget the kinds and spellings a backend declared (its registration failed)."""
        for kind in [k for k, owner in self.owner_names.items() if owner == name]:
            del self.kinds[kind], self.owners[kind], self.owner_names[kind]
        for spelling in [s for s, sp in self.spellings.items() if sp.owner == name]:
            del self.spellings[spelling]

    def owner(self, kind: str) -> object:
        return self.owners[kind]

    def parse(self, spec: Any, options: Mapping[str, Any] | None = None, detected=None) -> Target:
        """A `Target` from our syntax, `auto`, or a declared spelling (see `split_target_spec`).

        `auto` inside a `with tvm.target.Target(...)` block means that target, as in TileLang.
        """
        if isinstance(spec, Target):
            return spec
        name, attrs, text = split_target_spec(spec)
        opts = tuple(sorted((options or {}).items()))
        if name == "auto" and not attrs:
            current = _tvm_current_target()
            if current is not None:
                return self.parse(current, options, detected)
            manager = self.manager
            if manager is None:
                from .manager import get_plugin_manager

                manager = get_plugin_manager()
            best = manager.best_detected_target()
            return Target(best.kind, best.arch, best.capabilities, opts)
        head, slash, _ = name.partition("/")
        spelling = self.spellings.get(head)
        if spelling is not None and not (slash and head in self.kinds):
            return self._parse_spelling(spelling, name, attrs, text, opts, detected)
        if attrs:
            raise TargetError(
                f"target {text!r}: {head!r} takes no attributes here (no installed backend declares it "
                f"as a spelling of another tool); write KIND/ARCH, e.g. {self._example()!r}. "
                + self._known()
            )
        return self._parse_ours(name, opts, detected)

    def _parse_spelling(self, spelling: TargetSpelling, name: str, attrs: dict[str, Any], text: str,
                        opts: tuple, detected) -> Target:
        if "/" in name:
            attrs = {"tag": name, **attrs}
        try:
            ours = spelling.resolve(attrs, text)
        except TargetError as exc:
            raise TargetError(f"target {text!r}: {exc}") from None
        kind_name, _, arch = ours.partition("/")
        if self.owner_names.get(kind_name) != spelling.owner:
            raise TargetError(
                f"backend {spelling.owner!r} resolved target {text!r} to {ours!r}, a kind it does not "
                f"declare; this is a bug in that backend's spelling {spelling.name!r}"
            )
        if not arch:
            device = self._detected_device(kind_name)
            if device is not None:
                caps = device.capabilities or self.kinds[kind_name].archs[device.arch]
                return Target(kind_name, device.arch, caps, opts)
        try:
            return self._parse_ours(ours, opts, detected)
        except TargetError as exc:
            raise TargetError(f"target {text!r} (read as {ours!r} by backend {spelling.owner!r}): {exc}") from None

    def _detected_device(self, kind: str):
        """The highest-priority detection of `kind` with a device present, or None."""
        if self.manager is None:
            return None
        found = [d for d in self.manager.detections_of(kind) if d.device and d.arch in self.kinds[kind].archs]
        return max(found, key=lambda d: d.priority) if found else None

    def _parse_ours(self, text: str, opts: tuple, detected) -> Target:
        kind_name, _, arch = text.partition("/")
        valid = ", ".join(sorted(self.kinds)) or "none (no backend is loaded)"
        if kind_name not in self.kinds:
            advice = self.manager.selection_advice(kind_name) if self.manager is not None else ""
            if self.manager is None or kind_name not in self.manager.left_out:
                advice = (f"{advice} " if advice else "") + (
                    f"Install the backend for {kind_name!r} (e.g. pip install tilelang-{kind_name}) "
                    f"or check `tilelang backends`.")
            raise TargetError(
                f"unknown target kind {kind_name!r} in {text!r}. Valid kinds: {valid}, or 'auto'. "
                f"{advice} " + self._known()
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

    def _example(self) -> str:
        for kind in sorted(self.kinds):
            return f"{kind}/{self.kinds[kind].default_arch}"
        return "KIND/ARCH"

    def _known(self) -> str:
        """The spellings installed backends declare, grouped by the kinds they map to."""
        if not self.spellings:
            return "No installed backend declares other tools' spellings."
        by_owner: dict[str, list[str]] = {}
        for spelling in sorted(self.spellings.values(), key=lambda s: s.name):
            by_owner.setdefault(spelling.owner, []).append(spelling.name)
        groups = "; ".join(f"{', '.join(names)} (backend {owner})" for owner, names in sorted(by_owner.items()))
        return (f"Known spellings of other tools: {groups}; they take attributes as 'NAME -key=value', "
                f"a dict {{'kind': NAME, ...}} or a tvm.target.Target.")

    def all_targets(self) -> list[str]:
        return [f"{k}/{a}" for k, kind in sorted(self.kinds.items()) for a in kind.archs]
