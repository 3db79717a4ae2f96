"""Ships `tilelang_core_alias.pth` at the top of site-packages (see tilelang_core/compat/activate.py).

The rest of the package is declared in pyproject.toml; this file exists only because a `.pth`
file must sit beside the packages, which pyproject's tables cannot say. Regular wheels get it
from `build_py` (a wheel's root is site-packages); editable installs from `editable_wheel`,
whose strategies write only the package finder, so the file is added to that wheel too.
"""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH = Path(__file__).parent / "tilelang_core" / "compat" / "tilelang_core_alias.pth"


class BuildPyWithPth(build_py):
    def run(self) -> None:
        super().run()
        self.copy_file(str(PTH), str(Path(self.build_lib) / PTH.name), preserve_mode=0)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / PTH.name)]


class _StrategyWithPth:
    """An editable-install strategy that also writes the `.pth` into the editable wheel."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __call__(self, wheel, files, mapping) -> None:
        self.inner(wheel, files, mapping)
        wheel.writestr(PTH.name, PTH.read_bytes())

    def __enter__(self):
        self.inner.__enter__()
        return self

    def __exit__(self, *exc):
        return self.inner.__exit__(*exc)


class EditableWheelWithPth(editable_wheel):
    def _select_strategy(self, *args, **kwargs):
        return _StrategyWithPth(super()._select_strategy(*args, **kwargs))


setup(cmdclass={"build_py": BuildPyWithPth, "editable_wheel": EditableWheelWithPth})
