"""The linear setting (Cole et al. §6): a head trained on fixed, cached features.

Features live in one tensor, or stay memory-mapped when larger than
``max_memory_mb`` (out of core: only the rows of a batch, or one bounded chunk, are
ever read); batches are gathered by index with one ``index_select`` for all members,
never assembled item by item.  A grid of learning rates × seeds for one method and
batch size trains as one stacked model (:mod:`spmlkit.models.heads`), when the
method's components allow it, with results equal to separate runs (tested bit for
bit).  See docs/scale.md for the speed measurements.
"""
from __future__ import annotations

import contextlib
import math
import mmap
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..config import TrainConfig
from ..device import DEVICE_MEMORY_FRACTION, free_memory_bytes, plan_device_features, to_cpu
from ..data.bundle import Bundle
from ..errors import ConfigError
from ..methods.base import Batch, Method, TrainContext
from ..methods.recipe import is_recipe
from ..metrics import (average_precision_from_counts, evaluate_scores, mean_auc, mean_average_precision,
                       roc_auc_from_counts, stream_rank_counts, streamed_observed_scores)
from ..sparse_labels import as_sparse
from ..models.heads import build_head, select_members
from . import distributed
from .background import attach_background
from .loop import fit
from .optim import StackedAdam
from .prepare import RunParts, build_run_method, is_streamed, prepare_run
from .result import RunResult
from .scores import ScoreView, needs_streaming

CHUNK_ROWS = 8192  # rows per evaluation chunk of in-memory features
STREAM_CHUNK_BYTES = 8 * 2 ** 20  # logits per chunk when a split's scores are streamed (ScoreView)
CHUNK_BYTES = 16 * 2 ** 20  # bytes per chunk read from a memory map (at most max_memory_mb / 4)
STAT_CHUNK_BYTES = 4 * 2 ** 20  # float64 bytes per chunk of the standardisation statistics


class FeatureStore:
    """Row access to an ``(N, D)`` feature array with optional standardisation.

    In memory (one float32 tensor, standardised once, in place) when the array is at
    most ``max_bytes``; otherwise the array stays memory-mapped and only the requested
    rows (a batch) or one chunk of at most ``min(CHUNK_BYTES, max_bytes / 4)`` bytes is
    ever read.  ``peak_buffer_bytes`` records the largest feature buffer this store
    allocated (the whole array when in memory), so a memory cap can be checked.

    ``device``: rows are returned on it.  Features standardised on the host
    (the CPU's arithmetic, so every device trains on the same numbers) are kept on the
    device when ``keep_on_device`` (the linear trainer decides for all splits at once with
    :func:`spmlkit.device.plan_device_features`: one budget for the features and the
    method state) or, when it is None, when they take at most ``device_fraction`` of its
    free memory (:data:`spmlkit.device.DEVICE_MEMORY_FRACTION`); otherwise batches are
    gathered on the host into pinned staging buffers (from the in-memory tensor or the
    memory map) and copied without blocking, one step ahead
    (:meth:`LinearLearner.batches`).  The host array itself is not pinned (pinning all
    of it would lock that much host memory for nothing: the staging buffers serve)."""

    def __init__(self, array: np.ndarray, *, mean: np.ndarray | None = None, std: np.ndarray | None = None,
                 max_bytes: float | None = None, device: torch.device | str = "cpu",
                 device_fraction: float | None = None, keep_on_device: bool | None = None):
        self.array = array
        self.n, self.dim = array.shape
        self.device = torch.device(device)
        self.mean = None if mean is None else torch.as_tensor(mean, dtype=torch.float32, device="cpu")
        self.std = None if std is None else torch.as_tensor(std, dtype=torch.float32, device="cpu")
        nbytes = self.n * self.dim * 4
        self.in_memory = max_bytes is None or nbytes <= max_bytes
        self.peak_buffer_bytes = 0
        self.on_device = self.device.type == "cpu"  # rows already where they are used
        self._staging: list = []
        if self.in_memory:
            self.tensor = self._standardize_(_load_released(array))
            self._note(self.tensor)
            self.chunk_rows = CHUNK_ROWS
            if self.device.type != "cpu":
                if keep_on_device is None:
                    free = free_memory_bytes(self.device)
                    frac = DEVICE_MEMORY_FRACTION if device_fraction is None else device_fraction
                    keep_on_device = free is None or nbytes <= frac * free
                if keep_on_device:
                    self.tensor = self.tensor.to(self.device)
                    self.on_device = True
        else:
            self.tensor = None
            budget = CHUNK_BYTES if max_bytes is None else min(CHUNK_BYTES, max_bytes / 4)
            self.chunk_rows = max(1, int(budget // (4 * max(self.dim, 1))))

    def __len__(self) -> int:
        return self.n

    def _note(self, t: torch.Tensor) -> None:
        self.peak_buffer_bytes = max(self.peak_buffer_bytes, t.numel() * t.element_size())

    def _standardize_(self, x: torch.Tensor) -> torch.Tensor:
        """Standardise a freshly allocated float32 buffer in place."""
        if self.mean is not None:
            x.sub_(self.mean).div_(self.std)
        return x

    def gather(self, idx: torch.Tensor) -> torch.Tensor:
        """Rows ``idx`` (any shape) -> ``(*idx.shape, D)`` on the store's device.  Rows kept
        on the host are copied through a pinned staging buffer without blocking."""
        if self.in_memory and self.on_device:
            return self.tensor.index_select(0, idx.to(self.tensor.device).reshape(-1)).view(*idx.shape, self.dim)
        rows = self._host_rows(idx if idx.device.type == "cpu" else idx.cpu())  # the learner passes host indices
        return self._to_device(rows).view(*idx.shape, self.dim)

    def _to_device(self, rows: torch.Tensor) -> torch.Tensor:
        """Host rows -> the device: through one of two pinned staging buffers (a buffer is
        reused only after its previous copy finished, checked with an event), so the
        copy overlaps the computation of the step before."""
        if self.device.type != "cuda":
            return rows.to(self.device)
        if not self._staging:
            self._staging = [[None, None], [None, None]]  # [pinned buffer, event]
            self._turn = 0
        slot = self._staging[self._turn]
        self._turn ^= 1
        if slot[1] is not None:
            slot[1].synchronize()  # waits for a copy issued two steps ago, never for the model
        if slot[0] is None or slot[0].numel() < rows.numel():
            slot[0] = torch.empty(rows.numel(), dtype=rows.dtype, device="cpu").pin_memory()
        buf = slot[0][:rows.numel()].view(rows.shape)
        buf.copy_(rows)
        out = buf.to(self.device, non_blocking=True)
        slot[1] = torch.cuda.Event()
        slot[1].record(torch.cuda.current_stream(self.device))
        return out

    def _host_rows(self, idx: torch.Tensor) -> torch.Tensor:
        if self.in_memory:
            return self.tensor.index_select(0, idx.reshape(-1))
        flat = idx.reshape(-1).numpy()
        order = np.argsort(flat, kind="stable")  # sorted reads are friendlier to the page cache
        rows = np.empty((flat.size, self.dim), dtype=np.float32)
        rows[order] = self.array[flat[order]]
        out = self._standardize_(torch.from_numpy(rows))
        self._note(out)
        return out

    def chunks(self, rows: int | None = None, start: int = 0, stop: int | None = None):
        """Consecutive row blocks of ``[start, stop)`` (standardised float32 tensors)."""
        rows = rows or self.chunk_rows
        stop = self.n if stop is None else stop
        for a in range(start, stop, rows):
            b = min(a + rows, stop)
            if self.in_memory:
                yield self.tensor[a:b] if self.on_device else self.tensor[a:b].to(self.device, non_blocking=True)
            else:
                out = self._standardize_(torch.from_numpy(np.array(self.array[a:b], dtype=np.float32)))
                release_pages(self.array, a, b)  # a pass over the map keeps one chunk resident, not all
                self._note(out)
                yield out if self.device.type == "cpu" else out.to(self.device)


def release_pages(array, start: int, stop: int) -> None:
    """Drop rows ``[start, stop)`` of a memory-mapped array from this process's resident
    memory (``madvise(MADV_DONTNEED)``: they stay in the page cache, and reading them again
    maps them again).  A memory map that has been read whole otherwise counts as resident
    beside the copy made of it — twice the features' size at the peak.  No-op
    for arrays that are not memory maps or where madvise is missing."""
    mm = getattr(array, "_mmap", None)
    if mm is None or not hasattr(mm, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
        return
    row = int(np.prod(array.shape[1:], dtype=np.int64)) * array.dtype.itemsize
    base = int(array.offset) % mmap.ALLOCATIONGRANULARITY  # where the data starts in the mapping
    page = mmap.PAGESIZE
    a = (base + start * row) // page * page
    b = min(len(mm), -(-(base + stop * row) // page) * page)
    if b > a:
        try:
            mm.madvise(mmap.MADV_DONTNEED, a, b - a)
        except (OSError, ValueError):  # pragma: no cover - a platform without it
            pass


def _load_released(array, chunk_bytes: int = CHUNK_BYTES) -> torch.Tensor:
    """A float32 tensor copy of ``array``, read a chunk at a time; a memory map's chunks
    are released once copied (:func:`release_pages`), so the peak is the copy alone."""
    n = array.shape[0]
    out = torch.empty(tuple(array.shape), dtype=torch.float32, device="cpu")
    step = max(1, int(chunk_bytes // max(1, int(np.prod(array.shape[1:], dtype=np.int64)) * 4)))
    view = out.numpy()
    for a in range(0, n, step):
        b = min(a + step, n)
        view[a:b] = array[a:b]
        release_pages(array, a, b)
    return out


def resolve_standardize(bundle, config: TrainConfig) -> bool:
    """``config.standardize``, or when None: standardise tabular features, not the cached
    backbone features of image bundles (see :class:`spmlkit.config.TrainConfig`)."""
    if config.standardize is not None:
        return bool(config.standardize)
    return getattr(bundle, "kind", "features") == "features"


def feature_statistics(array: np.ndarray, chunk_bytes: int = STAT_CHUNK_BYTES) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation per feature, in chunks of ``chunk_bytes`` (float64
    accumulation; the chunking does not depend on any memory option, so in-memory and
    memory-mapped runs standardise identically).  Constant features get std 1 so they
    map to 0 rather than NaN.  The sums are of the values shifted by the first row (the
    shifted-data form of the variance), so a constant feature's variance is exactly 0
    whatever its value and the chunking; unshifted, a constant 0.1 left ~1e-17 and a std
    of 6e-9 that blew new rows' standardised values up by 1e8."""
    n, d = array.shape
    rows = max(1, int(chunk_bytes // (8 * max(d, 1))))
    shift = np.asarray(array[:1], dtype=np.float64).reshape(-1) if n else np.zeros(d)
    s = np.zeros(d)
    ss = np.zeros(d)
    for start in range(0, n, rows):
        block = np.asarray(array[start:start + rows], dtype=np.float64) - shift
        s += block.sum(0)
        ss += np.einsum("ij,ij->j", block, block)
        release_pages(array, start, start + rows)
    centred = s / n
    mean = shift + centred
    var = np.maximum(ss / n - centred * centred, 0.0)
    std = np.sqrt(var)
    std[std < 1e-12] = 1.0
    return mean.astype(np.float32), std.astype(np.float32)


#: torch intra-op threads of the linear setting when ``TrainConfig.threads`` is None.
#: Its per-step operations (a batch of 8-16 rows through one linear layer) are too small
#: to gain from more threads, and extra OpenMP threads spin-wait between operations: on a
#: CPU shared with other work that made a 25-epoch Yeast run 7x slower (71 s vs 9.7 s)
#: and the demo 4x slower (benchmarks/results/threads.md measures quiet and loaded).
#: Parallelism comes from stacking grid members in one model and from worker processes
#: (``spml bench --jobs``) instead.
LINEAR_DEFAULT_THREADS = 1


@contextlib.contextmanager
def num_threads(n: int | None):
    """Run with ``torch.set_num_threads(n)`` (restored afterwards); ``None`` changes nothing.

    On a CPU shared with other work, one thread is often faster for the small per-step
    operations of the linear setting (docs/scale.md)."""
    if n is None:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(old)


class LinearLearner:
    """Stacked heads over cached features: ``G`` members with their own lr and seed.

    ``batch_size`` is the global batch; in a distributed run each rank gets its
    contiguous share of every global batch (:mod:`spmlkit.training.distributed`).

    ``device``: the head, its optimizer, the observations and the batches live there;
    the per-member generators stay on the CPU (the same permutations and initial
    weights on every device), the permutations are moved once per epoch."""

    def __init__(self, stores: dict[str, FeatureStore], observed: np.ndarray, *, lrs: list[float],
                 seeds: list[int], batch_size: int, n_labels: int, head: str = "linear", hidden: int = 512,
                 dist_ctx: distributed.DistContext | None = None, adam: str = "auto",
                 device: torch.device | str = "cpu"):
        if len(lrs) != len(seeds):
            raise ValueError("one learning rate per seed")
        self.device = torch.device(device)
        self.stores = stores
        self.n_members = len(lrs)
        self.batch_size = batch_size
        self.lrs = list(lrs)
        self.seeds = list(seeds)
        self.n_labels = n_labels
        self.head, self.hidden = head, hidden
        self.generators = [torch.Generator(device="cpu").manual_seed(int(s)) for s in seeds]
        #: the training observations Z, sparse (:class:`~spmlkit.sparse_labels.SparseLabels`);
        #: each batch's dense (G, B, L) block is built on the device (O(N + nnz), not N × L)
        self.observed = as_sparse(observed, dtype=np.int8)
        self.model = build_head(head, stores["train"].dim, n_labels, self.generators, hidden=hidden)
        if hasattr(self.model, "fit_inputs"):  # a head with an input transform fitted on the training rows
            self.model.fit_inputs(stores["train"], self.observed)
        self.model = self.model.to(self.device)
        self._adam = adam
        self.optimizer = StackedAdam(list(self.model.parameters()), lrs, impl=adam)
        self._observed_dev = self.observed.to(self.device)
        self.n_train = len(stores["train"])
        self.ctx = dist_ctx or distributed.context()
        #: a :class:`~spmlkit.training.background.BackgroundSampler` for a method that consumes
        #: background rows (epochs over the labelled rows, background drawn per step); None: as before
        self.background = None

    def batches(self, epoch: int):
        if self.background is not None:
            yield from self._with_background(self.background.epoch_order(self.generators))
            return
        perms = torch.stack([torch.randperm(self.n_train, generator=g, device="cpu") for g in self.generators])
        train, Z, B, L = self.stores["train"], self._observed_dev, self.batch_size, self.n_labels
        if not train.on_device:  # rows from host memory: gathered and copied one step ahead (never on a CPU)
            yield from self._prefetched(perms, perms.to(self.device, non_blocking=True))
            return
        if self.device.type != "cpu":
            perms = perms.to(self.device, non_blocking=True)
        ctx = self.ctx
        for start in range(0, self.n_train, B):
            idx = perms[:, start:start + B]
            G, n = idx.shape
            obs = Z.block(idx)
            if not ctx.enabled:
                yield Batch(inputs=train.gather(idx), index=idx, observed=obs, distinct=True)
                continue
            a, b = distributed.shard_bounds(n, ctx.world_size, ctx.rank)
            mine = idx[:, a:b]
            yield Batch(inputs=train.gather(mine), index=mine, observed=obs[:, a:b], shard=(a, b), distinct=True,
                        global_batch=Batch(inputs=None, index=idx, observed=obs, distinct=True))

    def _with_background(self, perms: torch.Tensor):
        """The batches of a method that consumes background (:mod:`.background`): over
        the rows ``perms`` ``(G, n)``, each with one drawn background row per example."""
        train, Z, B, L = self.stores["train"], self._observed_dev, self.batch_size, self.n_labels
        for start in range(0, perms.shape[1], B):
            idx = perms[:, start:start + B]
            G, n = idx.shape
            dev = idx.to(self.device)
            obs = Z.block(dev)
            yield Batch(inputs=train.gather(idx), index=dev, observed=obs, distinct=True,
                        background=train.gather(self.background.draw(n)))

    def _prefetched(self, perms: torch.Tensor, perms_dev: torch.Tensor):
        """The batches of an epoch whose rows come from host memory: the rows of step
        ``t + 1`` are gathered and their copy queued before step ``t`` is handed out."""
        train, Z, B, L, ctx = self.stores["train"], self._observed_dev, self.batch_size, self.n_labels, self.ctx

        def rows(start):
            idx = perms[:, start:start + B]
            if ctx.enabled:
                a, b = distributed.shard_bounds(idx.shape[1], ctx.world_size, ctx.rank)
                idx = idx[:, a:b]
            return train.gather(idx)

        starts = list(range(0, self.n_train, B))
        nxt = rows(starts[0]) if starts else None
        for i, start in enumerate(starts):
            inputs = nxt
            nxt = rows(starts[i + 1]) if i + 1 < len(starts) else None
            idx = perms_dev[:, start:start + B]
            G, n = idx.shape
            obs = Z.block(idx)
            if not ctx.enabled:
                yield Batch(inputs=inputs, index=idx, observed=obs, distinct=True)
                continue
            a, b = distributed.shard_bounds(n, ctx.world_size, ctx.rank)
            yield Batch(inputs=inputs, index=idx[:, a:b], observed=obs[:, a:b], shard=(a, b), distinct=True,
                        global_batch=Batch(inputs=None, index=idx, observed=obs, distinct=True))

    def zero_grad(self) -> None:
        self.optimizer.zero_grad()

    def step(self) -> None:
        self.optimizer.step()

    def split_store(self, split: str, every_row: bool = False) -> FeatureStore | None:
        """The feature store a split is scored from: for ``val``, the rows every epoch
        scores (``val_scored``: a subsample above a size, :mod:`.validation`) unless
        ``every_row``; None when the data has no such split."""
        if split == "val" and not every_row and "val_scored" in self.stores:
            return self.stores["val_scored"]
        return self.stores.get(split)

    @torch.no_grad()
    def scores(self, split: str, store: FeatureStore | None = None, every_row: bool = False) -> torch.Tensor:
        """``(G, N, L)`` logits of the split, in chunks; in a distributed run each rank
        scores its share of the rows and every rank gets all of them.  A split the data
        does not have (e.g. no validation) gives ``(G, 0, L)``.  ``val``: the scored
        validation rows unless ``every_row`` (:meth:`split_store`)."""
        store = store if store is not None else self.split_store(split, every_row)
        G = self.model.n_members
        if store is None or len(store) == 0:
            return torch.zeros(G, 0, self.n_labels, device=self.device)
        a, b = 0, len(store)
        if self.ctx.enabled:
            a, b = distributed.shard_bounds(len(store), self.ctx.world_size, self.ctx.rank)
        out = torch.empty(G, b - a, self.n_labels, device=self.device)
        pos = 0
        for x in store.chunks(start=a, stop=b):
            out[:, pos:pos + len(x)] = self.model(x)
            pos += len(x)
        if self.ctx.enabled:
            out = distributed.all_gather_cat(out, dim=1, sizes=distributed.shard_sizes(len(store),
                                                                                       self.ctx.world_size))
        return out

    def score_view(self, split: str, every_row: bool = False):
        """The split's ``(G, N, L)`` logits (:meth:`scores`), or, when they would exceed
        :data:`~spmlkit.metrics.DENSE_SCORE_BYTES`, a :class:`~spmlkit.training.scores.ScoreView`
        that computes them in row chunks of at most :data:`STREAM_CHUNK_BYTES` on demand."""
        store = self.split_store(split, every_row)
        G, L = self.model.n_members, self.n_labels
        n = 0 if store is None else len(store)
        if n == 0 or self.ctx.enabled or not needs_streaming(G, n, L):
            return self.scores(split, store)
        rows = max(1, STREAM_CHUNK_BYTES // (4 * G * max(L, 1)))

        @torch.no_grad()
        def produce():
            pos = 0
            for x in store.chunks(rows=rows):
                yield pos, self.model(x)
                pos += len(x)

        return ScoreView(produce, (G, n, L))

    def member_state(self, g: int) -> dict:
        return {k: v[g].detach().clone() for k, v in self.model.state_dict().items()}

    def load_member_state(self, g: int, state: dict) -> None:
        with torch.no_grad():
            for k, v in self.model.state_dict().items():
                v[g].copy_(state[k])

    def select_members(self, keep: list[int]) -> None:
        """Keep only the members at positions ``keep`` (compaction of stopped members)."""
        select_members(self.model, keep)
        self.optimizer.select_members(keep, list(self.model.parameters()))
        self.generators = [self.generators[i] for i in keep]
        if self.background is not None:
            self.background.select_members(keep)
        self.lrs = [self.lrs[i] for i in keep]
        self.seeds = [self.seeds[i] for i in keep]
        self.n_members = len(keep)

    def set_members(self, states: list[dict]) -> None:
        """Replace the stack by one member per state (e.g. every member's best-epoch
        weights, for the final evaluation).  The optimizer is reset: for evaluation only."""
        with torch.no_grad():
            for name, p in self.model.named_parameters():
                mod, attr = self.model, name
                if "." in name:
                    parent, attr = name.rsplit(".", 1)
                    mod = self.model.get_submodule(parent)
                setattr(mod, attr, torch.nn.Parameter(torch.stack([s[name].to(self.device)
                                                                   for s in states]).contiguous()))
        self.n_members = len(states)
        self.optimizer = StackedAdam(list(self.model.parameters()), [1e-3] * len(states), impl=self._adam)

    def state_dict(self) -> dict:
        state = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                 "generators": [g.get_state() for g in self.generators]}
        if self.background is not None:
            state["background"] = self.background.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        """Loads a state written on any device (tensors are copied to this learner's)."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        for g, s in zip(self.generators, state["generators"]):
            g.set_state(s.cpu())
        if self.background is not None and "background" in state:
            self.background.load_state_dict(state["background"])


# ---------------------------------------------------------------------- evaluation
def split_scores(test_logits: np.ndarray, train_logits: np.ndarray | None, *, Y_test, Z_test, Y_train,
                 empty: str = "exclude", test_mask=None) -> dict:
    """The :class:`RunResult` fields scored on the test and training splits: test mAP and
    per-class AP (full test labels), observed-label test metrics (observed-only test
    split), and label recovery, the training-set mAP against full training labels.
    ``test_mask`` (presence-only data): each label scored only on its surveyed test rows; with it,
    the per-label AUC-ROC averaged over labels is scored as well (``test_auc``)."""
    test = mean_average_precision(Y_test, test_logits, empty=empty, mask=test_mask) if Y_test is not None else None
    auc = None
    if test_mask is not None and Y_test is not None:
        a = mean_auc(Y_test, test_logits, test_mask)
        auc = {"mean": a.mean, "median": a.median, "per_label": [None if v != v else float(v) for v in a.auc]}
    test_observed = None
    if Z_test is not None:
        test_observed = evaluate_scores(test_logits, Z=Z_test)
    train_map = None
    if train_logits is not None and Y_train is not None:
        train_map = mean_average_precision(Y_train, train_logits, empty=empty).map
    return {"test_map": None if test is None else test.map,
            "test_ap": None if test is None else [None if math.isnan(a) else float(a) for a in test.ap],
            "n_empty_test_classes": 0 if test is None else test.n_empty,
            "test_observed": test_observed, "train_map": train_map,
            **({"test_auc": auc} if auc is not None else {})}


def streamed_split_scores(test_view, train_view, *, Y_test, Z_test, Y_train, empty: str = "exclude",
                          test_mask=None) -> list[dict]:
    """:func:`split_scores` of every member from score views (one streamed pass per
    split for all members; memory O(chunk × L)), equal to it to ~1e-12."""
    def as_view(v):
        if v is None or isinstance(v, ScoreView):
            return v
        return ScoreView(lambda v=v: iter([(0, v)]), tuple(v.shape))

    test_view, train_view = as_view(test_view), as_view(train_view)
    G = test_view.shape[0]
    out = [{"test_map": None, "test_ap": None, "n_empty_test_classes": 0, "test_observed": None,
            "train_map": None} for _ in range(G)]

    def summary(ap_row):
        ap = ap_row * 100.0
        missing = np.isnan(ap)
        vals = np.where(missing, 0.0, ap) if empty == "zero" else ap[~missing]
        return (float(vals.mean()) if vals.size else float("nan")), ap, int(missing.sum())

    if Y_test is not None and test_view.shape[1]:
        rc = stream_rank_counts(Y_test, test_view.chunks, mask=test_mask)
        ap, auc = average_precision_from_counts(rc), (roc_auc_from_counts(rc) if test_mask is not None else None)
        for g in range(G):
            m, a, n_empty = summary(ap[g])
            out[g].update(test_map=m, test_ap=[None if math.isnan(v) else float(v) for v in a],
                          n_empty_test_classes=n_empty)
            if auc is not None:
                ok = auc[g][~np.isnan(auc[g])]
                out[g]["test_auc"] = {"mean": float(ok.mean()) if ok.size else float("nan"),
                                      "median": float(np.median(ok)) if ok.size else float("nan"),
                                      "per_label": [None if v != v else float(v) for v in auc[g]]}
    if Z_test is not None and test_view.shape[1]:
        for g, obs in enumerate(streamed_observed_scores(Z_test, test_view.chunks)):
            out[g]["test_observed"] = obs
    if train_view is not None and Y_train is not None:
        ap = average_precision_from_counts(stream_rank_counts(Y_train, train_view.chunks))
        for g in range(G):
            out[g]["train_map"] = summary(ap[g])[0]
    return out


def train_linear(bundle: Bundle, config: TrainConfig, *, lrs: list[float] | None = None,
                 seeds: list[int] | None = None, run_dir: str | Path | None = None, resume: bool = True,
                 on_epoch=None, keep_state: bool = False, method: Method | None = None,
                 device: torch.device | None = None, callbacks=()) -> list[RunResult]:
    """Train ``config.method`` on ``bundle``'s cached features.

    ``lrs`` and ``seeds`` (same length) define the members trained together; by default
    the single member ``(config.lr, config.seed)``.  In a distributed run (torchrun)
    every rank calls this and gets the same results; only rank 0 writes ``run_dir``.
    ``method`` / ``device``: the run's method (fresh, not set up) and resolved device when
    the caller has them already.  ``callbacks`` / ``on_epoch``: the loop's
    (:mod:`spmlkit.training.callbacks`).  A recipe (``auto``) is trained by :func:`spmlkit.training.run.train`.
    """
    threads = config.threads if config.threads is not None else LINEAR_DEFAULT_THREADS
    with num_threads(threads):
        return _train_linear(bundle, config, lrs=lrs, seeds=seeds, run_dir=run_dir, resume=resume,
                             on_epoch=on_epoch, keep_state=keep_state, method=method, device=device,
                             callbacks=callbacks)


def device_feature_plan(arrays: dict, device: torch.device, *, max_bytes, state_bytes: int) -> dict:
    """``{split: keep on the device}`` for the linear trainer's feature stores:
    one budget (:func:`spmlkit.device.plan_device_features`) for all splits,
    measured once, less the method state allocated after them (``state_bytes``: what the
    method's components declare, :meth:`spmlkit.methods.base.Method.state_bytes`; ROLE's
    table, Adam moments and best-epoch snapshot at COCO size with 12 members: 1 GB; nothing
    for a method without per-entry state).  Memory-mapped splits (over ``max_bytes``) never
    go to the device.  On the CPU: every split."""
    if device.type == "cpu":
        return {s: True for s in arrays}
    sizes = {}
    for s, a in arrays.items():
        nbytes = a.shape[0] * a.shape[1] * 4
        sizes[s] = nbytes if max_bytes is None or nbytes <= max_bytes else None
    return plan_device_features(sizes, free_memory_bytes(device), reserve=state_bytes)


@dataclass
class LinearRun:
    """An assembled linear-setting run: its :class:`RunParts`, the learner over the
    cached features (standardised with ``mean``/``std`` when not None) and the context
    the method was set up with."""

    parts: RunParts
    learner: LinearLearner
    ctx: TrainContext
    mean: np.ndarray | None
    std: np.ndarray | None


def assemble_linear(bundle: Bundle, config: TrainConfig, *, lrs: list[float], seeds: list[int],
                    run_dir: str | Path | None = None, method: Method | None = None,
                    device: torch.device | None = None) -> LinearRun:
    """Everything before the first epoch of a linear run of members ``zip(lrs, seeds)``:
    the run's parts (:func:`spmlkit.training.prepare.prepare_run`), the feature stores,
    the learner, and the method set up on its context."""
    if method is None:
        method = build_run_method(config)

    if is_recipe(method):
        raise ConfigError(f"method {config.method!r} is a recipe of several methods; train it with "
                          "spmlkit.training.run.train (as spml train and spml bench do)")
    if method.setting == "finetune":
        raise ConfigError(f"method {config.method!r} needs end-to-end training on images (--setting finetune)")
    if len(lrs) > 1 and not method.supports_members:
        raise ConfigError(f"method {config.method!r} cannot train several members in one model; run them one by one")
    torch.manual_seed(seeds[0])  # components that draw from the global generator stay reproducible
    dctx = distributed.context()
    parts = prepare_run(bundle, config, method=method, device=device)
    X_train = bundle.features("train", config.feature_set)
    max_bytes = None if config.max_memory_mb is None else config.max_memory_mb * 2 ** 20
    mean = std = None
    if resolve_standardize(bundle, config):
        mean, std = feature_statistics(X_train)
    splits = [s for s in ("train", "val", "test") if s == "train" or bundle.size(s) > 0]
    arrays = {s: bundle.features(s, config.feature_set) for s in splits}
    if parts.validation is not None and parts.validation.subsampled:  # the rows every epoch scores (.validation)
        arrays["val_scored"] = np.asarray(arrays["val"][parts.validation.rows], dtype=np.float32)
    state = method.state_bytes(parts.context(parts.observed, lrs=lrs, seeds=seeds, epochs=config.epochs))
    on_device = device_feature_plan(arrays, parts.device, max_bytes=max_bytes, state_bytes=state)
    stores = {split: FeatureStore(arrays[split], mean=mean, std=std, max_bytes=max_bytes, device=parts.device,
                                  keep_on_device=on_device[split])
              for split in arrays}
    learner = LinearLearner(stores, parts.observed, lrs=lrs, seeds=seeds, batch_size=config.batch_size,
                            n_labels=bundle.n_labels, head=config.head, hidden=config.hidden, dist_ctx=dctx,
                            device=parts.device)
    if method.uses_background:  # epochs over the labelled rows, background drawn per step
        attach_background(learner, method, parts.observed, seeds)
    ctx = parts.setup_method(learner.observed, lrs=lrs, seeds=seeds, epochs=config.epochs, run_dir=run_dir,
                             dist_ctx=dctx)
    return LinearRun(parts, learner, ctx, mean, std)


def validation_notes(validation) -> dict | None:
    """A run's ``notes`` about its validation: recorded when a subsample was scored
    (:mod:`.validation`); None otherwise, as every run recorded before."""
    return {"validation": validation.record()} if validation is not None and validation.subsampled else None


def _train_linear(bundle, config, *, lrs, seeds, run_dir, resume, on_epoch, keep_state, method,
                  device, callbacks) -> list[RunResult]:
    t_start = time.perf_counter()
    lrs, seeds = config.members(lrs, seeds)
    run = assemble_linear(bundle, config, lrs=lrs, seeds=seeds, run_dir=run_dir, method=method, device=device)
    parts, learner, method, mean, std = run.parts, run.learner, run.parts.method, run.mean, run.std
    selection, k, Y_train = parts.selection, parts.expected_positives, parts.Y_train
    info = [{"lr": lr, "seed": s} for lr, s in zip(lrs, seeds)]
    tracker = fit(learner, method, epochs=config.epochs, evaluate=parts.evaluate, patience=parts.patience,
                  run_dir=run_dir, resume=resume, on_epoch=on_epoch, member_info=info, callbacks=callbacks)
    # every member's best-epoch weights (or its last state if it never had a valid score),
    # restacked once so the test and training sets are scored once for all members
    active = getattr(tracker, "active", list(range(len(lrs))))
    states = [m.snapshot["learner"] if m.snapshot is not None else learner.member_state(active.index(g))
              for g, m in enumerate(tracker.members)]
    learner.set_members(states)
    states = [{k: v.cpu() for k, v in st.items()} for st in states]  # results are device-free
    test_view = learner.score_view("test")  # (G, 0, L) when there is no test split
    train_view = learner.score_view("train") if Y_train is not None else None
    streamed = is_streamed(test_view) or is_streamed(train_view)
    if streamed:  # too large for (G, N, L): every member scored in one streamed pass
        all_scored = streamed_split_scores(test_view, train_view, Y_test=parts.Y_test, Z_test=parts.Z_test,
                                           Y_train=Y_train, empty=config.empty_classes, test_mask=parts.test_mask)
        test_scores = None
    else:
        test_scores = test_view.cpu()
        train_scores = train_view.cpu() if train_view is not None else None
    val_scores = None
    if keep_state and not streamed:
        val = learner.score_view("val", every_row=True)  # the label-set step and recipes read every row
        val_scores = None if is_streamed(val) else val.cpu()
    results = []
    for g, (lr, seed) in enumerate(zip(lrs, seeds)):
        m = tracker.members[g]
        best_epoch = len(m.history) if selection == "last" else m.best_epoch
        if streamed:
            scored = all_scored[g]
        else:
            scored = split_scores(test_scores[g].numpy(), None if train_scores is None else train_scores[g].numpy(),
                                  Y_test=parts.Y_test, Z_test=parts.Z_test, Y_train=Y_train,
                                  empty=config.empty_classes, test_mask=parts.test_mask)
        results.append(RunResult(
            method=config.method, params=dict(method.params), lr=lr, batch_size=config.batch_size, seed=seed,
            best_epoch=best_epoch, val_score=m.best_score if m.best_epoch else math.nan, selection=selection,
            epochs_run=len(m.history), val_history=list(m.history), seconds=time.perf_counter() - t_start,
            expected_positives=k, notes=validation_notes(parts.validation), **scored,
            # val/test logits are kept for the label-set step and recipes when they fit in memory;
            # otherwise None, and the consumer scores in chunks from the head (spmlkit.training.scores)
            state=({"head": states[g], "method": to_cpu((m.snapshot or {}).get("method", {})),
                    "mean": mean, "std": std, "head_spec": {"head": config.head, "hidden": config.hidden},
                    "val_logits": None if val_scores is None else val_scores[g].numpy(),
                    "test_logits": None if test_scores is None else test_scores[g].numpy()}
                   if keep_state else None)))
    return results
