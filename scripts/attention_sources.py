"""The generated sources of the attention operators for one target, written to a folder or
compared with one written before: a refactor of `tilelang_core/ops/attention.py` that must
not change the code the H100 timings were measured on shows here as no difference.

    .venv/bin/python scripts/attention_sources.py --write /tmp/before     # before the change
    .venv/bin/python scripts/attention_sources.py --compare /tmp/before   # after it

Kernels: flash_attention at bench/ops.py's large sizes (fixed, causal, GQA), with a ragged key
count and with a negative scale (the masked and the pre-scaled paths); flash_attention_varlen
(its registry example, causal and not); attention_decode (the bench's problem, one ragged).
Each is compiled with the config the operator resolves for the target (`--target`, default
cuda/sm_90a). `--compare` prints a unified diff per kernel that differs.
Exit status: 0 when every source is the same, 1 otherwise.
"""
from __future__ import annotations

import argparse
import difflib
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

_FWD = {"batch": 8, "heads": 16, "kv_heads": 16, "seq_q": 4096, "seq_kv": 4096, "dim": 128, "dtype": "float16",
        "causal": False, "scale": 1 / math.sqrt(128)}
_DECODE = {"batch": 16, "heads": 32, "kv_heads": 8, "seq_kv": 8192, "dim": 128, "dtype": "float16",
           "scale": 1 / math.sqrt(128), "splits": 0, "processors": 132}


def problems() -> dict[str, tuple[str, dict]]:
    """name -> (operator, problem)."""
    from tilelang_core import ops

    varlen = dict(ops.get("flash_attention_varlen").example)
    return {
        "flash_attention": ("flash_attention", _FWD),
        "flash_attention_causal": ("flash_attention", {**_FWD, "causal": True}),
        "flash_attention_gqa": ("flash_attention", {**_FWD, "kv_heads": 4}),
        "flash_attention_ragged": ("flash_attention", {**_FWD, "seq_q": 1000, "seq_kv": 1000}),
        "flash_attention_negative_scale": ("flash_attention", {**_FWD, "causal": True, "scale": -0.1}),
        "flash_attention_varlen_causal": ("flash_attention_varlen", varlen),
        "flash_attention_varlen": ("flash_attention_varlen", {**varlen, "causal": False}),
        "attention_decode": ("attention_decode", _DECODE),
        "attention_decode_ragged": ("attention_decode", {**_DECODE, "seq_kv": 1000, "batch": 2}),
    }


def source(target: str, op_name: str, problem: dict) -> str:
    """The generated source of operator `op_name` for `problem` on `target`, compiled with the
    config the operator resolves there."""
    import tilelang_core
    from tilelang_core import ops
    from tilelang_core.ops.launch import pass_configs
    from tilelang_core.ops.registry import resolve_config
    from tilelang_core.plugin import get_plugin_manager

    tgt = get_plugin_manager().parse_target(target)
    op = ops.get(op_name)
    config, _ = resolve_config(op, tgt, problem)
    func = op.kernels[config["kernel"]](dict(problem), config)
    kernel = tilelang_core.compile(func, out_idx=list(op.outputs), target=tgt, pass_configs=pass_configs(config))
    return kernel.get_kernel_source()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, metavar="DIR", help="write each kernel's source to DIR/NAME.src")
    group.add_argument("--compare", type=Path, metavar="DIR", help="compare each kernel's source with DIR/NAME.src")
    parser.add_argument("--target", default="cuda/sm_90a")
    args = parser.parse_args(argv)
    different = 0
    for name, (op_name, problem) in problems().items():
        text = source(args.target, op_name, problem)
        if args.write:
            args.write.mkdir(parents=True, exist_ok=True)
            (args.write / f"{name}.src").write_text(text)
            print(f"wrote {name} ({len(text)} characters)")
            continue
        before = (args.compare / f"{name}.src").read_text()
        if before == text:
            print(f"{name}: the same ({len(text)} characters)")
            continue
        different += 1
        print(f"{name}: DIFFERENT")
        sys.stdout.writelines(difflib.unified_diff(before.splitlines(True), text.splitlines(True),
                                                   f"{args.compare}/{name}.src", f"now/{name}.src", n=2))
    if args.compare:
        print(f"{different} of {len(problems())} sources differ")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
