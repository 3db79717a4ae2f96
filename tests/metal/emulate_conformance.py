"""Run the conformance suite's cases for a Metal target on the host emulation (metal_emulator.py).

    .venv/bin/python tests/metal/emulate_conformance.py --arch apple-m2 [-k 'gemm.*'] [--seed N]

Each case is compiled for the arch, then its generated MSL runs on the emulator with the
suite's own inputs, references and tolerances. Not a test (minutes per arch): a check of
numbers while no Mac is at hand. Exit status 1 when a case mismatched or its emulator build
failed; cases the arch cannot compile (N/A dtypes) are listed, not counted.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main(argv: list[str] | None = None) -> int:
    import tilelang_core
    from tests.emulation import run_cases
    from tests.metal.metal_emulator import emulate

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="apple-m2",
                        choices=("apple-m1", "apple-m2", "apple-m3", "apple-m4", "apple-m5"))
    parser.add_argument("-k", action="append", default=[], help="glob over case names")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args(argv)
    target = tilelang_core.get_plugin_manager().parse_target(f"metal/{args.arch}")
    workdir = Path(tempfile.mkdtemp(prefix="tilelang-metal-emu-"))
    counts = run_cases(target, lambda kernel: emulate(kernel, workdir), args.k, args.seed)
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
