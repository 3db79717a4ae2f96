"""The bar plot of a `bench/ops.py` run: torch time / our time per operator, memory-bound
operators in blue with their 0.9x floor, from the run's ops.json.

    python scripts/plot_ops.py DIR/ops.json [OUT.png]     # default: ops.png beside the JSON

Needs matplotlib (not needed by the bench itself: a device without it leaves the plot to here).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["plot"]


def plot(json_path: Path, png_path: Path) -> Path:
    """Write the plot of the run in `json_path` to `png_path`; raises ImportError without
    matplotlib, ValueError when the run timed no operator."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run = json.loads(Path(json_path).read_text())
    done = [r for r in run["rows"] if "ratio" in r]
    if not done:
        raise ValueError(f"{json_path}: no operator was timed in this run; nothing to plot")
    floor = run.get("memory_bound_floor", 0.9)
    fig, ax = plt.subplots(figsize=(max(8, 0.42 * len(done)), 4.8))
    colors = ["tab:blue" if r["memory_bound"] else "tab:orange" for r in done]
    bars = ax.bar([r["op"] for r in done], [r["ratio"] for r in done], color=colors)
    for bar, r in zip(bars, done):
        if not r["ok"]:
            bar.set_hatch("xx")  # its output did not match
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(floor, color="red", linestyle="--", linewidth=0.8, label=f"memory-bound floor {floor}x")
    # a log axis: a 14x bar next to 1.0x bars would otherwise flatten every ratio near 1
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.set_ylabel("torch time / our time (log scale)")
    ax.set_title(f"tilelang_core.ops vs torch {run.get('torch', '')} on {run.get('device', '?')} "
                 f"(blue: memory-bound; hatched: mismatch)", fontsize=9)
    ax.tick_params(axis="x", rotation=70, labelsize=8)
    ax.legend()
    fig.tight_layout()
    png_path = Path(png_path)
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
    return png_path


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    source = Path(argv[0])
    target = Path(argv[1]) if len(argv) > 1 else source.with_name("ops.png")
    try:
        print(f"plot: {plot(source, target)}")
    except ImportError:
        print("matplotlib is not installed: `pip install matplotlib`, then run this again")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
