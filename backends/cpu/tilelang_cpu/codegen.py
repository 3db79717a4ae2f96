"""The C dialect of the core's C-family printer: a kernel that runs its own grid.

Calling convention of the generated code (what `CPURuntime` calls through ctypes):

    TL_EXPORT int32_t <entry>(<T>* restrict buf0, ..., int32_t m, float alpha, ...);

Parameters come in the PrimFunc's order: a pointer per buffer (`const` when the kernel never
writes it), a value per scalar. The function loops over the grid itself (blockIdx z, y, x;
OpenMP `parallel for collapse` when compiled with -fopenmp and the launch has enough work to
pay for a thread team, see `PARALLEL_MIN_WORK`) and returns 0, or 1 when a device assertion
failed (`tl_cpu_last_error()`, also exported, then holds the message).

Execution model "block-serial": a block is one thread of execution, so the lowered code must
not use threadIdx; block-local buffers (shared.dyn, shared, local, local.fragment, local.var)
are 64-byte aligned arrays declared inside the block loop, except large ones (> 64 KiB, or
more than 512 KiB in all), which are allocated once per OpenMP thread.
"""
from __future__ import annotations

import re
from dataclasses import replace
from types import SimpleNamespace

from tvm import ir, tirx

from tilelang_core.codegen import CStyleCodegen, CodegenError
from tilelang_core.codegen import THREAD_TAGS, buffer_info, dtype_of, iter_exprs, split_lanes
from tilelang_core.codegen import c_string_literal
from tilelang_core.codegen import C_MATH_OPS, C_TYPES, PHILOX_FORMATS
from tilelang_core.ir import source_of

__all__ = ["CPUCodegen", "STACK_ARRAY_LIMIT", "STACK_TOTAL_LIMIT", "PARALLEL_MIN_WORK"]

STACK_ARRAY_LIMIT = 64 << 10  # bytes: a bigger block-local array moves to the heap
STACK_TOTAL_LIMIT = 512 << 10  # bytes: block-local arrays on the stack, in all
PARALLEL_MIN_WORK = 1 << 15  # estimated statement executions below which blocks run serially


# dtype -> the suffix of its atomic helpers in tl_cpu.h
_ATOMIC_TYPES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
                 "int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16",
                 "int32": "i32", "uint32": "u32", "int64": "i64", "uint64": "u64"}


def _estimate_work(stmt) -> int:
    """Statement executions of one block, from constant loop extents (symbolic ones count 256)."""
    if isinstance(stmt, tirx.SeqStmt):
        return sum(_estimate_work(s) for s in stmt.seq)
    if isinstance(stmt, tirx.For):
        n = int(stmt.extent.value) if isinstance(stmt.extent, tirx.IntImm) else 256
        return max(n, 1) * _estimate_work(stmt.body)
    if isinstance(stmt, tirx.While):
        return 64 * _estimate_work(stmt.body)
    if isinstance(stmt, tirx.IfThenElse):
        other = _estimate_work(stmt.else_case) if stmt.else_case is not None else 0
        return 1 + max(_estimate_work(stmt.then_case), other)
    if isinstance(stmt, tirx.AttrStmt):
        return _estimate_work(stmt.body)
    return 1


def _omp(pragma: str, fallback: str | None = None) -> list[str]:
    lines = ["#ifdef _OPENMP", pragma]
    if fallback:
        lines += ["#else", fallback]
    return lines + ["#endif"]


class CPUCodegen(CStyleCodegen):
    """C99/C11 for gcc and clang; see the module docstring for the calling convention."""

    language = "c"
    kernel_prefix = "TL_EXPORT "
    kernel_return_type = "int32_t"
    restrict = "restrict"
    preamble = ('#include "tl_cpu.h"',)
    helper_qualifier = "static inline"  # tl_cpu.h defines TL_HELPER first
    barrier = "/* tl.sync_threads: a block runs as one thread */"
    shared_qualifier = ""
    local_array_suffix = " TL_ALIGNED(64)"
    unroll_pragma = "#pragma GCC unroll {n}"
    vectorize_pragma = tuple(_omp("#pragma omp simd", "#pragma GCC ivdep"))
    # T.Parallel iterations are independent: let the vectorizer ignore assumed dependencies
    parallel_pragma = ("#pragma GCC ivdep",)
    eager_logic = True
    reinterpret_format = ("__extension__({{ {1} tl_src_ = ({0}); {2} tl_dst_; "
                          "memcpy(&tl_dst_, &tl_src_, sizeof(tl_dst_)); tl_dst_; }})")
    type_map = {**C_TYPES, "float16": "tl_half", "bfloat16": "tl_bfloat16"}
    storage_types = {
        "float16": {"value": "float32", "load": "tl_half_to_float({0})",
                    "store": "tl_float_to_half({0})", "round": "tl_round_half({0})"},
        "bfloat16": {"value": "float32", "load": "tl_bf16_to_float({0})",
                     "store": "tl_float_to_bf16({0})", "round": "tl_round_bf16({0})"},
    }
    # float32 exp/exp2 are tl_cpu.h's inline polynomials: loops calling them vectorize, and a
    # kernel computes the same values whether or not its loop was vectorized
    # builtins.INTRINSIC_OPS with a meaning in a block that runs as one thread: the IEEE
    # operations rounded to nearest (tl_cpu.h; C has no per-operation rounding modes), the float
    # or double helper picked by C11 _Generic (its operand is not evaluated)
    intrinsic_formats = {
        ("tl.ieee_add", "rn"): "_Generic(({0}), float: tl_ieee_add_rnf, double: tl_ieee_add_rnd)({0}, {1})",
        ("tl.ieee_sub", "rn"): "_Generic(({0}), float: tl_ieee_sub_rnf, double: tl_ieee_sub_rnd)({0}, {1})",
        ("tl.ieee_mul", "rn"): "_Generic(({0}), float: tl_ieee_mul_rnf, double: tl_ieee_mul_rnd)({0}, {1})",
        ("tl.ieee_fdiv", "rn"): "_Generic(({0}), float: tl_ieee_div_rnf, double: tl_ieee_div_rnd)({0}, {1})",
        ("tl.ieee_fmaf", "rn"): "_Generic(({0}), float: tl_ieee_fma_rnf, double: tl_ieee_fma_rnd)({0}, {1}, {2})",
        ("tl.ieee_frcp", "rn"): "_Generic(({0}), float: tl_ieee_rcp_rnf, double: tl_ieee_rcp_rnd)({0})",
        ("tl.ieee_fsqrt", "rn"): "_Generic(({0}), float: tl_ieee_sqrt_rnf, double: tl_ieee_sqrt_rnd)({0})",
        "tl.ieee_frsqrt": "_Generic(({0}), float: tl_ieee_rsqrt_rnf, double: tl_ieee_rsqrt_rnd)({0})",
    }
    intrinsic_formats.update(PHILOX_FORMATS)
    # packed float32x2 arithmetic on GCC vector values (lane-wise operators)
    intrinsic_formats.update({
        ("tl.add2", "float32x2"): "({0} + {1})",
        ("tl.sub2", "float32x2"): "({0} - {1})",
        ("tl.mul2", "float32x2"): "({0} * {1})",
        ("tl.fma2", "float32x2"): "({0} * {1} + {2})",
    })
    math_ops = {**C_MATH_OPS, "min": {"default": "tl_min({0}, {1})"},
                "max": {"default": "tl_max({0}, {1})"},
                "exp": {**C_MATH_OPS["exp"], "float32": "tl_expf({0})"},
                "exp2": {**C_MATH_OPS["exp2"], "float32": "tl_exp2f({0})"},
                "sigmoid": {**C_MATH_OPS["sigmoid"], "float32": "(1.0f / (1.0f + tl_expf(-({0}))))"}}
    atomic_ops = {
        **{(kind, dtype): f"tl_atomic_{kind}_{short}({{0}}, {{1}}, {{order}})"
           for kind in ("add", "max", "min", "store") for dtype, short in _ATOMIC_TYPES.items()},
        **{("or", dtype): f"tl_atomic_or_{short}({{0}}, {{1}}, {{order}})"
           for dtype, short in _ATOMIC_TYPES.items() if not dtype.startswith(("float", "bfloat"))},
        **{("load", dtype): f"tl_atomic_load_{short}({{0}}, {{order}})" for dtype, short in _ATOMIC_TYPES.items()},
    }
    memory_orders = ("__ATOMIC_RELAXED", "__ATOMIC_CONSUME", "__ATOMIC_ACQUIRE", "__ATOMIC_RELEASE",
                     "__ATOMIC_ACQ_REL", "__ATOMIC_SEQ_CST")
    calling_convention = ("int32_t entry(buffer pointers and scalars in PrimFunc order); "
                          "returns 0, or 1 after a failed device assertion (see tl_cpu_last_error)")

    BLOCK_LOCAL_SCOPES = ("shared.dyn", "shared", "local", "local.fragment", "local.var")

    # -- launch ---------------------------------------------------------------------------

    def check_launch(self, launch) -> None:
        for tag in THREAD_TAGS:
            var = launch.vars.get(tag)
            if var is None:
                continue
            extent = launch.extents[tag]
            if isinstance(extent, tirx.IntImm) and extent.value == 1:
                continue
            if any(isinstance(e, ir.Var) and e.same_as(var) for e in iter_exprs(self.func.body)):
                raise CodegenError(
                    f"the kernel uses {tag} ({var.name}, extent {extent}), but the CPU backend runs a "
                    f"block as one thread of execution; the core's block-serial lowering must remove "
                    f"or emulate thread indices before codegen")

    def _reset(self) -> None:
        super()._reset()
        self.hoisted: dict = {}  # buffers allocated once per OpenMP thread (ordered set)
        self._grid_open = False
        self._simd_depth = 0
        self._in_block = False
        self._uses_block_label = False
        self._uses_kernel_label = False
        self.vector_typedefs: dict = {}

    def plan_allocations(self, allocs: list) -> None:
        """Keep small block-local arrays on the stack; move big ones to per-thread heap memory."""
        stack = []
        for stmt in allocs:
            info = buffer_info(stmt.buffer)
            if info.scope not in self.BLOCK_LOCAL_SCOPES:
                raise CodegenError(f"buffer {info.name!r} is allocated in scope {info.scope!r}; the CPU "
                                   f"backend places only {', '.join(self.BLOCK_LOCAL_SCOPES)}")
            size = info.const_size()
            nbytes = None if size is None else size * self.dtype_bytes(info.dtype)
            if nbytes is None or nbytes > STACK_ARRAY_LIMIT:
                self.hoisted[stmt.buffer] = None
            elif size > 1:
                stack.append((nbytes, stmt.buffer))
        total = sum(n for n, _ in stack)
        for nbytes, buf in sorted(stack, key=lambda item: -item[0]):
            if total <= STACK_TOTAL_LIMIT:
                break
            self.hoisted[buf] = None
            total -= nbytes

    def note_call(self, op_name: str, call) -> None:
        super().note_call(op_name, call)
        if op_name in ("tirx.call_extern", "tirx.call_pure_extern"):
            name = str(call.args[0].value)
            if name.startswith("tl_cpu_gemm_"):
                self.used_helpers.add("gemm")

    def kernel_prologue(self) -> None:
        if "assert" in self.used_helpers:
            self.emit("tl_cpu_begin();")
        if not any(tag in self.launch.extents for tag in self.BLOCK_TAGS_ZYX):
            self._open_hoisted()

    def kernel_epilogue(self) -> None:
        if not self._grid_open:
            self._close_hoisted()
        if self._uses_kernel_label:
            self.emit("tl_kernel_end:;")
        if "printf" in self.used_helpers:
            self.emit("fflush(stdout);")
        self.emit("return tl_cpu_status();" if "assert" in self.used_helpers else "return 0;")

    def _open_hoisted(self) -> None:
        for buf in self.hoisted:
            info = buffer_info(buf)
            name = self.buffer_names[buf] = self.names.get(buf)
            ctype = self.type_name(info.dtype)
            try:
                size = self.expr(self.analyzer.simplify(info.size_expr()))
            except CodegenError as err:
                raise CodegenError(f"block-local buffer {info.name!r} has shape {list(info.shape)}, "
                                   f"which depends on values known only inside a block ({err}); "
                                   f"its size must depend on kernel parameters only") from None
            self.emit(f"{ctype}* restrict {name} = ({ctype}*)tl_cpu_alloc(sizeof({ctype}) * ({size}));")

    def _close_hoisted(self) -> None:
        for buf in self.hoisted:
            self.emit(f"tl_cpu_free({self.buffer_names[buf]});")

    def visit_thread_extent(self, s) -> None:
        iv = s.node
        tag, var = str(iv.thread_tag), iv.var
        if tag in THREAD_TAGS:  # unused (checked by check_launch) or extent 1
            if var not in self.var_names:
                self.var_names[var] = self.names.get(var)
                self.emit(f"const {self.value_type_name(dtype_of(var))} {self.var_names[var]} = 0;")
            return self.visit(s.body)
        if self._grid_open:
            if var not in self.var_names:  # another variable for a block dimension already open
                name = self.var_names[var] = self.names.get(var)
                outer = self.var_names[self.launch.vars[tag]]
                self.emit(f"const {self.value_type_name(dtype_of(var))} {name} = {outer};")
            return self.visit(s.body)
        self._grid_open = True
        self._emit_grid(s.body)

    def _emit_grid(self, body) -> None:
        loops = []  # (name, C type, extent text), outermost first
        const_blocks, symbolic = 1, []
        for tag in self.BLOCK_TAGS_ZYX:
            if tag not in self.launch.extents:
                continue
            var, extent = self.launch.vars[tag], self.launch.extents[tag]
            name = self.var_names[var] = self.names.get(var)
            ctype = self.value_type_name(dtype_of(var))
            self.analyzer.bind(var, ir.Range.from_min_extent(0, extent), allow_override=True)
            if isinstance(extent, tirx.IntImm) and extent.value == 1:
                self.emit(f"const {ctype} {name} = 0;")
                continue
            text = self.expr(extent)
            if isinstance(extent, tirx.IntImm):
                const_blocks *= int(extent.value)
            else:
                grid_name = self.names.fresh(f"tl_grid_{tag[-1]}", internal=True)
                self.emit(f"const {ctype} {grid_name} = {text};")
                text = grid_name
                symbolic.append(grid_name)
            loops.append((name, ctype, text))
        parallel, condition = self._parallel_choice(body, const_blocks, symbolic, bool(loops))
        hoist = bool(self.hoisted)
        if hoist:
            if parallel:
                for line in _omp(f"#pragma omp parallel{condition}"):
                    self.emit(line)
            self.emit("{")
            self._depth += 1
            self._open_hoisted()
        if parallel:
            collapse = f" collapse({len(loops)})" if len(loops) > 1 else ""
            pragma = "#pragma omp for" if hoist else "#pragma omp parallel for"
            for line in _omp(f"{pragma}{collapse} schedule(static){'' if hoist else condition}"):
                self.emit(line)
        for name, ctype, text in loops:
            self.emit(f"for ({ctype} {name} = 0; {name} < {text}; ++{name}) {{")
            self._depth += 1
        if "assert" in self.used_helpers and loops:
            self.emit("if (tl_cpu_failed()) continue;")
        self._in_block = True
        self.visit(body)
        self._in_block = False
        if self._uses_block_label:
            self.emit("tl_block_end:;")
        for _ in loops:
            self._depth -= 1
            self.emit("}")
        if hoist:
            self._close_hoisted()
            self._depth -= 1
            self.emit("}")

    def _parallel_choice(self, body, const_blocks: int, symbolic: list, has_loops: bool):
        """Whether to spread blocks over OpenMP threads, and the `if(...)` clause deciding it
        at run time when the grid is symbolic. Starting a thread team costs microseconds, so
        a launch with little work (estimated from the loop extents) runs serially."""
        if not has_loops:
            return False, ""
        work = const_blocks * _estimate_work(body)
        if not symbolic:
            return (const_blocks > 1 and work >= PARALLEL_MIN_WORK), ""
        if work >= PARALLEL_MIN_WORK:
            return True, ""
        grid = " * ".join(f"(int64_t){name}" for name in symbolic)
        return True, f" if({grid} * {work} >= {PARALLEL_MIN_WORK})"

    # -- statements -----------------------------------------------------------------------

    def declare_buffer(self, info, stmt) -> None:
        if stmt.buffer in self.hoisted:
            if stmt.buffer not in self.buffer_names:
                raise CodegenError(f"block-local buffer {info.name!r} is too big for the stack but "
                                   f"is allocated outside the block loop")
            return  # allocated once per thread, before the block loop
        scope = "local" if info.scope in ("shared.dyn", "shared") else info.scope
        super().declare_buffer(replace(info, scope=scope), stmt)

    def enter_loop(self, s) -> None:
        if int(s.kind) == int(tirx.ForKind.VECTORIZED):
            self._simd_depth += 1

    def exit_loop(self, s) -> None:
        if int(s.kind) == int(tirx.ForKind.VECTORIZED):
            self._simd_depth -= 1

    # Integer division traps on the host (SIGFPE, which kills the caller's process) when the
    # divisor is 0, or -1 with the most negative dividend. A divisor that is not provably
    # positive goes through tl_cpu_divisor_*, which records the fault (the call then fails
    # like a device assertion, naming the line) and divides by 1 instead of trapping.
    def _div(self, e):
        return super()._div(self._checked_divisor(e))

    def _mod(self, e):
        return super()._mod(self._checked_divisor(e))

    def _floordiv(self, e):
        return super()._floordiv(self._checked_divisor(e))

    def _floormod(self, e):
        return super()._floormod(self._checked_divisor(e))

    _DIVISIONS = (tirx.Div, tirx.Mod, tirx.FloorDiv, tirx.FloorMod)

    def _analyze(self, body) -> None:
        super()._analyze(body)
        # a division that may trap fails the kernel like an assertion: reset and report the
        # status (decided before the prologue is printed)
        if any(isinstance(e, self._DIVISIONS) and self._integer_divisor_may_trap(e) for e in iter_exprs(body)):
            self.used_helpers.add("assert")

    def _integer_divisor_may_trap(self, e) -> bool:
        """An integer division whose divisor is not a constant other than 0 and -1."""
        base, lanes = split_lanes(self.value_dtype(dtype_of(e)))
        if lanes != 1 or not base.startswith(("int", "uint")):
            return False
        return not isinstance(e.b, tirx.IntImm) or int(e.b.value) in (0, -1)

    def _checked_divisor(self, e):
        """`e` with its divisor wrapped in tl_cpu_divisor_* when it may trap; else `e`."""
        if not self._integer_divisor_may_trap(e):
            return e
        if not isinstance(e.b, tirx.IntImm):
            try:
                if self.analyzer.can_prove(e.b > 0):
                    return e
            except Exception:  # noqa: BLE001 - unprovable: keep the check
                pass
        base = split_lanes(self.value_dtype(dtype_of(e)))[0]
        suffix = {"int64": "i64", "uint64": "u64", "uint32": "u32"}.get(base, "i32")
        self.used_helpers.add("assert")  # the kernel returns tl_cpu_status()
        call = tirx.call_extern(base, f"tl_cpu_divisor_{suffix}", e.a, e.b, ir.StringImm(self._where()))
        return type(e)(e.a, call)

    def _where(self) -> str:
        """`file:line` of the statement being printed, or the kernel's name."""
        found = source_of(SimpleNamespace(span=self._span))  # a T.macro's code carries a SequentialSpan
        return f"{found[0]}:{found[1]}" if found else self.entry

    def emit_assert(self, cond, message: str) -> None:
        where = self._where()
        if re.match(r"\S+:\d+: ", message):  # the core already put the source line in front
            where = self.entry
        blocks = []
        for tag in ("blockIdx.x", "blockIdx.y", "blockIdx.z"):
            var = self.launch.vars.get(tag)
            blocks.append(self.var_names[var] if self._in_block and var is not None and var in self.var_names else "0")
        self.emit(f"if (!({self.expr(cond)})) {{")
        with self.indented():
            self.emit(f"tl_cpu_fail({c_string_literal(where)}, {c_string_literal(message)}, {', '.join(blocks)});")
            if self._simd_depth == 0:  # no branch may leave an OpenMP simd loop
                if self._in_block:
                    self._uses_block_label = True
                    self.emit("goto tl_block_end;")
                else:
                    self._uses_kernel_label = True
                    self.emit("goto tl_kernel_end;")
        self.emit("}")

    def vector_type(self, base: str, lanes: int) -> str:
        """GCC vector extension types, declared on demand (unaligned-safe)."""
        ctype = self.type_name(base)
        name = f"tl_{base}x{lanes}"
        nbytes = self.dtype_bytes(base) * lanes
        self.vector_typedefs[name] = (f"typedef {ctype} {name} __attribute__((vector_size({nbytes}), "
                                      f"aligned({self.dtype_bytes(base)})));")
        return name

    def file_header(self) -> list[str]:
        head = super().file_header()
        if "gemm" in self.used_helpers:
            head.insert(head.index('#include "tl_cpu.h"') + 1, '#include "tl_cpu_gemm.h"')
        head[-1:-1] = sorted(self.vector_typedefs.values())
        return head
