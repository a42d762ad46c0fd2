"""Model scores of a whole split, whole or streamed (never N × L at once when too large).

A split's logits are ``(G, N, L)``: 20,000 validation rows × 50,000 labels are 4 GB per
member.  Up to :data:`spmlkit.metrics.DENSE_SCORE_BYTES` they are computed whole (the
path every committed table was made with); above it a :class:`ScoreView` stands in for
them: it computes row chunks ``(G, b, L)`` on demand, as often as asked (a metric that
needs two passes recomputes rather than stores), so memory stays O(chunk × L).  The
metrics (:func:`spmlkit.metrics.stream_rank_counts`), the selection criteria
(:func:`spmlkit.training.prepare.make_evaluator`) and the test scores of a run accept
either.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
import torch

from ..errors import ConfigError
from ..metrics import DENSE_SCORE_BYTES
from ..sparse_labels import dense_limit_bytes


class ScoreView:
    """Row chunks of a split's ``(G, N, L)`` logits, computed on demand.

    ``produce()`` yields ``(start_row, (G, b, L) tensor)`` in row order, recomputing every
    time it is called.  :meth:`dense` builds the whole tensor (refused above the dense
    limit of :mod:`spmlkit.sparse_labels`, like every other ``N × L`` allocation)."""

    def __init__(self, produce: Callable[[], Iterator[tuple[int, torch.Tensor]]], shape: tuple[int, int, int]):
        self._produce = produce
        self.shape = tuple(int(v) for v in shape)

    def chunks(self):
        for start, block in self._produce():
            yield start, block

    def member(self, g: int) -> "ScoreView":
        """The view of member ``g`` alone (``(1, b, L)`` chunks)."""
        G, n, L = self.shape
        return ScoreView(lambda: ((s, b[g:g + 1]) for s, b in self._produce()), (1, n, L))

    def dense(self) -> torch.Tensor:
        G, n, L = self.shape
        if G * n * L * 4 > dense_limit_bytes():
            raise ConfigError(f"refusing to hold {G} x {n:,} x {L:,} scores ({G * n * L * 4 / 2 ** 30:.1f} GiB) "
                              "at once: this step should stream them (SPML_DENSE_LIMIT_MB raises the limit)")
        out = None
        for start, block in self._produce():
            if out is None:
                out = torch.empty(G, n, L, dtype=block.dtype, device=block.device)
            out[:, start:start + block.shape[1]] = block
        return out if out is not None else torch.zeros(G, 0, L, device="cpu")

    def __repr__(self) -> str:
        return f"ScoreView{self.shape}"


def as_logits(scores) -> torch.Tensor:
    """A logits tensor from a tensor or a :class:`ScoreView` (materialised: small data only)."""
    return scores.dense() if isinstance(scores, ScoreView) else scores


def needs_streaming(n_members: int, n_rows: int, n_labels: int) -> bool:
    """True when ``(G, N, L)`` float32 logits exceed :data:`~spmlkit.metrics.DENSE_SCORE_BYTES`."""
    return n_members * n_rows * n_labels * 4 > DENSE_SCORE_BYTES


def numpy_chunks(view: ScoreView, g: int | None = None):
    """``(start, (b, L) float32 array)`` of member ``g`` (or ``(G, b, L)`` for None), on the host."""
    for start, block in view.chunks():
        a = block.detach().cpu().numpy()
        yield start, (a if g is None else a[g])


def top_labels(view: ScoreView, k: int, g: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the ``k`` highest-scoring labels of member ``g`` (``(N, k)`` int64, best
    first; ties: lower label index first) and their scores, by partial selection per chunk
    (``np.argpartition``, O(L) per row), never a full sort."""
    G, n, L = view.shape
    k = min(int(k), L)
    idx = np.zeros((n, k), dtype=np.int64)
    val = np.zeros((n, k), dtype=np.float32)
    for start, a in numpy_chunks(view, g):
        i, v = top_k_rows(a, k)
        idx[start:start + len(a)], val[start:start + len(a)] = i, v
    return idx, val


def top_k_rows(a: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best columns of every row of ``a`` ``(b, L)`` in decreasing score, ties
    broken by lower column index (as a stable descending sort), in O(L + k log k) per row."""
    b, L = a.shape
    k = min(int(k), L)
    if k == 0:
        return np.zeros((b, 0), dtype=np.int64), np.zeros((b, 0), dtype=a.dtype)
    if k < L:
        kth = np.partition(a, L - k, axis=1)[:, L - k]  # the k-th largest value of each row
        cand = a >= kth[:, None]
        # every candidate above the k-th value, then the tied ones in column order
        rows, cols = np.nonzero(cand)
        vals = a[rows, cols]
        order = np.lexsort((cols, -vals, rows))
        rows, cols, vals = rows[order], cols[order], vals[order]
        first = np.searchsorted(rows, np.arange(b))
        pos = np.arange(rows.size) - np.repeat(first, np.bincount(rows, minlength=b))
        keep = pos < k
        idx = cols[keep].reshape(b, k).astype(np.int64)
        return idx, vals[keep].reshape(b, k)
    order = np.argsort(-a, axis=1, kind="stable")
    return order.astype(np.int64), np.take_along_axis(a, order, axis=1)
