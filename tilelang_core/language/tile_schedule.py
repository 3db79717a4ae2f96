"""Persistent tile schedulers: TileLang's `T.BaseTileScheduler` and `T.PersistentTileScheduler`.

A persistent kernel launches one block (a "worker") per processor and walks the tiles of an
`num_m_tiles x num_n_tiles` grid with a stride of `num_workers`:

    with T.Kernel(num_sms, threads=256) as block_id:
        sched = T.PersistentTileScheduler(T.ceildiv(M, bM), T.ceildiv(N, bN), num_workers=num_sms)
        sched.init(block_id)
        while sched.valid():
            bx, by = sched.m_idx, sched.n_idx      # this tile
            ...
            sched.next_tile()

The linear order is column-major (m fastest) or row-major, optionally in L2 panels of
`swizzle_size` tiles along the slow axis (a narrower last panel when it does not divide),
after grouping M into clusters of `cluster_size` rows (then `m_idx` is the cluster row).
State lives in four one-element local buffers the constructor allocates where it stands
(`stateful=False` allocates none and offers only `coord(tile_id)`); `init`, `next_tile`
write them, `m_idx`, `n_idx`, `linear_idx`, `current_iter` and `valid()` read them.
"""
from __future__ import annotations

from typing import Any

from tvm.tirx.script.builder import ir as _builder

from .allocate import alloc_local
from .misc import ceildiv

__all__ = ["BaseTileScheduler", "PersistentTileScheduler"]


class BaseTileScheduler:
    """State and traversal skeleton; a subclass decodes `linear_idx` in `update_current_idx`
    and sets `_total_tiles`."""

    _is_meta_class = True  # the parser binds `sched = T.PersistentTileScheduler(...)` as a Python object

    def __init__(self, stateful: bool = True, name: str | None = None) -> None:
        self._stateful = stateful
        self._name = name
        if stateful:
            self._m_idx = alloc_local((1,), "int32")
            self._n_idx = alloc_local((1,), "int32")
            self._linear_idx = alloc_local((1,), "int32")
            self._current_iter = alloc_local((1,), "int32")
        self._total_tiles: Any = 0

    def _state(self, buffer_name: str):
        if not self._stateful:
            raise RuntimeError(f"{type(self).__name__}(stateful=False) keeps no state; use coord(tile_id)")
        return getattr(self, buffer_name)

    @staticmethod
    def _store(buffer, value) -> None:
        _builder.buffer_store(buffer, value, [0])

    @property
    def m_idx(self):
        """The current tile's row (a cluster row when clustering)."""
        return self._state("_m_idx")[0]

    @property
    def n_idx(self):
        """The current tile's column."""
        return self._state("_n_idx")[0]

    @property
    def linear_idx(self):
        """This worker's position in the linear tile order."""
        return self._state("_linear_idx")[0]

    @property
    def current_iter(self):
        """How many tiles this worker has moved past (0 for its first)."""
        return self._state("_current_iter")[0]

    def update_current_idx(self, linear_idx) -> None:
        raise NotImplementedError(f"{type(self).__name__}.update_current_idx: a subclass decodes the linear index")

    def init(self, linear_init) -> None:
        """Start at tile `linear_init` of the linear order."""
        self._store(self._state("_current_iter"), 0)
        self._store(self._state("_linear_idx"), linear_init)
        self.update_current_idx(self._linear_idx[0])

    def next_tile(self, step) -> None:
        """Move `step` tiles along the linear order."""
        self._store(self._state("_current_iter"), self._current_iter[0] + 1)
        self._store(self._state("_linear_idx"), self._linear_idx[0] + step)
        self.update_current_idx(self._linear_idx[0])

    def valid(self):
        """Whether the current tile is inside the grid."""
        return self._state("_linear_idx")[0] < self._total_tiles


def _default_workers(cluster_size: int) -> int:
    from tilelang_core.plugin import get_plugin_manager

    processors = get_plugin_manager().parse_target(None).capabilities.processor_count
    if not processors:
        raise ValueError("T.PersistentTileScheduler: the default target declares no processor count; pass "
                         "num_workers= (the blocks the kernel launches)")
    return processors // cluster_size


class PersistentTileScheduler(BaseTileScheduler):
    """Grid-strided tiles with L2 swizzle panels and clustering along M (see the module)."""

    def __init__(self, num_m_tiles, num_n_tiles, num_workers=None, swizzle_size: int = 1,
                 column_major: bool = True, cluster_size: int = 1, stateful: bool = True,
                 name: str | None = None) -> None:
        for what, value in (("swizzle_size", swizzle_size), ("cluster_size", cluster_size)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"T.PersistentTileScheduler: {what} must be an int >= 1, got {value!r}")
        super().__init__(stateful=stateful, name=name)
        self.cluster_size = cluster_size
        self.num_workers = _default_workers(cluster_size) if num_workers is None else num_workers
        self.swizzle_size = swizzle_size
        self._column_major = column_major
        m_clusters = ceildiv(num_m_tiles, cluster_size)
        self._total_tiles = m_clusters * num_n_tiles
        self._primary, self._secondary = (m_clusters, num_n_tiles) if column_major else (num_n_tiles, m_clusters)

    def coord(self, tile_id):
        """(m_idx, n_idx) of linear tile `tile_id` (expressions; no state touched)."""
        primary, secondary, swizzle = self._primary, self._secondary, self.swizzle_size
        group = tile_id // (primary * swizzle)
        base = group * swizzle
        width = _builder.max(1, _builder.min(swizzle, secondary - base))  # a narrower last panel
        in_group = tile_id - group * (primary * swizzle)
        fast, slow = in_group // width, base + in_group % width
        return (fast, slow) if self._column_major else (slow, fast)

    def update_current_idx(self, linear_idx) -> None:
        m, n = self.coord(linear_idx)
        self._store(self._m_idx, m)
        self._store(self._n_idx, n)

    def init(self, worker_id) -> None:
        """Start worker `worker_id` at its first tile."""
        super().init(worker_id)

    def next_tile(self) -> None:
        """Move `num_workers` tiles along the linear order."""
        super().next_tile(self.num_workers)
