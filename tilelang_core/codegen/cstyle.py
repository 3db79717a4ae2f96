"""The C-family printer: one walker over lowered TIR, dialects as tables over it.

`CStyleCodegen` turns a lowered `tvm.tirx.PrimFunc` into C-like source and the launch facts
a runtime needs (`KernelSource`). Its defaults are neutral C (no GPU spelling): a dialect
(C for CPUs, CUDA, HIP, MUSA, Metal, OpenCL) is a subclass that mostly sets class attributes
and overrides a method only where a table cannot say it (the CPU dialect's grid loop,
Metal's parameter attributes). GPU dialects usually start from `GPUCodegen` (`gpu.py`), the
SIMT layer: thread and block indices, a block barrier, shared memory, launch limits read
from the target's capabilities, with the spellings CUDA, HIP and MUSA share as its data.

Contract of the input (what the core's passes hand over):
- params are buffers (`Var`s with a `BufferType`) and scalars; every symbolic dimension of a
  buffer shape is itself a scalar parameter;
- the launch is given by `thread_extent` attributes (`T.launch_thread`) whose extents are
  integer expressions over scalar parameters;
- buffers are multi-dimensional: the printer flattens row-major (strides and elem_offset
  honoured); allocations use scopes global-free: "shared", "shared.dyn", "local",
  "local.fragment", "local.var";
- the texts of the `pragma_import_c` attribute (`T.import_source`, see `ir/imports.py`) are
  printed verbatim between the file header and the kernel, each once.

The dialect contract. Attributes (class attributes; neutral defaults here, the SIMT ones in
`GPUCodegen`):
- file and kernel: `language`, `preamble`, `helper_qualifier`, `kernel_prefix`,
  `kernel_return_type`, `restrict`, `indent_unit`, `calling_convention`, `reserved_names`;
- parallelism: `thread_index` (launch tag such as "threadIdx.x" -> C expression; empty here:
  a dialect that binds thread or block indices must fill it), `barrier` (the statement of
  `tl.sync_threads`; None here: a dialect without one refuses barriers with a CodegenError);
- memory: `shared_qualifier`, `dyn_shared_name`, `dyn_shared_decl` (a format over {align},
  {name} and {size}: the bytes of the packed "shared.dyn" array), `dyn_shared_alignment`,
  `local_array_suffix`, `addressed_local_format`;
- loops: `unroll_pragma` (may use {n}; "" prints none), `vectorize_pragma`, `parallel_pragma`;
- values: `type_map`, `storage_types`, `math_ops`, `float_suffix`, `inf_literal`,
  `nan_literal`, `eager_logic`;
- builtins: `atomic_ops`, `memory_orders`, `printf_name`, `assert_format`,
  `reinterpret_format`, `shuffle_xor_format`, `dp4a_format` (None: not spelled; the printer
  says which builtin the dialect lacks), `intrinsic_formats` (the thread-level intrinsics of
  `builtins.INTRINSIC_OPS`: op name, or (op name, rounding mode), -> a format over the call's
  arguments {0}, {1}, ... and {warp_size}; an op missing there is refused with its name).
Methods meant for overriding: `kernel_signature`, `param_decl`, `launch_bounds`,
`kernel_prologue`, `kernel_epilogue`, `visit_thread_extent`, `declare_buffer`,
`plan_allocations`, `emit_barrier`, `emit_assert`, `vector_type`, `call_handlers`,
`note_call`, `check_launch`, `file_header`, `loop_pragmas`, `enter_loop`/`exit_loop`.
Attribute and method names are stable: a new one is added with a neutral default, never
renamed or removed.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from tvm import ir, sym, tirx

from tilelang_core.ir.imports import import_sources
from tilelang_core.ir.source import _last_span
from tilelang_core.runtime.base import KernelSource

from .analysis import (
    BLOCK_TAGS,
    C_KEYWORDS,
    CodegenError,
    LaunchInfo,
    NameTable,
    buffer_info,
    dtype_of,
    find_launch,
    iter_exprs,
    iter_stmts,
    param_specs,
    primfunc_of,
)
from .cexpr import CExprPrinter, c_string_literal

__all__ = ["CStyleCodegen", "C_MATH_OPS", "C_TYPES", "PHILOX_FORMATS"]

_INCLUDE = Path(__file__).parent / "include"
# PrimFunc attribute: names of tensor parameters that may alias (printed without `restrict`)
ATTR_MAY_ALIAS = "tl.non_restrict_params"
# the printer's own helpers (`used_helpers` names) and the file of include/ that defines them
_HELPER_FILES = {"intdiv": "tl_intdiv.h", "dp4a": "tl_dp4a.h", "philox": "tl_philox.h"}

# T.rng_* in any C dialect with pointers and memcpy: the portable Philox of include/tl_philox.h
# (a dialect merges these into its `intrinsic_formats`; the printer pastes the helper file)
PHILOX_FORMATS = {
    "tl.rng_init": "tl_rng_init({0}, {1}, {2}, {3})",
    "tl.rng_rand": "tl_rng_rand({0})",
    ("tl.rng_rand_uniform", "float32"): "tl_rng_uniform({0})",
    ("tl.rng_rand_uniform", "float64"): "tl_rng_uniform_double({0})",
    ("tl.rng_rand_normal", "float32"): "tl_rng_normal({0})",
    ("tl.rng_rand_normal", "float64"): "tl_rng_normal_double({0})",
}

C_TYPES = {
    "bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
    "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t",
    "uint64": "uint64_t", "float32": "float", "float64": "double", "handle": "void*",
}


def _c_math(f32: str, f64: str) -> dict:
    return {"float32": f32, "float64": f64}


# op short name -> {value dtype | "float" | "int" | "default": format}; {0}, {1}: arguments
C_MATH_OPS = {
    "exp": _c_math("expf({0})", "exp({0})"),
    "exp2": _c_math("exp2f({0})", "exp2({0})"),
    "exp10": _c_math("powf(10.0f, {0})", "pow(10.0, {0})"),
    "log": _c_math("logf({0})", "log({0})"),
    "log2": _c_math("log2f({0})", "log2({0})"),
    "log10": _c_math("log10f({0})", "log10({0})"),
    "log1p": _c_math("log1pf({0})", "log1p({0})"),
    "sqrt": _c_math("sqrtf({0})", "sqrt({0})"),
    "rsqrt": _c_math("(1.0f / sqrtf({0}))", "(1.0 / sqrt({0}))"),
    "pow": _c_math("powf({0}, {1})", "pow({0}, {1})"),
    "fabs": {**_c_math("fabsf({0})", "fabs({0})"), "int": "abs({0})"},
    "floor": _c_math("floorf({0})", "floor({0})"),
    "ceil": _c_math("ceilf({0})", "ceil({0})"),
    "trunc": _c_math("truncf({0})", "trunc({0})"),
    "round": _c_math("nearbyintf({0})", "nearbyint({0})"),
    "nearbyint": _c_math("nearbyintf({0})", "nearbyint({0})"),
    "sin": _c_math("sinf({0})", "sin({0})"),
    "cos": _c_math("cosf({0})", "cos({0})"),
    "tan": _c_math("tanf({0})", "tan({0})"),
    "asin": _c_math("asinf({0})", "asin({0})"),
    "acos": _c_math("acosf({0})", "acos({0})"),
    "atan": _c_math("atanf({0})", "atan({0})"),
    "atan2": _c_math("atan2f({0}, {1})", "atan2({0}, {1})"),
    "sinh": _c_math("sinhf({0})", "sinh({0})"),
    "cosh": _c_math("coshf({0})", "cosh({0})"),
    "tanh": _c_math("tanhf({0})", "tanh({0})"),
    "asinh": _c_math("asinhf({0})", "asinh({0})"),
    "acosh": _c_math("acoshf({0})", "acosh({0})"),
    "atanh": _c_math("atanhf({0})", "atanh({0})"),
    "erf": _c_math("erff({0})", "erf({0})"),
    "sigmoid": _c_math("(1.0f / (1.0f + expf(-({0}))))", "(1.0 / (1.0 + exp(-({0}))))"),
    "fmod": _c_math("fmodf({0}, {1})", "fmod({0}, {1})"),
    "hypot": _c_math("hypotf({0}, {1})", "hypot({0}, {1})"),
    "copysign": _c_math("copysignf({0}, {1})", "copysign({0}, {1})"),
    "nextafter": _c_math("nextafterf({0}, {1})", "nextafter({0}, {1})"),
    "ldexp": _c_math("ldexpf({0}, {1})", "ldexp({0}, {1})"),
    "fma": _c_math("fmaf({0}, {1}, {2})", "fma({0}, {1}, {2})"),
    "isnan": {"float": "isnan({0})", "default": "false"},
    "isinf": {"float": "isinf({0})", "default": "false"},
    "isfinite": {"float": "isfinite({0})", "default": "true"},
    "popcount": {"int64": "__builtin_popcountll({0})", "uint64": "__builtin_popcountll({0})",
                 "default": "__builtin_popcount({0})"},
    "clz": {"int64": "__builtin_clzll({0})", "uint64": "__builtin_clzll({0})",
            "default": "__builtin_clz({0})"},
    "min": {"default": "min({0}, {1})"},
    "max": {"default": "max({0}, {1})"},
}


class CStyleCodegen(CExprPrinter):
    """Print a lowered PrimFunc in a C-family dialect. `render(module)` -> `KernelSource`.

    The defaults are neutral C99: no kernel qualifier, plain arrays for shared memory, no
    thread indices, no barrier, no atomics. Set the attributes below in a subclass to change
    the dialect (GPU dialects usually subclass `GPUCodegen`); see the module docstring for
    the whole contract.
    """

    # -- dialect attributes ---------------------------------------------------------------
    language = "c"
    kernel_prefix = ""  # e.g. 'extern "C" __global__ ' or '__kernel '
    kernel_return_type = "void"
    restrict = "restrict"
    preamble: tuple[str, ...] = ()  # lines at the top of the file (includes, typedefs)
    helper_qualifier = "static inline"  # how the printer's own helper functions are declared
    indent_unit = "  "
    barrier: str | None = None  # the statement of tl.sync_threads; None: the dialect has none
    # launch tag ("blockIdx.x", "threadIdx.y", ...) -> the C expression of that index
    thread_index: dict = {}
    shared_qualifier = ""
    dyn_shared_name = "tl_dyn_smem"
    # the packed "shared.dyn" array, over {align}, {name} and {size} (bytes)
    dyn_shared_decl = "unsigned char {name}[{size}] __attribute__((aligned({align})));"
    dyn_shared_alignment = 128
    local_array_suffix = ""
    addressed_local_format = ""  # before a local array whose address the kernel takes
    unroll_pragma = ""  # may use {n}: the constant extent, or 8; "" prints no pragma
    vectorize_pragma: tuple[str, ...] = ()
    parallel_pragma: tuple[str, ...] = ()
    type_map = C_TYPES
    # dtype -> {"value": computed dtype, "load"/"store"/"round": formats over {0}}
    storage_types: dict = {}
    math_ops = C_MATH_OPS
    float_suffix = {"float32": "f"}
    inf_literal = "INFINITY"
    nan_literal = "NAN"
    # kind ("add" "max" "min" "or" "load" "store") or (kind, dtype) -> format over {0}: address,
    # {1}: value (not for "load"), {order}: the memory order's spelling from `memory_orders`
    atomic_ops: dict = {}
    # C spellings of the memory orders (index = builtins.MEMORY_ORDERS), or None when the
    # dialect's atomics are relaxed only (then a stronger order is a codegen error)
    memory_orders: tuple[str, ...] | None = None
    printf_name = "printf"
    eager_logic = False  # print && / || of pure, non-faulting operands as & / |
    reinterpret_format = None  # over {0}: value, {1}: its C type, {2}: the target C type
    shuffle_xor_format = None  # over {0}: value, {1}: lane mask (targets with warp shuffles)
    # `tl.dp4a` over {0}, {1}: int8 pointers, {2}: the int32 pointer; None: the portable
    # helper of include/tl_dp4a.h
    dp4a_format = None
    # `builtins.INTRINSIC_OPS`: "tl.<name>" or ("tl.<name>", rounding) -> format over the
    # arguments ({0}, ...; a rounding argument is left out) and {warp_size}
    intrinsic_formats: dict = {}
    assert_format = "assert(({cond}) && {msg});"
    reserved_names: tuple[str, ...] = ("printf", "min", "max", "assert")
    calling_convention = "device kernel: (buffer pointers..., scalars...) in parameter order"

    LOCAL_SCOPES = ("local", "local.fragment", "local.var")

    def __init__(self, target=None, options=None) -> None:
        self.target = target
        self.options = options

    # -- entry point ----------------------------------------------------------------------

    def render(self, module) -> KernelSource:
        """Print `module` (a PrimFunc, or an IRModule holding one) as a `KernelSource`."""
        entry, func = primfunc_of(module)
        self._reset()
        self.func = func
        self._reserve_extern_names(func.body)
        # `main` (TileLang's usual name) would collide with C's main: print main_kernel
        self.entry = self.names.fresh(f"{entry}_kernel" if entry in C_KEYWORDS else entry)
        params = self._declare_params(func)
        launch_names = {p: self.var_names[p] for p in func.params if not tirx.is_buffer_var(p)}
        self.launch = find_launch(func.body, launch_names)
        self.check_launch(self.launch)
        self._analyze(func.body)

        self.emit(f"{self.launch_bounds(self.launch)}{self.kernel_signature(self.entry, params)} {{")
        with self.indented():
            self.kernel_prologue()
            self.visit(func.body)
            self.kernel_epilogue()
        self.emit("}")

        head = self.file_header() + self.imported_source_lines(func)
        shift = len(head)
        source = "\n".join(head + self.lines) + "\n"
        line_map = {n + shift: where for n, where in self.line_map.items()}
        specs = param_specs(func, {**self.buffer_names, **{p: self.var_names[p] for p in func.params
                                                             if p in self.var_names}})
        extra = {
            "params": [asdict(s) for s in specs],
            "launch_params": {name: i for i, p in enumerate(func.params)
                              if not tirx.is_buffer_var(p) for name in [self.var_names[p]]},
            "calling_convention": self.calling_convention,
            "dyn_shared_offsets": {self.buffer_names[b]: off for b, off in self.dyn_shared_offsets.items()},
            "helpers": sorted(self.used_helpers),
            # positions of the tensor parameters the kernel may write (the call path refuses
            # read-only arrays there)
            # the grid must be launched cooperatively (the kernel calls tl.sync_grid)
            "cooperative": "tl.sync_grid" in self.used_intrinsics,
            "written_params": ",".join(str(i) for i, p in enumerate(func.params)
                                       if tirx.is_buffer_var(p) and p in self.written_buffers),
        }
        return KernelSource(
            source=source, entry=self.entry, language=self.language,
            grid=self.launch.grid, block=self.launch.block,
            shared_memory=self.dyn_shared_bytes, line_map=line_map, extra=extra,
        )

    def _reset(self) -> None:
        self.names = NameTable(self.reserved_names + (self.dyn_shared_name,))
        self.var_names: dict = {}
        self.buffer_names: dict = {}
        self.scalar_buffers: set = set()
        self.written_buffers: set = set()
        self.addressed_buffers: set = set()  # whose address the kernel takes: arrays, never scalars
        self.analyzer = sym.Analyzer()
        self.lines: list[str] = []
        self.line_map: dict = {}
        self.pending_lines: list[str] = []
        self.used_helpers: set = set()
        self.used_intrinsics: set = set()
        self.dyn_shared_offsets: dict = {}
        self.dyn_shared_bytes = 0
        self._depth = 0
        self._span = None

    # -- output ---------------------------------------------------------------------------

    def emit(self, line: str = "") -> None:
        """Append a line at the current indentation (flushing pending Let bindings first)."""
        pending, self.pending_lines = self.pending_lines, []
        for p in pending:
            self._write(p)
        self._write(line)

    def _write(self, line: str) -> None:
        self.lines.append(self.indent_unit * self._depth + line if line else "")
        span = _last_span(self._span)  # a T.macro's code carries a SequentialSpan
        if span is not None:
            self.line_map[len(self.lines)] = (str(span.source_name.name), int(span.line))

    class _Indent:
        def __init__(self, owner):
            self.owner = owner

        def __enter__(self):
            self.owner._depth += 1

        def __exit__(self, *exc):
            self.owner._depth -= 1

    def indented(self) -> "_Indent":
        return self._Indent(self)

    def file_header(self) -> list[str]:
        """Preamble lines, then the printer's helpers that the body used."""
        head = [f"// generated by tilelang-core ({type(self).__name__}) from {self.entry}"]
        head += list(self.preamble)
        files = [_HELPER_FILES[h] for h in sorted(self.used_helpers) if h in _HELPER_FILES]
        if files:
            head += ["", "#ifndef TL_HELPER", f"#define TL_HELPER {self.helper_qualifier}", "#endif"]
        for name in files:
            head += (_INCLUDE / name).read_text().rstrip("\n").split("\n")
        return head + [""]

    def imported_source_lines(self, func) -> list[str]:
        """The texts the kernel imports (`T.import_source`), verbatim, each once, after the
        header and before the kernel."""
        lines: list[str] = []
        for number, text in enumerate(import_sources(func)):
            lines.append(f"// T.import_source #{number + 1}")
            lines += text.strip("\n").split("\n")
            lines.append("")
        return lines

    def _reserve_extern_names(self, body) -> None:
        """The functions the kernel calls by name (`T.call_extern`) keep their names: no
        variable of the kernel may shadow them."""
        for e in iter_exprs(body):
            if isinstance(e, ir.Call) and isinstance(e.op, ir.Op) and str(e.op.name) in (
                    "tirx.call_extern", "tirx.call_pure_extern") and e.args and isinstance(e.args[0], ir.StringImm):
                self.names.reserve(str(e.args[0].value))

    # -- parameters and launch ------------------------------------------------------------

    def _declare_params(self, func) -> list[tuple]:
        params = []
        for p in func.params:
            if tirx.is_buffer_var(p):
                self.buffer_names[p] = self.names.get(p)
                params.append(("buffer", p))
            else:
                self.var_names[p] = self.names.get(p)
                params.append(("scalar", p))
        # symbolic dimensions are non-negative
        for kind, p in params:
            if kind == "buffer":
                for dim in buffer_info(p).shape:
                    if isinstance(dim, ir.Var):
                        if dim not in self.var_names:
                            raise CodegenError(
                                f"the shape of buffer {p.name!r} uses {dim.name!r}, which is not a "
                                f"parameter of the kernel; the core must pass every symbolic "
                                f"dimension as an int32 parameter")
                        self.analyzer.update(dim, sym.ConstIntBound(0, sym.ConstIntBound.POS_INF), True)
        return params

    def param_decl(self, kind: str, var) -> str:
        """One parameter of the kernel signature."""
        if kind == "scalar":
            return f"{self.value_type_name(dtype_of(var))} {self.var_names[var]}"
        info = buffer_info(var)
        const = "const " if var not in self.written_buffers else ""
        restrict = f" {self.restrict}" if self.restrict and not self.may_alias(var) else ""
        return f"{const}{self.type_name(info.dtype)}*{restrict} {self.buffer_names[var]}"

    def may_alias(self, var) -> bool:
        """Whether the kernel said parameter `var` may alias another (`T.annotate_restrict_buffers`,
        the PrimFunc attribute ATTR_MAY_ALIAS): its pointer is then not `restrict`."""
        attrs = getattr(self.func, "attrs", None) or {}
        return str(var.name) in [str(n) for n in (attrs.get(ATTR_MAY_ALIAS, ()) or ())]

    def kernel_signature(self, entry: str, params: list[tuple]) -> str:
        args = ", ".join(self.param_decl(kind, var) for kind, var in params)
        return f"{self.kernel_prefix}{self.kernel_return_type} {entry}({args})"

    def launch_bounds(self, launch: LaunchInfo) -> str:
        """Text before the signature, e.g. `__launch_bounds__(128) ` (default: none)."""
        return ""

    def check_launch(self, launch: LaunchInfo) -> None:
        """Refuse a launch this dialect cannot run (default: accept any)."""

    def kernel_prologue(self) -> None:
        """Lines at the top of the kernel body (default: the dynamic shared memory array)."""
        if self.dyn_shared_bytes:
            self.emit(self.dyn_shared_decl.format(align=self.dyn_shared_alignment, name=self.dyn_shared_name,
                                                  size=self.dyn_shared_bytes))

    def kernel_epilogue(self) -> None:
        """Lines at the end of the kernel body (default: none)."""

    # -- analysis before printing ---------------------------------------------------------

    def _analyze(self, body) -> None:
        allocs = []
        for stmt in iter_stmts(body):
            if isinstance(stmt, tirx.BufferStore):
                self.written_buffers.add(stmt.buffer)
                if stmt.indices and isinstance(stmt.indices[-1], tirx.Ramp):
                    self.addressed_buffers.add(stmt.buffer)  # stored through a vector pointer
            elif isinstance(stmt, tirx.AllocBuffer):
                allocs.append(stmt)
            elif isinstance(stmt, tirx.AssertStmt):
                self.used_helpers.add("assert")
        for e in iter_exprs(body):
            if isinstance(e, ir.TensorLoad) and e.indices and isinstance(e.indices[-1], tirx.Ramp):
                self.addressed_buffers.add(e.source)  # read through a vector pointer
            if isinstance(e, ir.Call) and isinstance(e.op, ir.Op):
                name = str(e.op.name)
                if name in ("tl.atomic_add", "tl.atomic_max", "tl.atomic_min", "tirx.address_of"):
                    load = e.args[0]
                    if isinstance(load, ir.TensorLoad):
                        self.written_buffers.add(load.source)
                        if name == "tirx.address_of":
                            self.addressed_buffers.add(load.source)
                elif name in ("tirx.buffer_data", "tirx.tvm_access_ptr", "tirx.call_extern",
                              "tirx.call_pure_extern"):
                    for a in e.args:  # a pointer escapes: assume the callee writes
                        if isinstance(a, ir.Call) and str(getattr(a.op, "name", "")) == "tirx.buffer_data":
                            self.written_buffers.add(a.args[0])
                    if name == "tirx.buffer_data":
                        self.written_buffers.add(e.args[0])
                        self.addressed_buffers.add(e.args[0])
                self.note_call(name, e)
        self.plan_allocations(allocs)

    def note_call(self, op_name: str, call) -> None:
        """Seen `call` (of op `op_name`) in the body, before printing: dialects record what
        they will need (a header for an extern function, a runtime flag)."""
        if op_name == "tl.printf":
            self.used_helpers.add("printf")
        elif op_name == "tl.device_assert":
            self.used_helpers.add("assert")

    def plan_allocations(self, allocs: list) -> None:
        """Place allocations before printing. Default: pack every "shared.dyn" buffer into the
        one dynamic shared memory array, each at an offset aligned to `dyn_shared_alignment`;
        buffers whose lifetimes (the `tl.shared_lifetimes` attribute of storage planning) do
        not overlap may share bytes."""
        from ..transform.storage import ATTR_SHARED_LIFETIMES, place_buffers

        attrs = self.func.attrs if self.func is not None and self.func.attrs is not None else {}
        lifetimes = attrs.get(ATTR_SHARED_LIFETIMES, {}) if hasattr(attrs, "get") else {}
        items = []
        for index, stmt in enumerate(allocs):
            info = buffer_info(stmt.buffer)
            if info.scope != "shared.dyn":
                continue
            size = info.const_size()
            if size is None:
                raise CodegenError(f"dynamic shared buffer {info.name!r} has a symbolic shape "
                                   f"{list(info.shape)}; shared memory needs constant shapes")
            span = lifetimes.get(info.name)
            first, last = (int(span[0]), int(span[1])) if span is not None else (0, 1 << 30)
            nbytes = size * self.dtype_bytes(info.dtype)
            items.append((index, nbytes, first, last, self.shared_alignment(nbytes)))
        offsets, total = place_buffers(items, self.dyn_shared_alignment)
        for index, stmt in enumerate(allocs):
            if index in offsets:
                self.dyn_shared_offsets[stmt.buffer] = offsets[index]
        self.dyn_shared_bytes = max((offsets[item[0]] + item[1] for item in items), default=0)

    def shared_alignment(self, nbytes: int) -> int:
        """The alignment of a dynamic shared buffer of `nbytes` bytes in the packed array
        (default: `dyn_shared_alignment` for every buffer). Dialects whose large tiles need
        a coarser alignment than small buffers override it."""
        return self.dyn_shared_alignment

    @staticmethod
    def dtype_bytes(dtype: str) -> int:
        from ..ir import dtype_bytes

        return dtype_bytes(dtype)

    # -- statements -----------------------------------------------------------------------

    def visit(self, stmt) -> None:
        saved = self._span
        if getattr(stmt, "span", None) is not None:
            self._span = stmt.span
        try:
            method = self._STMT_HANDLERS.get(type(stmt))
            if method is None:
                raise CodegenError(f"the {self.language} printer cannot print a {type(stmt).__name__}: {stmt}")
            getattr(self, method)(stmt)
        finally:
            self._span = saved

    def visit_seq(self, s) -> None:
        for child in s.seq:
            self.visit(child)

    def visit_attr(self, s) -> None:
        if s.attr_key == "thread_extent":
            self.visit_thread_extent(s)
        else:
            self.visit(s.body)

    def visit_thread_extent(self, s) -> None:
        """Bind a thread/block index variable (GPU dialects: `int bx = blockIdx.x;`)."""
        iv = s.node
        var = iv.var
        if var not in self.var_names:
            tag = str(iv.thread_tag)
            index = self.thread_index.get(tag)
            if index is None:
                raise CodegenError(
                    f"the kernel binds {var.name} to {tag}, which the {self.language} dialect does not "
                    f"spell (thread_index knows: {', '.join(sorted(self.thread_index)) or 'none'}); a GPU "
                    f"dialect fills thread_index (see GPUCodegen), a block-serial one removes thread bindings")
            name = self.var_names[var] = self.names.get(var)
            self.analyzer.bind(var, ir.Range.from_min_extent(0, s.value), allow_override=True)
            self.emit(f"{self.value_type_name(dtype_of(var))} {name} = {index};")
        self.visit(s.body)

    def loop_pragmas(self, s) -> list[str]:
        kind = int(s.kind)
        if kind == int(tirx.ForKind.UNROLLED):
            n = min(int(s.extent.value), 65534) if isinstance(s.extent, tirx.IntImm) else 8
            return [self.unroll_pragma.format(n=n)] if self.unroll_pragma else []
        if kind == int(tirx.ForKind.VECTORIZED):
            return list(self.vectorize_pragma)
        if kind == int(tirx.ForKind.PARALLEL):
            return list(self.parallel_pragma)
        if kind == int(tirx.ForKind.THREAD_BINDING):
            raise CodegenError(f"loop over {s.loop_var.name} is still bound to a thread; the core "
                               f"must lower thread bindings to thread_extent attributes first")
        return []

    def visit_for(self, s) -> None:
        var = s.loop_var
        name = self.var_names[var] = self.names.get(var)
        self.analyzer.bind(var, ir.Range.from_min_extent(s.min, s.extent), allow_override=True)
        start = self.expr(s.min)
        end_expr = s.extent if (isinstance(s.min, tirx.IntImm) and s.min.value == 0) else s.min + s.extent
        end = self.expr(self.analyzer.simplify(end_expr))
        step = s.step
        if step is None or (isinstance(step, tirx.IntImm) and step.value == 1):
            inc = f"++{name}"
        else:
            inc = f"{name} += {self.expr(step)}"
        for line in self.loop_pragmas(s):
            self.emit(line)
        self.emit(f"for ({self.value_type_name(dtype_of(var))} {name} = {start}; {name} < {end}; {inc}) {{")
        self.enter_loop(s)
        with self.indented():
            self.visit(s.body)
        self.exit_loop(s)
        self.emit("}")

    def enter_loop(self, s) -> None:
        """Called before a loop's body is printed (dialects track loop kinds)."""

    def exit_loop(self, s) -> None:
        """Called after a loop's body is printed."""

    def visit_while(self, s) -> None:
        cond = self.expr(s.condition)
        if self.pending_lines:  # the condition binds values: re-evaluate them every iteration
            pending, self.pending_lines = self.pending_lines, []
            self.emit("while (1) {")
            with self.indented():
                for p in pending:
                    self.emit(p)
                self.emit(f"if (!({cond})) break;")
                self.visit(s.body)
        else:
            self.emit(f"while ({cond}) {{")
            with self.indented():
                self.visit(s.body)
        self.emit("}")

    def visit_if(self, s) -> None:
        self.emit(f"if ({self.expr(s.condition)}) {{")
        with self.indented():
            self.visit(s.then_case)
        if s.else_case is not None:
            self.emit("} else {")
            with self.indented():
                self.visit(s.else_case)
        self.emit("}")

    def var_type_name(self, var) -> str:
        ty = var.ty
        if isinstance(ty, ir.PointerType):
            elem = ty.element_type
            inner = self.type_name(str(elem.dtype)) if isinstance(elem, ir.PrimType) and str(elem.dtype) else "void"
            return f"{inner}*"
        return self.value_type_name(dtype_of(var))

    def bound_name(self, table: dict, obj) -> str:
        """The C name of a new binding of `obj` (a Var or Buffer), recorded in `table`: its own
        name the first time, a fresh one when the same IR object is bound again in one kernel
        (the unrolled copies of a loop body declare the same let or local buffer once each)."""
        name = table[obj] = self.names.fresh(obj.name) if obj in table else self.names.get(obj)
        return name

    def visit_bind(self, s) -> None:
        value = self.expr(s.value)
        name = self.bound_name(self.var_names, s.var)
        if dtype_of(s.var).startswith(("int", "uint")):
            # the value's bounds carry over to the name: a later floordiv of a provably
            # non-negative binding prints as `/`, not as the floor helper
            self.analyzer.update(s.var, self.analyzer.const_int_bound(s.value), True)
        self.emit(f"{self.var_type_name(s.var)} {name} = {value};")

    def visit_alloc(self, s) -> None:
        self.declare_buffer(buffer_info(s.buffer), s)

    def declare_buffer(self, info, stmt) -> None:
        """Declare an allocated buffer where its AllocBuffer stands, by storage scope."""
        buf = stmt.buffer
        name = self.bound_name(self.buffer_names, buf)
        ctype = self.type_name(info.dtype)
        if info.scope == "shared.dyn":
            offset = self.dyn_shared_offsets[buf]
            self.emit(f"{ctype}* {name} = ({ctype}*)({self.dyn_shared_name} + {offset});")
            return
        size = info.const_size()
        if info.scope in self.LOCAL_SCOPES or info.scope == "shared":
            if size is None:
                raise CodegenError(f"buffer {info.name!r} in scope {info.scope!r} has a symbolic shape "
                                   f"{list(info.shape)}; block-local buffers need constant shapes")
            if info.scope != "shared" and size == 1 and buf not in self.addressed_buffers:
                self.scalar_buffers.add(buf)
                self.emit(f"{ctype} {name};")
                return
            qual = self.shared_qualifier if info.scope == "shared" else ""
            if info.scope != "shared" and buf in self.addressed_buffers and self.addressed_local_format:
                # a callee may read the array through a wider type (TileLang's decoders read
                # int8[4] as one uint): give it that alignment
                qual = self.addressed_local_format
            self.emit(f"{qual}{ctype} {name}[{size}]{self.local_array_suffix};")
            return
        raise CodegenError(f"buffer {info.name!r} is allocated in scope {info.scope!r}, which the "
                           f"{self.language} printer does not place; supported scopes: shared, "
                           f"shared.dyn, {', '.join(self.LOCAL_SCOPES)}")

    def visit_decl(self, s) -> None:
        info = buffer_info(s.buffer)
        data = self.expr(s.data)
        name = self.bound_name(self.buffer_names, s.buffer)
        ctype = self.type_name(info.dtype)
        self.emit(f"{ctype}* {name} = ({ctype}*)({data});")

    def visit_store(self, s) -> None:
        buf = s.buffer
        ref = self.buffer_ref(buf, s.indices)
        if self.is_vector_intrinsic(s.value):  # a packed op's value is already the stored bits
            return self.emit(f"{ref} = {self.expr(s.value)};")
        value = self.store_value(buffer_info(buf).dtype, self.expr(s.value))
        self.emit(f"{ref} = {value};")

    def visit_evaluate(self, s) -> None:
        e = s.value
        if isinstance(e, (tirx.IntImm, tirx.FloatImm)):
            return
        if isinstance(e, ir.Call) and isinstance(e.op, ir.Op):
            name = str(e.op.name)
            if name == "tl.sync_threads":
                return self.emit_barrier()
            if name == "tl.device_assert":
                cond, msg = e.args
                return self.emit_assert(cond, str(msg.value) if isinstance(msg, ir.StringImm) else str(msg))
            if name == "tirx.break_loop":
                return self.emit("break;")
            if name == "tirx.continue_loop":
                return self.emit("continue;")
        self.emit(f"{self.expr(e)};")

    def emit_barrier(self) -> None:
        if self.barrier is None:
            raise CodegenError(
                f"the kernel synchronizes the threads of a block (tl.sync_threads), but the {self.language} "
                f"dialect has no block barrier; a dialect that runs threads sets `barrier`")
        self.emit(self.barrier)

    def emit_assert(self, cond, message: str) -> None:
        self.emit(self.assert_format.format(cond=self.expr(cond), msg=c_string_literal(message)))

    def visit_assert(self, s) -> None:
        parts = [str(p.value) if isinstance(p, ir.StringImm) else str(p) for p in s.message_parts]
        self.emit_assert(s.condition, "".join(parts) or "assertion failed")

    def visit_break(self, s) -> None:
        self.emit("break;")

    def visit_continue(self, s) -> None:
        self.emit("continue;")

    def visit_return(self, s) -> None:
        raise CodegenError(f"a kernel cannot return a value ({s}); write results to a buffer")

    _STMT_HANDLERS = {
        tirx.SeqStmt: "visit_seq",
        tirx.AttrStmt: "visit_attr",
        tirx.For: "visit_for",
        tirx.While: "visit_while",
        tirx.IfThenElse: "visit_if",
        tirx.Bind: "visit_bind",
        tirx.AllocBuffer: "visit_alloc",
        tirx.DeclBuffer: "visit_decl",
        tirx.BufferStore: "visit_store",
        tirx.Evaluate: "visit_evaluate",
        tirx.AssertStmt: "visit_assert",
        tirx.Break: "visit_break",
        tirx.Continue: "visit_continue",
        tirx.Return: "visit_return",
    }

    # convenience for dialects: the block tags, in z, y, x order
    BLOCK_TAGS_ZYX = tuple(reversed(BLOCK_TAGS))
