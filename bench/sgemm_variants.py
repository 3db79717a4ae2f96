"""float32 GEMM at precision "highest" (FMA loops, no TF32) beside cuBLAS SGEMM on the GPU:
the gemm operator's FMA kernel (`tilelang_core.ops.gemm._gemm_fma_kernel`) in config variants.
Compile here, run there:

    # here (no GPU needed): compile each variant for sm_90a and export it (~0.15 MB each);
    # --nvrtc LIB / --nvcc PATH build each one again with that compiler (NAME_SIZE_nvrtcX.Y,
    # NAME_SIZE_nvccX.Y beside NAME_SIZE)
    .venv/bin/python bench/sgemm_variants.py --export build/sgemm_variants [--arch sm_90a] [--only a,b] \
        [--nvrtc build/nvrtc13.0/nvidia/cu13/lib] [--nvcc /usr/local/cuda-13.0/bin/nvcc]

    # on the GPU machine (torch + cuda-python; TVM not needed)
    python bench/sgemm_variants.py --run build/sgemm_variants [--rounds 3] [--only a,b]

The problem is C = A @ B, float32, A (M, K), B (K, N), square: every variant at 4096^3, the
ones in `AT_8192` at 8192^3 too (with `--only`, the named variants at both sizes). `table` is
the config `ops.gemm` runs at precision "highest" on the target today: two launches, the
first writing A as (K, M) into a workspace (`fma_pretranspose`: a 64 x 64 tile through
shared memory), the second the tile loop over it (16-wide K slabs in 2 stages, both tiles
K-major and copied 16 bytes per cp.async, fragments read one k ahead into double register
buffers (`fma_prefetch`) by 128 threads of 16 x 8 outputs, scalar stores,
`__launch_bounds__(128, 2)`, the K loop counted from 1). `no_pretranspose` is one launch whose
copy transposes A's tile on its way in (`fma_transpose_a`: one float per cp.async);
`no_prefetch` the 8 x 8 loop (256 threads, fragments of 4 k a refill); `kminor_a` that loop
with A's tile K-minor, as it arrives (the table before this work), and `before` that without
`fma_offset_loop` (the K loop counted from 0: what `bench/ops.py` ran at 0.75x on the H100,
built there by NVRTC 13.0). The others change one or two keys of `table`: the prefetch form's
thread tile, stages, rasterization, no register cap (`nolb`), the warp's arrangement
(`fma_lanes_n` threads along N), how a K-minor A tile avoids bank conflicts (16-byte skew
every 4 rows, XOR swizzle), the K slab, 16-byte stores of C, and `a_kmajor`: A handed over as
(K, M) (`trans_a=True`, beside cuBLAS on the same layout: the tile loop alone). `b_kminor*`
are the other problem `a @ b.T` (B as (N, K), `trans_b=True`, one launch and no prefetch
form: B's tile is K-minor): the table's config, without the register cap, and before. A
kernel of several launches is rebuilt by `--nvrtc` / `--nvcc` from its launches' sources
joined (one cubin holding every entry).

A variant's third field, when nonzero, makes it a probe, not what the language emits: its
CUDA source is rebuilt with `__launch_bounds__(threads, n)`. (The language now asks for that
itself, `fma_min_blocks`; no variant of the list is a probe today.)

The manifest records each export's compiler, threads, shared memory, registers, stack, and
the instruction mix of its main loop (FFMA, LDS.128, other LDS, SASS bytes; local memory)
where cuobjdump is found.

Why `--nvrtc` / `--nvcc`: the kernels are built here by NVRTC 13.5, but `bench/ops.py` compiles
on the H100 with that image's NVRTC 13.0, and the two releases build the same source
differently (the table's kernel before `fma_offset_loop`: 128 registers and an 18 KB loop from
13.5; 167 registers, or 128 with 32 bytes of stack under `__launch_bounds__(256, 2)`, and the
K loop unrolled 8 times into 142 KB from 13.0). `--nvrtc` takes another release's
libnvrtc.so.13 (13.0's from the wheel `nvidia-cuda-nvrtc==13.0.88`: `pip download --no-deps -d
DIR nvidia-cuda-nvrtc==13.0.88`, then `python -m zipfile -e DIR/*.whl DIR`; the library is in
DIR/nvidia/cu13/lib) and calls it with the backend's flags: it builds what the H100 builds
(the counts above, exactly). `--nvcc` runs the backend's `compiler="nvcc"` with that nvcc;
nvcc 13.0 is close to NVRTC 13.0, not the same (169 registers, 8 bytes of stack). The run
times every build side by side.

`--run` loads every export with `tilelang_core.load`, checks it on fresh random inputs (C
poisoned with NaN first; every element within the float32 bound 2 (K + 2) 2^-24 (|A| @ |B|)
of the float64 product), then times it beside `torch.matmul` with TF32 off
(`allow_tf32 = False`, precision "highest": cuBLAS SGEMM) in `--rounds` alternating rounds
(CUDA events) and prints TFLOP/s and cuBLAS time / ours (the median of per-round ratios).
Exit status: 0 when every variant matched, 1 otherwise, 2 without a GPU.
"""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/: the shared half, variants.py

import variants  # noqa: E402

SIZES = (4096, 8192)
# name -> (config changes over the table's config for the target, problem changes, probe:
# blocks per SM asked of ptxas through `__launch_bounds__(threads, blocks)`, or 0)
# `before`: the table's config before "fma_offset_loop" (NVRTC 13.0: the K loop unrolled 8 times,
# 128 registers with 32 bytes of stack; bench/ops.py on the H100 0.75x)
KMINOR = {"fma_transpose_a": False, "fma_pretranspose": False}  # A's tile K-minor, as it arrives (8 x 8, no prefetch)
IN_KERNEL = {"fma_pretranspose": False}  # A transposed by the tile loop's own copy (one float per cp.async)
BEFORE = {"fma_offset_loop": False, **KMINOR}
NO_PREFETCH = {"fma_prefetch": False}  # 8 x 8 per thread, 4 k of fragments a refill
ONE_BLOCK = {"fma_min_blocks": 0}  # no register cap: thread tiles of 8 x 16 need 255 registers
VARIANTS = {
    "table": ({}, {}, 0),
    "no_pretranspose": (IN_KERNEL, {}, 0),  # H100: 0.89-0.91x at 4096^3 (NVRTC 13.0)
    "no_prefetch": (NO_PREFETCH, {}, 0),
    "kminor_a": (KMINOR, {}, 0),  # 0.80x (13.0) / 0.85x (13.5) at 4096^3
    "before": (BEFORE, {}, 0),  # and the K loop from 0: 0.75x from 13.0
    "prefetch_t8x8": ({"fma_prefetch_thread_M": 8}, {}, 0),  # 256 threads
    "prefetch_t8x16": ({"fma_prefetch_thread_M": 8, "fma_prefetch_thread_N": 16}, {}, 0),
    "prefetch_s3": ({"fma_stages": 3}, {}, 0),
    "prefetch_panel8": ({"fma_panel": 8}, {}, 0),
    "nolb": ({**NO_PREFETCH, **ONE_BLOCK}, {}, 0),  # no __launch_bounds__ minimum
    "skew": ({"fma_skew": True, **KMINOR}, {}, 0),  # A's rows 4 apart in distinct bank groups (16-byte skew)
    "swizzle": ({"fma_swizzle_a": True, **KMINOR}, {}, 0),
    "lanes8": ({"fma_lanes_n": 8, **NO_PREFETCH}, {}, 0),  # warps of 4 x 8 threads: a 32 x 64 warp tile
    "lanes8_skew": ({"fma_lanes_n": 8, "fma_skew": True, **KMINOR}, {}, 0),
    "s3": ({"fma_stages": 3, **NO_PREFETCH}, {}, 0),
    "k8_s4": ({"fma_block_K": 8, "fma_stages": 4, **NO_PREFETCH}, {}, 0),
    "k32": ({"fma_block_K": 32, **NO_PREFETCH}, {}, 0),
    "vector_store": ({"fma_vector_store": True, **NO_PREFETCH}, {}, 0),
    "t16x8": ({"fma_thread_M": 16, **NO_PREFETCH}, {}, 0),  # 128 threads, fragments 4 k at a time
    "a_kmajor": ({}, {"trans_a": True}, 0),  # A handed over K-major: its tile arrives 16 bytes per cp.async
    "a_kmajor_no_prefetch": (NO_PREFETCH, {"trans_a": True}, 0),
    "b_kminor": ({}, {"trans_b": True}, 0),  # a @ b.T with b (N, K): another problem (no prefetch form)
    "b_kminor_nolb": (ONE_BLOCK, {"trans_b": True}, 0),  # 150 (13.5) or 228 (13.0) registers, no stack
    "b_kminor_before": (BEFORE, {"trans_b": True}, 0),
}
AT_8192 = ("table", "no_pretranspose", "kminor_a", "a_kmajor")
ROUNDS = 3
DEVICE = "cuda"  # where the inputs live (a CPU smoke test of this script sets "cpu")


def _time(torch, fn) -> float:
    from gemm import _time_ms  # bench/gemm.py: CUDA events, the median of 7 trials of 20 calls

    return _time_ms(torch, fn)


# ---------------------------------------------------------------------------- export


def problem_of(size: int, changes: dict | None = None) -> dict:
    return {"batch": 1, "M": size, "N": size, "K": size, "dtype": "float32", "trans_a": False, "trans_b": False,
            "bias": False, "activation": "none", "fma": True, **(changes or {})}


def variant_config(target, problem: dict, changes: dict) -> dict:
    """The table's config for `problem` on `target` (as `ops.gemm` resolves it) with `changes`."""
    from tilelang_core import ops
    from tilelang_core.ops.registry import resolve_config

    config, _ = resolve_config(ops.get("gemm"), target, problem)
    return {**config, **changes}


def sass_summary(binary: bytes) -> dict:
    """Registers, local memory and the instruction mix of the longest loop of a cubin (empty
    where cuobjdump is not found)."""
    import subprocess

    from tilelang_cuda import compile as cuda_compile

    try:
        sass = cuda_compile.disassemble(binary)
    except RuntimeError:
        return {}
    summary = {"registers": None}
    tool = cuda_compile._find_tool("cuobjdump")
    if tool:
        import tempfile

        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(binary)
            f.flush()
            usage = subprocess.run([tool, "-res-usage", f.name], capture_output=True, text=True).stdout
        found = re.search(r"REG:(\d+) STACK:(\d+)", usage)
        if found:
            summary.update(registers=int(found.group(1)), stack=int(found.group(2)))
    lines = [(int(m.group(1), 16), m.group(2)) for m in
             (re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", line) for line in sass.splitlines()) if m]
    loops = []  # (start, end) of each backward branch
    for at, text in lines:
        target = re.search(r"BRA (0x[0-9a-f]+)", text)
        if target and int(target.group(1), 16) < at and text.startswith("@"):
            loops.append((int(target.group(1), 16), at))
    if loops:
        start, end = max(loops, key=lambda span: span[1] - span[0])
        body = [re.sub(r"^@!?U?P\w+\s+", "", text).split()[0] for at, text in lines
                if start <= at <= end and not text.startswith("@!PT")]  # @!PT: never executed (padding)
        summary["loop"] = {"instructions": len(body), "FFMA": body.count("FFMA"), "LDS.128": body.count("LDS.128"),
                           "LDS other": sum(op.startswith("LDS") and op != "LDS.128" for op in body),
                           "bytes": (end - start + 16)}
    summary["local_memory_ops"] = sum(text.split()[0].startswith(("LDL", "STL")) for _, text in lines)
    return summary


def probe_source(kernel, blocks: int) -> str:
    """The kernel's source with `__launch_bounds__(threads, blocks)`: what a backend option for
    a register cap would give."""
    source, count = re.subn(r"__launch_bounds__\((\d+)(?:, \d+)?\)", lambda m: f"__launch_bounds__({m.group(1)}, {blocks})",
                            kernel.get_kernel_source(), count=1)
    if count != 1:
        raise SystemExit("probe: the kernel source has no __launch_bounds__(threads) to extend")
    return source


def nvcc_compiler(nvcc: str, arch: str):
    """(source -> cubin, its name "nvcc 13.0.88") for the nvcc at `nvcc` (a path, or a name on
    PATH): the CUDA backend's `compiler="nvcc"`, after checking that it runs that nvcc (its
    lookup tries NVIDIA wheels and CUDA_PATH / CUDA_HOME first)."""
    import os
    import shutil

    from tilelang_cuda import compile as cuda_compile

    path = shutil.which(nvcc)
    if path is None:
        raise SystemExit(f"--nvcc {nvcc}: no such executable")
    found = cuda_compile._find_tool("nvcc")
    if found is None or not os.path.samefile(found, path):
        raise SystemExit(f"--nvcc {nvcc}: the CUDA backend's compiler=\"nvcc\" runs {found} instead (its lookup "
                         f"tries NVIDIA wheels and CUDA_PATH / CUDA_HOME before PATH); start the export with "
                         f"CUDA_PATH={Path(path).resolve().parent.parent} and no nvcc wheel installed, or pass "
                         f"--nvcc {found}")
    return (lambda source: cuda_compile.compile_cuda(source, arch, {"compiler": "nvcc"}),
            cuda_compile.toolchain_version("nvcc"))


def nvrtc_compiler(library: str, arch: str):
    """(source -> cubin, its name "nvrtc 13.0") for the NVRTC shared library at `library`
    (libnvrtc.so.13 of another release, e.g. from the wheel nvidia-cuda-nvrtc==13.0.88, or
    the directory holding it beside its libnvrtc-builtins), called through ctypes with the
    flags of the CUDA backend's NVRTC path (`--gpu-architecture`, `-default-device`,
    `-std=c++17`, `-lineinfo`, its include directories): what the backend builds where that
    release is the one installed, as on the H100 image."""
    import ctypes

    from tilelang_cuda.compile import include_dirs, toolchain_version

    # the backend's own NVRTC is loaded (by its name, libnvrtc.so.13) before this one is (by
    # its path): loaded first, this one would answer for that name in the backend too
    backend = toolchain_version()
    path = Path(library)
    if path.is_dir():
        path = path / "libnvrtc.so.13"
    if not path.is_file():
        raise SystemExit(f"--nvrtc {library}: no NVRTC library there (give libnvrtc.so.13 or its directory)")
    for builtins in sorted(path.parent.glob("libnvrtc-builtins.so.*.*")):  # libnvrtc loads it by name
        ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(str(path))
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    name = f"nvrtc {major.value}.{minor.value}"
    if toolchain_version() != backend:
        raise SystemExit(f"--nvrtc {library}: loading it changed the CUDA backend's NVRTC ({backend} -> "
                         f"{toolchain_version()}); run the export in a fresh process")
    flags = [f"--gpu-architecture={arch}", "-default-device", "-std=c++17", "-lineinfo",
             *(f"-I{d}" for d in include_dirs())]

    def build(source: str) -> bytes:
        program, size = ctypes.c_void_p(), ctypes.c_size_t()
        if lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"kernel.cu", 0, None, None):
            raise RuntimeError(f"{name}: nvrtcCreateProgram failed")
        try:
            encoded = [f.encode() for f in flags]
            failed = lib.nvrtcCompileProgram(program, len(encoded), (ctypes.c_char_p * len(encoded))(*encoded))
            if failed:
                lib.nvrtcGetProgramLogSize(program, ctypes.byref(size))
                log = ctypes.create_string_buffer(size.value)
                lib.nvrtcGetProgramLog(program, log)
                raise RuntimeError(f"{name} failed on the kernel (error {failed}):\n{log.value.decode()[-4000:]}")
            lib.nvrtcGetCUBINSize(program, ctypes.byref(size))
            cubin = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetCUBIN(program, cubin)
            return cubin.raw
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(program))

    return build, name


def export(out: Path, target: str, only: list[str] | None = None, sizes: tuple = SIZES,
           nvcc: str | None = None, nvrtc: str | None = None) -> list[dict]:
    """Compile the variants (`only`: those names) for `target` (e.g. "cuda/sm_90a") and export
    each to out/NAME_SIZE; on a CUDA target, build each again with the nvcc at `nvcc` into
    out/NAME_SIZE_nvccX.Y and with the NVRTC library at `nvrtc` into out/NAME_SIZE_nvrtcX.Y.
    Write the manifest. :returns: the manifest's entries."""
    import tilelang_core
    from tilelang_core import ops
    from tilelang_core.plugin import get_plugin_manager

    variants.check_only(only, VARIANTS)
    target = get_plugin_manager().parse_target(target)
    # (source -> cubin, or None: the kernel as compiled; label suffix; compiler)
    builds = [(None, "", None)]
    if target.kind == "cuda":
        from tilelang_cuda.compile import compile_cuda, toolchain_version

        builds = [(None, "", toolchain_version())]
        for path, make in ((nvcc, nvcc_compiler), (nvrtc, nvrtc_compiler)):
            if path:
                compile_with, compiler = make(path, target.arch)  # "nvcc 13.0.88": labels end in _nvcc13.0
                kind, version = compiler.split()
                builds.append((compile_with, f"_{kind}" + ".".join(version.split(".")[:2]), compiler))
    elif nvcc or nvrtc:
        raise SystemExit(f"--nvcc and --nvrtc build CUDA kernels; the target is {target}")
    build = ops.get("gemm").kernels["tiled"]
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for size in sizes:
        for name, (changes, problem_changes, blocks) in VARIANTS.items():
            if (only and name not in only) or (size != sizes[0] and name not in AT_8192 and not only):
                continue
            problem = problem_of(size, problem_changes)
            config = variant_config(target, problem, changes)
            kernel = tilelang_core.compile(build(problem, config), target=target)  # C passed in: poisoned
            for compile_with, suffix, compiler in builds:
                start = time.perf_counter()
                label = f"{name}_{size}{suffix}"
                kernel.export(out / label)
                if blocks or compile_with:  # rebuilt from the (probe's) source
                    source = probe_source(kernel, blocks) if blocks else kernel.get_kernel_source()
                    compile_with = compile_with or (lambda src: compile_cuda(src, target.arch))
                    cubin = compile_with(source)
                    # several launches: their sources, joined, build one cubin holding every entry
                    for meta in kernel.meta.launches or (kernel.meta,):
                        (out / label / meta.binary_name).write_bytes(cubin)
                    (out / label / "kernel.src").write_text(source)
                # a kernel of several launches (A transposed by a first launch): the last, the tiles'
                tiles = kernel.meta.launches[-1] if kernel.meta.launches else kernel.meta
                binary = (out / label / tiles.binary_name).read_bytes()
                entry = {"name": label, "variant": name, "size": size, "changes": changes, "problem": problem,
                         "config": {k: v for k, v in config.items() if k.startswith("fma_") and k != "fma_warps"},
                         "compiler": compiler, "launches": max(1, len(kernel.meta.launches or ())),
                         "threads": tiles.block[0], "grid": list(tiles.grid),
                         "shared_memory": tiles.shared_memory,
                         "probe_blocks_per_sm": blocks, "sass": sass_summary(binary) if target.kind == "cuda" else {}}
                entries.append(entry)
                sass = entry["sass"]
                print(f"exported {label} ({entry['compiler']}): {entry['threads']} threads, "
                      f"{entry['shared_memory'] // 1024} KB shared, {sass.get('registers')} registers, "
                      f"{sass.get('stack')} bytes of stack, loop {sass.get('loop')} in "
                      f"{time.perf_counter() - start:.1f} s", flush=True)
    variants.write_manifest(out, {"target": str(target), "variants": entries})
    variants.report_size(out, len(entries))
    return entries


# ---------------------------------------------------------------------------- run


def _inputs(torch, entry: dict, generator):
    """A and B as the kernel takes them ((K, M) for trans_a, (N, K) for trans_b), and as
    (M, K) and (K, N) views for torch."""
    n, ta, tb = entry["size"], entry["problem"]["trans_a"], entry["problem"]["trans_b"]
    a_in = torch.randn(n, n, device=DEVICE, generator=generator)
    b_in = torch.randn(n, n, device=DEVICE, generator=generator)
    return a_in, b_in, (a_in.t() if ta else a_in), (b_in.t() if tb else b_in)


def check(torch, kernel, entry: dict, generator) -> tuple[bool, float]:
    """One call on fresh inputs with C poisoned: (every element within the float32 bound of the
    float64 product, the worst error / bound)."""
    n = entry["size"]
    a_in, b_in, a, b = _inputs(torch, entry, generator)
    c = torch.full((n, n), float("nan"), device=DEVICE)
    kernel(a_in.view(1, n, n), b_in.view(1, n, n), torch.zeros(1, device=DEVICE), c.view(1, n, n))
    variants.sync(torch, DEVICE)
    a64, b64 = a.double(), b.double()
    bound = 2.0 * (n + 2) * 2.0 ** -24 * (a64.abs() @ b64.abs())
    worst = float(((c.double() - a64 @ b64).abs() / bound).max())
    return bool(torch.isfinite(c).all()) and worst <= 1.0, worst


def run(root: Path, rounds: int = ROUNDS, only: list[str] | None = None) -> int:
    """Check and time every variant exported to `root`. :returns: the exit status."""
    torch, manifest = variants.begin(root, DEVICE)
    if torch is None:
        return 2
    if DEVICE == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False  # cuBLAS SGEMM: float32 products, as ours
        torch.set_float32_matmul_precision("highest")
    time_one = variants.timer(DEVICE, lambda fn: _time(torch, fn))
    generator = torch.Generator(device=DEVICE).manual_seed(0)
    ok, rows = True, []
    for entry, kernel in variants.exports(root, manifest["variants"], only, key="variant"):
        n = entry["size"]
        good, worst = check(torch, kernel, entry, generator)
        ok &= good
        a_in, b_in, a, b = _inputs(torch, entry, generator)
        bias = torch.zeros(1, device=DEVICE)
        c, c_ref = torch.empty(n, n, device=DEVICE), torch.empty(n, n, device=DEVICE)
        fns = {"ours": lambda: kernel(a_in.view(1, n, n), b_in.view(1, n, n), bias, c.view(1, n, n)),
               "cublas": lambda: torch.matmul(a, b, out=c_ref)}
        med, paired = variants.alternate(fns, rounds, time_one, "cublas")
        flops = 2.0 * n ** 3
        row = {"entry": entry, "ours_ms": med["ours"], "cublas_ms": med["cublas"], "ratio": paired,
               "tflops": flops / med["ours"] / 1e9, "cublas_tflops": flops / med["cublas"] / 1e9, "worst": worst,
               "ok": good}
        rows.append(row)
        print(f"{entry['name']:<28} ours {row['ours_ms']:.3f} ms {row['tflops']:5.1f} TFLOP/s  cuBLAS "
              f"{row['cublas_ms']:.3f} ms {row['cublas_tflops']:5.1f}  cuBLAS ms / ours ms {paired:.3f}  err/bound "
              f"{worst:.2f} {'ok' if good else 'MISMATCH'}", flush=True)
        del a_in, b_in, a, b, c, c_ref, fns
    table = []
    for r in rows:
        e = r["entry"]
        changes = variants.describe(e["changes"])
        if e["problem"]["trans_a"]:
            changes += " A as (K, M)"
        if e["problem"]["trans_b"]:
            changes += " B as (N, K)"
        if e["probe_blocks_per_sm"]:
            changes += f" (probe: __launch_bounds__(T, {e['probe_blocks_per_sm']}))"
        if e.get("compiler"):
            changes += f" [{e['compiler']}]"
        registers = str(e["sass"].get("registers", "-")) + (f" ({e['sass']['stack']} B stack)"
                                                             if e["sass"].get("stack") else "")
        loop = e["sass"].get("loop") or {}
        mix = f"{loop.get('FFMA')} / {loop.get('LDS.128')} / {loop.get('instructions')}" if loop else "-"
        table.append([e["variant"], e["size"], changes, e["threads"], e["shared_memory"] // 1024, registers, mix,
                      f"{r['tflops']:.1f}", f"{r['cublas_tflops']:.1f}", f"**{r['ratio']:.2f}**",
                      f"{r['worst']:.2f}{'' if r['ok'] else ' MISMATCH'}"])
    variants.print_table(["variant", "size", "changes", "threads", "shared KB", "registers",
                          "loop FFMA / LDS.128 / instructions", "ours TFLOP/s", "cuBLAS TFLOP/s",
                          "cuBLAS ms / ours ms (paired)", "err / bound"], table)
    for size, compiler in sorted({(r["entry"]["size"], r["entry"].get("compiler") or "") for r in rows}):
        good = [r for r in rows if r["entry"]["size"] == size and (r["entry"].get("compiler") or "") == compiler
                and r["ok"] and not (r["entry"]["problem"]["trans_a"] or r["entry"]["problem"]["trans_b"])]
        if good:
            best = max(good, key=lambda r: r["ratio"])
            print(f"best at {size}^3{f' ({compiler})' if compiler else ''}: {best['entry']['variant']} "
                  f"{best['ratio']:.2f}x cuBLAS (config {best['entry']['config']})")
    print(variants.device_line(torch, DEVICE, "floor 0.9x cuBLAS SGEMM"))
    return 0 if ok else 1


def main(argv=None) -> int:
    parser = variants.parser(__doc__, VARIANTS, rounds=ROUNDS)
    parser.add_argument("--nvcc", metavar="PATH", help="with --export: build each variant again with this nvcc "
                        "(e.g. /usr/local/cuda-13.0/bin/nvcc)")
    parser.add_argument("--nvrtc", metavar="PATH", help="with --export: build each variant again with this NVRTC "
                        "library (libnvrtc.so.13 of another release or its directory, e.g. 13.0's, the H100 image's)")

    def export_variants(args):
        export(args.export, f"cuda/{args.arch}", args.only, nvcc=args.nvcc, nvrtc=args.nvrtc)

    return variants.dispatch(parser, export_variants, lambda args: run(args.run, args.rounds, args.only), argv)


if __name__ == "__main__":
    sys.exit(main())
