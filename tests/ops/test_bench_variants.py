"""bench/variants.py, the shared half of the variants benches: the command line each bench
takes, the manifest, the element check with poisoned outputs, the alternating-round timing
with its paired ratio, and the table."""
from __future__ import annotations

import sys

import pytest


@pytest.fixture(scope="module")
def variants(load_bench):
    return load_bench("variants")


@pytest.mark.parametrize("name", ["decode_variants", "gemm_class_variants", "sgemm_variants"])
def test_every_bench_refuses_an_unknown_variant(load_bench, tmp_path, name):
    pytest.importorskip("tilelang_cuda")
    bench = load_bench(name)
    first = next(iter(bench.VARIANTS))
    with pytest.raises(SystemExit, match=f"unknown variants \\['nope'\\]; known: {first}, "):
        bench.main(["--export", str(tmp_path), "--only", f"{first},nope"])
    assert not any(tmp_path.iterdir())  # refused before anything was compiled


def test_command_line(variants, monkeypatch, tmp_path, capsys):
    """Export for cuda/ARCH, then run with TVM kept out of the process; --only becomes a list;
    with neither --export nor --run the command line says what to give."""
    calls = []
    monkeypatch.setitem(sys.modules, "tvm", sys.modules.get("tvm"))  # restored after the test

    def export(out, target, only):
        calls.append(("export", out, target, only))

    def run(out, rounds, only, *timing):
        calls.append(("run", out, rounds, only, timing, sys.modules["tvm"]))
        return 7

    argv = ["--export", str(tmp_path), "--run", str(tmp_path), "--only", "b,,a", "--rep", "5", "--arch", "sm_80"]
    assert variants.main("doc", ["a", "b"], export, run, argv, rounds=3, warmup=10, rep=30) == 7
    assert calls == [("export", tmp_path, "cuda/sm_80", ["b", "a"]), ("run", tmp_path, 3, ["b", "a"], (10, 5), None)]
    calls.clear()
    assert variants.main("doc", ["a"], export, run, ["--run", str(tmp_path)]) == 7
    assert calls == [("run", tmp_path, 5, None, (), None)]  # no --warmup/--rep: the bench's timer takes none
    with pytest.raises(SystemExit) as exc:
        variants.main("doc", ["a"], export, run, ["--rep", "5"])
    assert exc.value.code == 2 and "unrecognized arguments: --rep" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        variants.main("doc", ["a"], export, run, [])
    assert exc.value.code == 2 and "give --export DIR and/or --run DIR" in capsys.readouterr().err


def test_manifest(variants, tmp_path):
    manifest = {"target": "cuda/sm_90a", "variants": [{"name": "table", "changes": {}}]}
    with pytest.raises(SystemExit, match="no manifest.json there; export the variants first with --export"):
        variants.read_manifest(tmp_path)
    variants.write_manifest(tmp_path, manifest)
    assert variants.read_manifest(tmp_path) == manifest and (tmp_path / variants.MANIFEST).is_file()


def test_check_compare_and_poison(variants):
    torch = pytest.importorskip("torch")
    ref = torch.tensor([1.0, -2.0, 100.0])
    assert variants.compare(torch, ref.half(), ref, 1e-3, 1e-2) == (True, 0.0)
    good, err = variants.compare(torch, ref + torch.tensor([0.0, 0.0, 1.5]), ref, 1e-3, 1e-2)
    assert not good and err == 1.5  # beyond 1e-3 + 1e-2 * 100
    assert not variants.compare(torch, torch.tensor([1.0, float("nan"), 100.0]), ref, 1e-3, 1e-2)[0]
    # the checked call: an element the call leaves unwritten is NaN, though the reference is 0 there
    out, zeros = torch.zeros(5), torch.zeros(5)
    assert variants.check(torch, lambda: out.copy_(zeros), out, zeros, [], "cpu", 0.0, 0.0) == (True, 0.0)
    assert not variants.check(torch, lambda: out[:4].copy_(zeros[:4]), out, zeros, [], "cpu", 0.0, 0.0)[0]
    spaces = variants.allocate(torch, [[[2, 3], "float32"], [[4], "float16"]], "cpu", float("nan"))
    assert [(tuple(s.shape), s.dtype) for s in spaces] == [((2, 3), torch.float32), ((4,), torch.float16)]
    assert all(s.isnan().all() for s in spaces)


def test_alternate_pairs_the_rounds(variants):
    """Each call once a round in order; the ratio is the median of the per-round ratios (1
    here), not the ratio of the medians (1.5)."""
    times = {"ours": [1.0, 4.0, 2.0], "torch": [3.0, 4.0, 2.0], "alone": [9.0, 9.0, 9.0]}
    order = []

    def time_one(name):
        order.append(name)
        return times[name][sum(n == name for n in order) - 1]

    med, paired = variants.alternate({name: name for name in times}, 3, time_one, "torch")
    assert order == ["ours", "torch", "alone"] * 3
    assert med == {"ours": 2.0, "torch": 3.0, "alone": 9.0} and paired == 1.0
    assert variants.wall_clock_ms(lambda: None) >= 0.0


def test_table(variants, capsys):
    variants.print_table(["variant", "changes", "ratio"],
                         [["table", variants.describe({}), "**1.00**"], ["s3", variants.describe({"stages": 3,
                                                                                                 "x": True}), 2]])
    assert capsys.readouterr().out == ("\n| variant | changes | ratio |\n|---|---|---|\n| table | - | **1.00** |\n"
                                       "| s3 | stages=3, x=True | 2 |\n")
