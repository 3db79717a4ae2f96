"""The suite's judgement on the CPU backend: a wrong kernel FAILs, an unwritten element is
caught by the poison, strict xfails turn into XFAIL/XPASS, a missing capability is N/A, a
declared capability that does not work fails its probe, and evidence levels stay apart."""
from __future__ import annotations

import pytest

from tilelang_core import language as T
from tilelang_conformance.case import Arg, Case, Raises, Spec, registry
from tilelang_conformance.evaluate import evaluate
from tilelang_conformance.probes import cases_for, claims_for
from tilelang_conformance.result import FAIL, NA, PASS, XFAIL, XPASS

N = 100


def half_writer(n: int):
    """Writes only the first half of C: the rest keeps the poison."""

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(n // 2):
                C[i] = A[i]

    return main


def doubler(n: int):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(n):
                C[i] = A[i] * 2.0

    return main


def _case(name, make, needs=("float32",), **kwargs) -> Case:
    return Case(name, "test", needs, lambda target: make(), **kwargs)


def _args():
    return [Arg("A", (N,), "float32"), Arg("C", (N,), "float32", "out")]


@pytest.fixture(scope="module")
def cpu():
    from tilelang_core import get_plugin_manager

    from tilelang_conformance.levels import available_level

    target = get_plugin_manager().parse_target("cpu")
    if available_level(target)[0] != "run":
        pytest.skip("the CPU backend cannot run kernels here (no C compiler)")
    return target


def test_correct_kernel_passes_at_run(cpu):
    result = evaluate(_case("t.ok", lambda: Spec(doubler(N), _args(), lambda A: {"C": 2 * A})), cpu, "run", 1)
    assert (result.outcome, result.level) == (PASS, "run"), result.detail


def test_wrong_reference_fails_with_the_first_bad_element(cpu):
    result = evaluate(_case("t.wrong", lambda: Spec(doubler(N), _args(), lambda A: {"C": 2 * A + 1e-3})),
                      cpu, "run", 1)
    assert (result.outcome, result.level, result.stage) == (FAIL, "run", "check")
    assert f"C: {N}/{N} elements off" in result.detail and "first at [0]" in result.detail


def test_unwritten_elements_are_caught_by_the_poison(cpu):
    result = evaluate(_case("t.half", lambda: Spec(half_writer(N), _args(), lambda A: {"C": A})), cpu, "run", 1)
    assert result.outcome == FAIL
    assert f"{N // 2}/{N} elements off" in result.detail
    assert f"{N // 2} still hold the poison" in result.detail


def test_inputs_are_fresh_nonzero_and_seeded(cpu):
    seen = []

    def reference(A):
        seen.append(A.copy())
        return {"C": 2 * A}

    case = _case("t.seed", lambda: Spec(doubler(N), _args(), reference))
    for seed in (7, 7, 8):
        evaluate(case, cpu, "run", seed)
    assert (seen[0] == seen[1]).all() and not (seen[0] == seen[2]).all()
    assert (seen[0] != 0).all() and len(set(seen[0].tolist())) > N // 2


def test_strict_expectations(cpu):
    good = _case("t.good", lambda: Spec(doubler(N), _args(), lambda A: {"C": 2 * A}))
    bad = _case("t.bad", lambda: Spec(doubler(N), _args(), lambda A: {"C": A}))
    assert evaluate(bad, cpu, "run", 1, {"t.b*": "known gap"}).outcome == XFAIL
    xpass = evaluate(good, cpu, "run", 1, {"t.good": "known gap"})
    assert xpass.outcome == XPASS and xpass.failing and "remove the expectation" in xpass.detail
    # an expectation limited to another level does not apply
    assert evaluate(bad, cpu, "run", 1, {"t.bad@compile": "only at compile"}).outcome == FAIL


def test_missing_capability_is_na_without_evidence(cpu):
    result = evaluate(_case("t.na", lambda: Spec(doubler(N), _args(), lambda A: {"C": 2 * A}),
                            needs=("float32", "no_such_capability")), cpu, "run", 1)
    assert (result.outcome, result.level) == (NA, None)
    assert "does not declare no_such_capability" in result.detail


def test_levels_are_named_not_merged(cpu):
    case = _case("t.levels", lambda: Spec(doubler(N), _args(), lambda A: {"C": A}))  # wrong at run only
    assert evaluate(case, cpu, "codegen", 1).level == "codegen"
    assert (evaluate(case, cpu, "compile", 1).outcome, evaluate(case, cpu, "compile", 1).level) == (PASS, "compile")
    assert evaluate(case, cpu, "run", 1).outcome == FAIL
    call = registry()["errors.call_dtype"]
    assert evaluate(call, cpu, "compile", 1).outcome == NA
    assert evaluate(call, cpu, "run", 1).outcome == PASS


def test_bad_input_case_fails_when_nothing_is_raised(cpu):
    quiet = _case("t.quiet", lambda: Spec(doubler(N), raises=Raises(("ValueError",), "never", "compile")))
    result = evaluate(quiet, cpu, "run", 1)
    assert result.outcome == FAIL and "raised nothing" in result.detail
    assert result.level == "compile"  # the check never went past the toolchain


def test_a_declared_capability_that_does_not_work_fails_its_probe(cpu):
    """Declare float8_e4m3fn on the CPU, whose code generator has no float8 type: the claim
    probe must fail, not pass and not be N/A."""
    from tilelang_core import Target

    caps = cpu.capabilities
    claimed = Target(cpu.kind, cpu.arch, caps.refine(dtypes=caps.dtypes + ("float8_e4m3fn",)))
    cases = {c.name: c for c in cases_for(claimed, registry().values())}
    result = evaluate(cases["elementwise.float8_e4m3fn"], claimed, "run", 1)
    assert result.outcome == FAIL, result.detail
    claim = {c.capability: c for c in claims_for(claimed.capabilities, cases.values())}["float8_e4m3fn"]
    assert claim.cases == ("elementwise.float8_e4m3fn",)


def test_declared_capabilities_outside_the_static_list_get_generated_probes(cpu):
    from tilelang_core import Target

    caps = cpu.capabilities
    plain = Target(cpu.kind, cpu.arch, caps.refine(dtypes=tuple(d for d in caps.dtypes if d != "uint16"),
                                                   atomics=tuple(a for a in caps.atomics if a != "atomic_max.float64")))
    claimed = Target(cpu.kind, cpu.arch, caps.refine(dtypes=plain.capabilities.dtypes + ("uint16",),
                                                     atomics=plain.capabilities.atomics + ("atomic_max.float64",)))
    names = {c.name for c in cases_for(claimed, registry().values())}
    assert {"elementwise.uint16", "atomic.max.float64"} <= names
    assert not {"elementwise.uint16", "atomic.max.float64"} & {c.name for c in cases_for(plain, registry().values())}
    assert evaluate({c.name: c for c in cases_for(claimed, registry().values())}["atomic.max.float64"],
                    claimed, "run", 3).outcome == PASS


def test_a_dtype_without_host_arrays_is_na_at_run(cpu, monkeypatch):
    from tilelang_conformance import data

    monkeypatch.setattr(data, "numpy_dtype", lambda name: None if name == "bfloat16" else data.np.dtype(name))
    case = _case("t.bf16", lambda: Spec(doubler(N), _args(), lambda A: {"C": 2 * A}), needs=("float32", "bfloat16"))
    result = evaluate(case, cpu, "run", 1)
    assert result.outcome == NA and "no bfloat16 host arrays here" in result.detail and "ml_dtypes" in result.detail
    assert evaluate(case, cpu, "compile", 1).outcome == PASS  # compiling needs no host arrays
