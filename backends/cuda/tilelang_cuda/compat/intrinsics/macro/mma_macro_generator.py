"""TileLang's `tilelang.cuda.intrinsics.macro.mma_macro_generator`: `TensorCoreIntrinEmitter`,
which writes a warp-level GEMM by hand for kernels that manage their own registers.

A kernel allocates per-thread arrays (`T.alloc_local`) and calls, inside `T.Kernel`:

    emitter.ldmatrix_a(A_local, A_shared, ki)   # this warp's A rows for k step ki -> registers
    emitter.ldmatrix_b(B_local, B_shared, ki)   # this warp's B columns for k step ki
    emitter.mma(A_local, B_local, C_local)      # C_local += A * B, one mma.sync per 16 x 8 tile
    emitter.stmatrix(C_local, C_shared)         # the accumulators -> shared (or global) memory

Each call emits plain per-thread TIR on the spot (loops, `T.ptx_ldmatrix`, `T.ptx_mma`, buffer
stores), indexed by the kernel's thread var; the core passes it through and the CUDA printer
prints the calls as `tl_cuda_mma.h` helpers. The block's warps tile the block's C as
`block_row_warps x block_col_warps`; a warp owns `warp_row_tiles x warp_col_tiles` of C, cut
into `warp_rows x warp_cols` instruction tiles of 16 x `n_dim` (`n_dim` 16: two m16n8
instructions side by side; 8 when `warp_col_tiles` is an odd multiple of 8). The k step of an
instruction is `micro_size_k`: 16 for 16-bit types, 32 for int8.

Register contents follow the PTX ISA ("Matrix fragments for mma.m16n8k16 / m16n8k32"), with
g = lane // 4 and t = lane % 4: A holds rows g and g + 8, B holds column g, and accumulator
element v of a 16 x 8 tile is (g + 8 * (v // 2), 2 t + v % 2). ldmatrix fills the registers
from shared memory (`.trans` for 16-bit operands stored the other way round); 8-bit operands
stored k-major (A transposed, B not transposed) are gathered element by element, since
`.trans` moves 16-bit elements.

Supported: A and B float16 (accumulating in float32 or float16), bfloat16 (float32), int8
(int32); A row-major or transposed, B transposed or not; `warp_row_tiles` a multiple of 16 and
`warp_col_tiles` of 8; `chunk` a multiple of the k step. Registers come from `T.alloc_local`.
"""
from __future__ import annotations

from typing import Any

import tvm
from tvm import ir, tirx
from tvm.tirx.script.builder import ir as _builder

from tilelang_core import language as T

from ....language import ptx_ldmatrix, ptx_mma

__all__ = ["TensorCoreIntrinEmitter", "TensorCoreIntrinEmitterWithLadderTransform", "TransformKind"]

# (A, B, accumulator) -> the mma.sync operand spellings and shape
_FORMS = {
    ("float16", "float16", "float32"): ("m16n8k16", "fp16", "fp32"),
    ("float16", "float16", "float16"): ("m16n8k16", "fp16", "fp16"),
    ("bfloat16", "bfloat16", "float32"): ("m16n8k16", "bf16", "fp32"),
    ("int8", "int8", "int32"): ("m16n8k32", "int8", "int32"),
}

_LOCAL_SCOPES = ("local",)


def _name(dtype: Any) -> str:
    return str(T.to_dtype(dtype))


def _bits(dtype: str) -> int:
    return tvm.runtime.DataType(dtype).bits


def _base(operand: Any, what: str) -> tuple[Any, list]:
    """(buffer, indices of its first element) of a buffer, a region `S[0:64, 0:32]` or an
    element `S[stage, 0, 0]` (the last two dims are the tile)."""
    if tirx.is_buffer_var(operand):
        return operand, [tirx.IntImm("int32", 0) for _ in operand.shape]
    if isinstance(operand, ir.TensorRegion):
        return operand.source, [r.min for r in operand.region]
    if isinstance(operand, ir.TensorLoad) and tirx.is_buffer_var(operand.source):
        return operand.source, list(operand.indices)
    raise TypeError(f"TensorCoreIntrinEmitter.{what}: expected a shared buffer, a region of one or an "
                    f"element of one, got {type(operand).__name__} {operand}")


def _scope(buf: Any) -> str:
    return str(buf.ty.storage_scope)


class TensorCoreIntrinEmitter:
    """TileLang's emitter of mma.sync GEMMs (see the module docstring); the constructor takes
    TileLang's arguments, the attributes hold TileLang's derived sizes."""

    M_DIM = 16
    n_dim = 16
    WARP_SIZE = 32
    dtype_abbrv = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "int8": "int8", "int32": "int32"}
    is_m_first = False

    def __init__(
        self,
        a_dtype: Any = "float16",
        b_dtype: Any = "float16",
        accum_dtype: Any = "float16",
        a_transposed: bool = False,
        b_transposed: bool = False,
        block_row_warps: int = 2,
        block_col_warps: int = 2,
        warp_row_tiles: int = 8,
        warp_col_tiles: int = 8,
        chunk: int = 16,
        reduce_k: int = 1,
        num_elems_per_byte: int = 1,
        is_m_first: bool | None = False,
        thread_var: Any = None,
    ) -> None:
        self.a_dtype, self.b_dtype, self.accum_dtype = _name(a_dtype), _name(b_dtype), _name(accum_dtype)
        form = _FORMS.get((self.a_dtype, self.b_dtype, self.accum_dtype))
        if form is None:
            supported = ", ".join(f"{a} x {b} -> {c}" for a, b, c in _FORMS)
            raise ValueError(f"TensorCoreIntrinEmitter: a_dtype={self.a_dtype}, b_dtype={self.b_dtype}, "
                             f"accum_dtype={self.accum_dtype} is not supported; supported: {supported}")
        self.mma_prefix, operand, self.accum_dtype_abbrv = form
        self.a_dtype_abbrv = self.b_dtype_abbrv = operand
        self.a_transposed, self.b_transposed = bool(a_transposed), bool(b_transposed)
        self.block_row_warps, self.block_col_warps = int(block_row_warps), int(block_col_warps)
        self.warp_row_tiles, self.warp_col_tiles = int(warp_row_tiles), int(warp_col_tiles)
        self.chunk = int(chunk)
        self.k_dim = 256 // _bits(self.a_dtype)  # 16 for 16-bit types, 32 for int8
        if self.chunk < self.k_dim or self.chunk % self.k_dim:
            raise ValueError(f"TensorCoreIntrinEmitter: chunk={self.chunk} must be a multiple of the "
                             f"{self.mma_prefix} k step {self.k_dim} for {self.a_dtype}")
        if self.warp_row_tiles < 16 or self.warp_row_tiles % 16:
            raise ValueError(f"TensorCoreIntrinEmitter: warp_row_tiles={self.warp_row_tiles} must be a "
                             f"positive multiple of 16 (the m of mma.sync)")
        if self.warp_col_tiles < 8 or self.warp_col_tiles % 8:
            raise ValueError(f"TensorCoreIntrinEmitter: warp_col_tiles={self.warp_col_tiles} must be a "
                             f"positive multiple of 8 (the n of mma.sync)")
        self.n_dim = 16 if self.warp_col_tiles % 16 == 0 else 8
        self.micro_size_x, self.micro_size_y, self.micro_size_k = self.M_DIM, self.n_dim, self.k_dim
        self.warp_rows = self.warp_row_tiles // self.M_DIM
        self.warp_cols = self.warp_col_tiles // self.n_dim
        self.local_size_a = self.M_DIM * self.k_dim // self.WARP_SIZE
        self.local_size_b = self.n_dim * self.k_dim // self.WARP_SIZE
        self.local_size_out = self.M_DIM * self.n_dim // self.WARP_SIZE
        if is_m_first is not None:
            self.is_m_first = bool(is_m_first)
        self.reduce_k = int(reduce_k)
        self.threads = self.WARP_SIZE * self.block_row_warps * self.block_col_warps * self.reduce_k
        self.num_elems_per_byte = num_elems_per_byte
        self.thread_var = thread_var

    # -- threads ----------------------------------------------------------------------------

    def get_thread_binding(self) -> Any:
        """The thread var the emitted code is indexed by: `thread_var`, else the kernel's."""
        return self.thread_var if self.thread_var is not None else T.get_thread_binding()

    def extract_thread_binding(self, thread_id: Any, is_m_first: bool | None = None) -> tuple[Any, Any, Any]:
        """(lane, warp_n, warp_m) of `thread_id`: warps numbered m first (`is_m_first`, warp_n
        varies fastest) or, by default, with warp_m varying fastest."""
        m_first = self.is_m_first if is_m_first is None else is_m_first
        lane, warp = thread_id % self.WARP_SIZE, thread_id // self.WARP_SIZE
        if m_first:
            return lane, warp % self.block_col_warps, (warp // self.block_col_warps) % self.block_row_warps
        return lane, (warp // self.block_row_warps) % self.block_col_warps, warp % self.block_row_warps

    # -- loads ------------------------------------------------------------------------------

    def _ldmatrix_offsets(self, lane: Any, second_right: bool, dtype: str) -> tuple[Any, Any]:
        """(row, column) in the stored tile of the row address lane `lane` gives ldmatrix.x4
        (lanes 8r .. 8r + 7 address the 8 rows of the matrix of register r).

        The four 8 x 16-byte matrices of a register set are (rows 0-7, 8-15) x (16-byte
        columns 0, 1) of the stored tile. For A not transposed and B not transposed (read with
        .trans), register 1 is the matrix below register 0: lanes 0-15 walk rows 0-15 of column
        0, lanes 16-31 of column 1. For A transposed (read with .trans) and B transposed,
        register 1 is the matrix right of register 0 (`second_right`): lanes 8-15 take column
        1 of rows 0-7, lanes 16-31 rows 8-15."""
        step = 128 // _bits(dtype)  # elements in 16 bytes
        if not second_right:
            return lane % 16, (lane // 16) * step
        return lane % 8 + (lane // 16) * 8, ((lane // 8) % 2) * step

    def ldmatrix_a(self, A_local_buf: Any, A_shared_buf: Any, ki: Any, rk: Any = 0) -> None:  # noqa: N803
        """This warp's A tiles for k step `ki` (of chunk `rk`) from shared memory into
        `A_local_buf`: `warp_rows` sets of `local_size_a` elements."""
        self._check_local(A_local_buf, "ldmatrix_a", self.warp_rows * self.local_size_a)
        buf, base = _base(A_shared_buf, "ldmatrix_a")
        lead, base_r, base_c = base[:-2], base[-2], base[-1]
        lane, _, warp_m = self.extract_thread_binding(self.get_thread_binding())
        trans = self.a_transposed
        wk = rk * self.chunk + ki * self.micro_size_k
        with T.unroll(self.warp_rows) as i:
            wi = warp_m * self.warp_row_tiles + i * self.micro_size_x
            dst = i * self.local_size_a
            if _bits(self.a_dtype) == 16 or not trans:
                row, col = self._ldmatrix_offsets(lane, trans, self.a_dtype)
                src = buf[(*lead, base_r + wk + row, base_c + wi + col)] if trans else \
                    buf[(*lead, base_r + wi + row, base_c + wk + col)]
                _builder.evaluate(ptx_ldmatrix(trans, 4, T.access_ptr(src, "r"), T.access_ptr(A_local_buf[dst], "w")))
            else:  # int8 stored k-major: element j of the lane is (m, k) below
                g, t = lane // 4, lane % 4
                with T.unroll(self.local_size_a) as j:
                    m = g + 8 * ((j // 4) % 2)
                    k = 4 * t + j % 4 + 16 * (j // 8)
                    _builder.buffer_store(A_local_buf, buf[(*lead, base_r + wk + k, base_c + wi + m)], [dst + j])

    def ldmatrix_b(self, B_local_buf: Any, B_shared_buf: Any, ki: Any, rk: Any = 0) -> None:  # noqa: N803
        """This warp's B tiles for k step `ki` (of chunk `rk`) into `B_local_buf`: `warp_cols`
        sets of `local_size_b` elements (for n_dim 16, columns 0-7 then 8-15)."""
        self._check_local(B_local_buf, "ldmatrix_b", self.warp_cols * self.local_size_b)
        buf, base = _base(B_shared_buf, "ldmatrix_b")
        lead, base_r, base_c = base[:-2], base[-2], base[-1]
        lane, warp_n, _ = self.extract_thread_binding(self.get_thread_binding())
        k_major = not self.b_transposed  # stored (k, n)
        count = 4 if self.n_dim == 16 else 2
        wk = rk * self.chunk + ki * self.micro_size_k
        with T.unroll(self.warp_cols) as i:
            wi = warp_n * self.warp_col_tiles + i * self.micro_size_y
            dst = i * self.local_size_b
            if _bits(self.b_dtype) == 16 or not k_major:
                # .x2 reads the addresses of lanes 0-15 only; the others repeat them in bounds
                row, col = self._ldmatrix_offsets(lane if count == 4 else lane % 16, not k_major, self.b_dtype)
                src = buf[(*lead, base_r + wk + row, base_c + wi + col)] if k_major else \
                    buf[(*lead, base_r + wi + row, base_c + wk + col)]
                _builder.evaluate(ptx_ldmatrix(k_major, count, T.access_ptr(src, "r"),
                                               T.access_ptr(B_local_buf[dst], "w")))
            else:  # int8 stored k-major: element j of the lane is (k, n) below
                g, t = lane // 4, lane % 4
                with T.unroll(self.local_size_b) as j:
                    n = g + 8 * (j // 8)
                    k = 4 * t + j % 4 + 16 * ((j % 8) // 4)
                    _builder.buffer_store(B_local_buf, buf[(*lead, base_r + wk + k, base_c + wi + n)], [dst + j])

    # -- multiply ---------------------------------------------------------------------------

    @property
    def mma_num_inst_m(self) -> int:
        """Instruction tiles of a warp along M."""
        return self.warp_rows

    @property
    def mma_num_inst_n(self) -> int:
        """Instruction tiles of a warp along N."""
        return self.warp_cols

    def mma(self, A_local_buf: Any, B_local_buf: Any, C_local_buf: Any, k_inner: Any = 0) -> None:  # noqa: N803
        """`C_local += A_local * B_local` over the warp's `warp_rows x warp_cols` tiles."""
        with T.unroll(self.warp_rows) as i:
            with T.unroll(self.warp_cols) as j:
                self.mma_atom(A_local_buf, B_local_buf, C_local_buf, i, j, k_inner)

    def mma_atom(self, A_local_buf: Any, B_local_buf: Any, C_local_buf: Any, inst_m_idx: Any,  # noqa: N803
                 inst_n_idx: Any, k_inner: Any = 0) -> None:
        """The mma.sync instructions of tile (`inst_m_idx`, `inst_n_idx`): one 16 x n_dim tile
        of C (two m16n8 instructions for n_dim 16). Local registers hold one k step, so
        `k_inner` moves nothing."""
        self._check_local(A_local_buf, "mma", self.warp_rows * self.local_size_a)
        self._check_local(B_local_buf, "mma", self.warp_cols * self.local_size_b)
        self._check_local(C_local_buf, "mma", self.warp_rows * self.warp_cols * self.local_size_out)
        a_offset = inst_m_idx * self.local_size_a
        b_offset = inst_n_idx * self.local_size_b
        c_offset = (inst_m_idx * self.warp_cols + inst_n_idx) * self.local_size_out
        halves = 2 if self.n_dim == 16 else 1
        for h in range(halves):  # columns 0-7, then 8-15: B and C halves
            _builder.evaluate(ptx_mma(
                self.accum_dtype, self.mma_prefix, "row", "col", self.a_dtype_abbrv, self.b_dtype_abbrv,
                self.accum_dtype_abbrv, A_local_buf.data, a_offset, B_local_buf.data,
                b_offset + h * (self.local_size_b // halves), C_local_buf.data,
                c_offset + h * (self.local_size_out // halves), False))

    # -- store ------------------------------------------------------------------------------

    def stmatrix(self, C_local_buf: Any, C_buf: Any, pid_m: Any = None, pid_n: Any = None) -> None:  # noqa: N803
        """The accumulators into `C_buf`: a 4-D shared tile (tile row, tile column, 16, n_dim)
        or a 2-D one; with `pid_m` and `pid_n`, a 2-D global C at block (pid_m, pid_n)."""
        self._check_local(C_local_buf, "stmatrix", self.warp_rows * self.warp_cols * self.local_size_out)
        dims = len(C_buf.shape)
        if dims not in (2, 4):
            raise ValueError(f"TensorCoreIntrinEmitter.stmatrix: C_buf has {dims} dims; it must be 2-D "
                             f"(rows, columns) or 4-D (tile row, tile column, {self.M_DIM}, {self.n_dim})")
        on_global = pid_m is not None and pid_n is not None
        if on_global and dims != 2:
            raise ValueError("TensorCoreIntrinEmitter.stmatrix: with pid_m/pid_n, C_buf must be the 2-D global C")
        lane, warp_n, warp_m = self.extract_thread_binding(self.get_thread_binding())
        tiles_m, tiles_n = self.block_row_warps * self.warp_rows, self.block_col_warps * self.warp_cols
        g, t = lane // 4, lane % 4
        with T.unroll(self.warp_rows) as i:
            with T.unroll(self.warp_cols) as j:
                with T.unroll(self.local_size_out) as v:
                    row = g + 8 * ((v % 4) // 2)
                    col = 2 * t + v % 2 + 8 * (v // 4)
                    tile_m, tile_n = warp_m * self.warp_rows + i, warp_n * self.warp_cols + j
                    if on_global:
                        tile_m, tile_n = pid_m * tiles_m + tile_m, pid_n * tiles_n + tile_n
                    if dims == 4:
                        index = [tile_m, tile_n, row, col]
                    else:
                        index = [tile_m * self.M_DIM + row, tile_n * self.n_dim + col]
                    value = C_local_buf[(i * self.warp_cols + j) * self.local_size_out + v]
                    if str(C_buf.ty.dtype) != self.accum_dtype:
                        value = tirx.Cast(str(C_buf.ty.dtype), value)
                    _builder.buffer_store(C_buf, value, index)

    # -- checks -----------------------------------------------------------------------------

    def _check_local(self, buf: Any, what: str, size: int) -> None:
        if not tirx.is_buffer_var(buf):
            raise TypeError(f"TensorCoreIntrinEmitter.{what}: registers must be a buffer from T.alloc_local, "
                            f"got {type(buf).__name__} {buf}")
        if _scope(buf) not in _LOCAL_SCOPES:
            raise ValueError(f"TensorCoreIntrinEmitter.{what}: {buf.name} has scope {_scope(buf)!r}; this "
                             f"emitter indexes registers per thread, so allocate them with T.alloc_local")
        elements = 1
        for extent in buf.shape:
            elements = elements * int(extent) if isinstance(extent, (int, tirx.IntImm)) else None
            if elements is None:
                return
        if elements < size:
            raise ValueError(f"TensorCoreIntrinEmitter.{what}: {buf.name} holds {elements} elements, the warp "
                             f"tiles need {size}")


# TileLang keeps the ladder-transform emitter in this module; it builds on the one above
from .ladder_transform import TensorCoreIntrinEmitterWithLadderTransform, TransformKind  # noqa: E402


# Emitters TileLang's older revisions had and its pinned one (a35008a42) no longer has: a
# program that imports one fails under TileLang as well, so it is named with that reason here
# instead of Python's bare "cannot import name".
_REMOVED_UPSTREAM = {
    "INT4TensorCoreIntrinEmitter": "TileLang removed it in PR #2063 ('Support int4 T.gemm'): an int4 GEMM is "
                                   "a T.gemm of int4 operands now",
    "INT4TensorCoreIntrinEmitterWithLadderTransform": "TileLang removed it in PR #2063 with "
                                                      "INT4TensorCoreIntrinEmitter",
}


def __getattr__(name: str) -> Any:
    if name in _REMOVED_UPSTREAM:
        # an ImportError (not AttributeError) so that `from ... import NAME` shows this message
        raise ImportError(f"{name} is not in TileLang's tilelang.cuda.intrinsics.macro.mma_macro_generator at the "
                          f"revision tilelang-core follows (a35008a42): {_REMOVED_UPSTREAM[name]}; a program "
                          f"importing it fails under that TileLang too", name=name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
