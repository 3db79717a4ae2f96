"""MUSA instructions in the kernel language, offered as `T.<name>` by the plugin.

Placeholder; filled in below.
"""
LANGUAGE_NAMES: dict = {}
