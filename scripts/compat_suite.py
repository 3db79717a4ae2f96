"""The section of docs/compat.md on TileLang's own test suite (`testing/python`), and the reviewed
table that classifies the files that do not collect (`SUITE_REASONS`).

`scripts/compat_doc.py --suite-json suite.json` calls `suite_section` with the record
`scripts/tilelang_suite.py` wrote. A file that fails to collect is, by the first matching entry
of `SUITE_REASONS` (matched against "path :: error"):
- **other hardware**: a folder or feature for hardware no target of ours declares (AMD's and
  Apple's folders are their backends', WebGPU has none here, sm_100+ Blackwell features), which
  the acceptance leaves out, as TileLang itself skips them on an H200;
- **not applicable by design**: it imports TileLang's internal API (its C++ passes by name, its
  FFI, its per-execution-backend host wrappers, its pass-pipeline debugging tools), which has no
  meaning in tilelang-core's design; one reason each;
- **not yet**: everything else, with the error as pytest printed it.
A file that collects may still test only TileLang's internals (its passes by name on
hand-written TIR, its debugging tools' private helpers): `COLLECTED_REASONS` lists those, by
path, and the section counts their collected tests against all collected tests (the
acceptance keeps them at 10% at most). A file is listed there only when every test of it
goes through such internals; a file where some tests do keeps its failures in the run.
Each entry is a judgement: review it when TileLang or tilelang-core moves.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["SUITE_BEGIN", "SUITE_END", "SUITE_REASONS", "COLLECTED_REASONS", "SuiteReason", "classify_file",
           "classify_collected", "not_applicable_share", "suite_section", "existing_suite_section",
           "OTHER_HARDWARE", "NOT_APPLICABLE", "NOT_YET"]

SUITE_BEGIN = "<!-- suite:begin -->"
SUITE_END = "<!-- suite:end -->"
OTHER_HARDWARE, NOT_APPLICABLE, NOT_YET = "other hardware", "not applicable", "not yet"


@dataclass(frozen=True)
class SuiteReason:
    status: str
    why: str
    pattern: str  # searched in "path :: error"

    def matches(self, path: str, error: str) -> bool:
        return re.search(self.pattern, f"{path} :: {error}") is not None


_PASS_NAMES = (r"DecoupleTypeCast|LowerAccessPtr|LayoutInference|PipelinePlanning|ClusterPlanning|"
               r"HoistBroadcastValues|LowerOpaqueBlock")

# First match wins.
SUITE_REASONS: list[SuiteReason] = [
    SuiteReason(OTHER_HARDWARE, "AMD, Apple and WebGPU folders: their hardware is not on the device the "
                "acceptance runs on (and WebGPU has no backend here)", r"^(amd|metal|webgpu)/"),
    SuiteReason(OTHER_HARDWARE, "Blackwell (sm_100/sm_120) features: tcgen05 MMA, tensor memory, "
                "block-scaled MMA; no target of tilelang-core declares them",
                r"tcgen05|sm100|sm_100|sm120|tmem|nvf4_mma_block_scale|mma_sm100"),
    SuiteReason(NOT_APPLICABLE, "TileLang's C++ FFI bindings (`tilelang._ffi_api`: its passes, layouts "
                "and analyses registered by C++ name); tilelang-core has no C++ library, its passes are "
                "Python over apache-tvm", r"_ffi_api"),
    SuiteReason(NOT_APPLICABLE, "tests of TileLang's individual passes by name (before/after IR of "
                "LayoutInference, PipelinePlanning, ClusterPlanning, LowerOpaqueBlock, ...) and of its "
                "pass pipeline modules (`tilelang.cuda.pipeline`, `tilelang.backend.pass_pipeline`): "
                "tilelang-core's pipeline (tilelang_core.transform) has its own passes at other "
                "boundaries, tested in tests/transform",
                rf"^transform/test_tilelang_transform_(cluster_planning|fuse_mbarrier_arrive_expect_tx|"
                rf"hoist_broadcast_values|inject_fence_proxy|layout_inference|pipeline_planning|"
                rf"lower_hopper_intrin|lexical_alloc_scope|lower_shared_barrier|"
                rf"plan_update_buffer_allocation_location|decouple_type_cast)\.py|"
                rf"cannot import name '({_PASS_NAMES})'|tilelang\.cuda\.pipeline|pass_pipeline"),
    SuiteReason(NOT_APPLICABLE, "TileLang's tools for its own pass pipeline and binaries (pass events "
                "and timing, lowering traces, pass diffs, the pass visualizer, the pass-profile threshold, "
                "`tilelang.tools`: its IR Analyzer and CUDA binary inspector): they observe TileLang's C++ "
                "passes and cache files, which tilelang-core does not have",
                r"tilelang\.instrumentation|tilelang\.tools|pass_diff|resolve_pass_profile_threshold_ms|^tools/"),
    SuiteReason(NOT_APPLICABLE, "TileLang's host wrappers per execution backend (`tilelang.jit.adapter`: "
                "tvm_ffi, cython, NVRTC, ctypes, CuTeDSL; `tilelang.jit.abi`; its NVRTC host code "
                "extraction; the CuTeDSL target): each tilelang-core backend has one runtime (its "
                "`tilelang_runtime` hook) instead of interchangeable host wrappers",
                r"tilelang\.jit\.adapter|tilelang\.jit\.abi|extrac_params|cutedsl|tilelang\.cuda\.target"),
    SuiteReason(NOT_APPLICABLE, "TileLang's cache internals (its per-backend dispatch map, CUDA binary "
                "cache, atomic-save file layout, the autotuner's best-config file and grouped compile "
                "units): tilelang-core's kernel cache (tilelang_core.jit.cache) has its own layout and "
                "is tested in tests/jit",
                r"_dispatch_map|CUDABinaryCache|cloudpickle|BEST_CONFIG_PATH|grouped_compile"),
    SuiteReason(NOT_APPLICABLE, "TileLang's in-tree backend registry (`register_backend`, "
                "`BackendContext`, `get_backend`): tilelang-core's backends are separate packages "
                "found through entry points (`tilelang backends`)",
                r"cannot import name '(BackendContext|get_backend|create_backend_context|list_backends|"
                r"register_backend)'"),
    SuiteReason(NOT_APPLICABLE, "TileLang's tile-op classes and their dispatch registry "
                "(`tilelang.tileop`, `tilelang.cuda.op.gemm`: which GEMM class serves which arch): "
                "tilelang-core dispatches a tile op through its backends' `tilelang_lower_tile_op` hook",
                r"^cuda/test_cuda_mma_sm75_dispatch\.py|tilelang\.tileop|tilelang\.cuda\.op\b"),
    SuiteReason(NOT_APPLICABLE, "TileLang's own frontend machinery (`tilelang.language.eager.ast`: the AST "
                "rewriter `mutate` and `BaseBuilder` of its eager frontend) and its per-vendor language facades "
                "(`tilelang.language.common`, `tilelang.cuda.language` as `T`, the export classification "
                "tables of `tilelang.language.tir.exports`): tilelang-core parses kernels with TVMScript's "
                "parser and has one `T`, to which backends add names through `tilelang_language_names`",
                r"tilelang\.language\.eager\.ast|^language/test_tilelang_language_dialect\.py"),
    SuiteReason(NOT_APPLICABLE, "a private helper of TileLang's own implementation (a leading "
                "underscore: `_bench_with_cupti`, `_normalize_threads`), not API",
                r"cannot import name '_(bench_with_cupti|normalize_threads)'"),
]


def classify_file(path: str, error: str) -> tuple[str, str]:
    """(status, reason) of a file that failed to collect."""
    for reason in SUITE_REASONS:
        if reason.matches(path, error):
            return reason.status, reason.why
    return NOT_YET, error


_TILELANG_ONLY_PASSES = (r"verify_buffer_init|verify_parallel_loop|"
                         r"legalize_safe_memory_access|legalize_vectorized_loop|loop_unswitching|if_stmt_binding|"
                         r"let_inline|lower_device_kernel_launch|lower_tile_op|split_host_device")

# Files that collect but whose every test goes through TileLang's internals (matched against
# "path :: "). First match wins.
COLLECTED_REASONS: list[SuiteReason] = [
    SuiteReason(OTHER_HARDWARE, "Blackwell (sm_100) tensor memory: its arena packing and shared-to-tmem "
                "lowering passes; no target of tilelang-core declares tensor memory",
                r"^transform/test_tilelang_transform_(tmem_arena_packing|lower_shared_tmem)\.py"),
    SuiteReason(NOT_APPLICABLE, "TileLang's warp-specialization passes by name (`tilelang.cuda.transform."
                "MaterializeWSSchedule`, `ProducerConsumerWarpSpecialized`, after its `MaterializeKernelLaunch`) "
                "on hand-written TIR: tilelang-core's CUDA backend specializes warps in its own lowering, tested "
                "in tests/cuda/test_cuda_warp_specialize.py",
                r"^transform/test_tilelang_transform_(materialize_ws_schedule|producer_consumer_ws|"
                r"producer_consumer_ws_persistent)\.py"),
    SuiteReason(NOT_APPLICABLE, "TileLang's own passes by name with no TVM counterpart (`VerifyBufferInit`, "
                "`VerifyParallelLoop`, `LegalizeSafeMemoryAccess`, `LoopUnswitching`, "
                "`IfStmtBinding`/`MergeIfStmt`, `LetInline`, `LowerTileOp`, `MaterializeKernelLaunch`, ...) applied "
                "to hand-written TIR of TileLang's TVM fork: tilelang-core's pipeline checks, guards and lowers "
                "tile IR with its own passes at other boundaries (`guard_memory_access` gives "
                "LegalizeSafeMemoryAccess's meaning on tile IR before lowering; tests/transform)",
                rf"^transform/test_tilelang_transform_({_TILELANG_ONLY_PASSES})\.py|"
                r"^issue/test_tilelang_issue_merge_if\.py"),
    SuiteReason(NOT_APPLICABLE, "TileLang's pass-diff tool (`tilelang.utils.pass_diff` and its private "
                "helpers `_compute_diff`, `_split_rows_by_hunk`, `_generate_html`, its lowering hook): it "
                "observes TileLang's pass pipeline, which tilelang-core does not have",
                r"^debug/test_pass_diff\.py"),
]


def classify_collected(path: str) -> tuple[str, str] | None:
    """(status, reason) of a file that collects but tests only TileLang's internals; None for
    a file whose tests are the measure."""
    for reason in COLLECTED_REASONS:
        if reason.matches(path, ""):
            return reason.status, reason.why
    return None


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def _portable(error: str) -> str:
    """The error without the absolute paths of the machine that measured it."""
    return re.sub(r" \(/[^)]*\)", "", error)


def _collect_rows(collect: dict) -> tuple[list[str], dict[str, list[tuple[str, str, str]]], dict[str, int],
                                          dict[str, list[tuple[str, str, int]]]]:
    lines = ["| folder | tests collected | files not collected | other hardware | not applicable | not yet | "
             "collected tests: not applicable | collected tests: other hardware |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    by_status: dict[str, list[tuple[str, str, str]]] = {OTHER_HARDWARE: [], NOT_APPLICABLE: [], NOT_YET: []}
    collected_out: dict[str, list[tuple[str, str, int]]] = {OTHER_HARDWARE: [], NOT_APPLICABLE: []}
    totals = {"collected": 0, "errors": 0, OTHER_HARDWARE: 0, NOT_APPLICABLE: 0, NOT_YET: 0,
              "tests " + NOT_APPLICABLE: 0, "tests " + OTHER_HARDWARE: 0}
    for folder, row in collect["folders"].items():
        counts = {OTHER_HARDWARE: 0, NOT_APPLICABLE: 0, NOT_YET: 0}
        for path, error in row["collection_errors"].items():
            status, why = classify_file(path, error)
            counts[status] += 1
            by_status[status].append((path, why, error))
        tests_out = {OTHER_HARDWARE: 0, NOT_APPLICABLE: 0}
        for path, n in row.get("files", {}).items():
            listed = classify_collected(path)
            if listed:
                tests_out[listed[0]] += n
                collected_out[listed[0]].append((path, listed[1], n))
        errors = len(row["collection_errors"])
        totals["collected"] += row["collected"]
        totals["errors"] += errors
        for status, n in counts.items():
            totals[status] += n
        for status, n in tests_out.items():
            totals["tests " + status] += n
        lines.append(f"| `{folder}` | {row['collected']} | {errors} | {counts[OTHER_HARDWARE]} | "
                     f"{counts[NOT_APPLICABLE]} | {counts[NOT_YET]} | {tests_out[NOT_APPLICABLE]} | "
                     f"{tests_out[OTHER_HARDWARE]} |")
    lines.append(f"| **all** | **{totals['collected']}** | **{totals['errors']}** | {totals[OTHER_HARDWARE]} | "
                 f"{totals[NOT_APPLICABLE]} | **{totals[NOT_YET]}** | **{totals['tests ' + NOT_APPLICABLE]}** | "
                 f"{totals['tests ' + OTHER_HARDWARE]} |")
    return lines, by_status, totals, collected_out


def not_applicable_share(collect: dict) -> tuple[int, int]:
    """(collected tests in files listed not applicable by design, all collected tests)."""
    _, _, totals, _ = _collect_rows(collect)
    return totals["tests " + NOT_APPLICABLE], totals["collected"]


def _run_rows(run: dict) -> list[str]:
    lines = ["| folder | passed | failed | skipped | errors |", "|---|---:|---:|---:|---:|"]
    totals = dict.fromkeys(("passed", "failed", "skipped", "errors"), 0)
    for folder, row in run["folders"].items():
        lines.append(f"| `{folder}` | {row['passed']} | {row['failed']} | {row['skipped']} | {row['errors']} |")
        for key in totals:
            totals[key] += row[key]
    lines.append(f"| **all** | **{totals['passed']}** | {totals['failed']} | {totals['skipped']} | "
                 f"{totals['errors']} |")
    return lines


def suite_section(data: dict | None, previous: str | None = None) -> str:
    """The section: from `data` (the JSON of `tilelang_suite.py`), else `previous`, else a note."""
    title = "## TileLang's test suite on tilelang-core"
    if data is None:
        return previous or (f"{SUITE_BEGIN}\n{title}\n\nNot measured yet: run `scripts/tilelang_suite.py "
                            f"collect --testing PATH --json suite.json` and regenerate with `--suite-json "
                            f"suite.json`.\n{SUITE_END}")
    out = [SUITE_BEGIN, title, ""]
    collect = data.get("collect")
    if collect:
        rows, by_status, totals, collected_out = _collect_rows(collect)
        share = totals["tests " + NOT_APPLICABLE] / totals["collected"] if totals["collected"] else 0.0
        out += [f"Collection of TileLang's `testing/python` through `tilelang run -m pytest --co` on "
                f"{collect.get('device', 'an unknown machine')}, {collect.get('date', '')} "
                f"(`scripts/tilelang_suite.py collect`): {collect.get('summary', '')}. A file that does not "
                f"collect is classified by the reviewed table `SUITE_REASONS` in `scripts/compat_suite.py`.",
                "", *rows, "",
                f"Collected tests in files listed not applicable by design (`COLLECTED_REASONS`): "
                f"{totals['tests ' + NOT_APPLICABLE]} of {totals['collected']} ({share:.1%}). Files that do not "
                f"collect add no collected tests to either side.", ""]
        for status, heading in ((NOT_APPLICABLE, "Collected, not applicable by design"),
                                (OTHER_HARDWARE, "Collected, other hardware")):
            groups_n: dict[str, list[str]] = {}
            for path, why, n in sorted(collected_out[status]):
                groups_n.setdefault(why, []).append(f"`{path}` ({n})")
            if groups_n:
                count = sum(n for _, _, n in collected_out[status])
                out += [f"### {heading} ({len(collected_out[status])} files, {count} tests)", "",
                        "| reason | files (tests) |", "|---|---|"]
                out += [f"| {_cell(why)} | {', '.join(files)} |" for why, files in groups_n.items()]
                out.append("")
        for status, heading in ((NOT_APPLICABLE, "Not applicable by design"), (OTHER_HARDWARE, "Other hardware")):
            groups: dict[str, list[str]] = {}
            for path, why, _ in sorted(by_status[status]):
                groups.setdefault(why, []).append(path)
            if groups:
                out += [f"### {heading} ({len(by_status[status])} files)", "", "| reason | files |", "|---|---|"]
                out += [f"| {_cell(why)} | {', '.join(f'`{p}`' for p in paths)} |" for why, paths in groups.items()]
                out.append("")
        if by_status[NOT_YET]:
            out += [f"### Not yet ({len(by_status[NOT_YET])} files)", "", "| file | error |", "|---|---|"]
            out += [f"| `{path}` | {_cell(_portable(error))} |" for path, _, error in sorted(by_status[NOT_YET])]
            out.append("")
    run = data.get("run")
    if run:
        out += [f"Run on {run.get('device', 'an unknown device')}, {run.get('date', '')} "
                f"(`scripts/tilelang_suite.py run`, pytest arguments `{' '.join(run.get('args', []))}`): "
                f"{run.get('summary', '')}", "", *_run_rows(run), ""]
    out.append(SUITE_END)
    return "\n".join(out)


def existing_suite_section(document: str) -> str | None:
    start, end = document.find(SUITE_BEGIN), document.find(SUITE_END)
    return document[start:end + len(SUITE_END)] if 0 <= start < end else None
