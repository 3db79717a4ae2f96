"""The plugin contract: hookspecs, the manager that loads backends, targets and capabilities."""
from .capabilities import SCHEMA_VERSION, Capabilities, MatrixInstruction
from .facade import TargetHooks, hooks_for
from .hookspecs import hookimpl
from .manager import (
    ENTRY_POINT_GROUP,
    BackendInfo,
    Detection,
    PluginManager,
    UnusableDeviceWarning,
    get_plugin_manager,
    reset_plugin_manager,
)
from .target import Target, TargetError, TargetKind, TargetRegistry

__all__ = [
    "SCHEMA_VERSION",
    "Capabilities",
    "MatrixInstruction",
    "TargetHooks",
    "hooks_for",
    "hookimpl",
    "ENTRY_POINT_GROUP",
    "BackendInfo",
    "Detection",
    "PluginManager",
    "UnusableDeviceWarning",
    "get_plugin_manager",
    "reset_plugin_manager",
    "Target",
    "TargetError",
    "TargetKind",
    "TargetRegistry",
]
