"""Write the generated source of every conformance case, per target, into a folder.

For refactors that must not change generated code: run it before and after the change and
compare the two folders (`diff -r`). A case that does not reach codegen on a target (N/A, or
an error at any stage) is written as a one-line `.err` file naming the stage and the error,
so a change in what fails shows up in the comparison too.

    .venv/bin/python scripts/conformance_sources.py OUT_DIR hip/gfx90a hip/gfx942 metal/apple-m2 ...
"""
from __future__ import annotations

import sys
from pathlib import Path


def dump(out: Path, target_specs: list[str]) -> int:
    """Render every registered case for each target into `out/<target>/<case>.src` (or
    `.err`); returns the number of sources written."""
    from tilelang_conformance.build import StageError, render
    from tilelang_conformance.case import NotApplicable, registry
    from tilelang_conformance.evaluate import missing_capabilities
    from tilelang_core.plugin import get_plugin_manager

    manager = get_plugin_manager()
    written = 0
    for spec in target_specs:
        target = manager.parse_target(spec)
        folder = out / spec.replace("/", "_")
        folder.mkdir(parents=True, exist_ok=True)
        for name, case in sorted(registry().items()):
            if missing_capabilities(case, target.capabilities):
                (folder / f"{name}.err").write_text("N/A\n")
                continue
            try:
                built = case.spec(target)
                program = built.build_program()
                source = render(program, target)
            except NotApplicable as exc:
                (folder / f"{name}.err").write_text(f"N/A: {exc}\n")
                continue
            except StageError as exc:
                (folder / f"{name}.err").write_text(f"{exc.stage}: {type(exc.cause).__name__}\n")
                continue
            except Exception as exc:  # noqa: BLE001 - any failure is recorded, not raised
                (folder / f"{name}.err").write_text(f"build: {type(exc).__name__}\n")
                continue
            (folder / f"{name}.src").write_text(source.source)
            written += 1
    return written


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    count = dump(Path(sys.argv[1]), sys.argv[2:])
    print(f"{count} sources written under {sys.argv[1]}")
