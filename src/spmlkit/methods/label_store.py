"""Storage of ROLE's label-estimator table, updated batch row by batch row.

ROLE's estimator (Cole et al. 2021, §6.1) is one row of logits per training example and
label, ``φ ∈ R^{N×L}``, trained with Adam at ``lr_mult × lr``; with grid members it is
``(G, N, L)``.  Every store here keeps, per member, the table (or its factors) and
Adam's two moments, reads the rows of a batch as a float32 tensor, and writes **only
the rows of the batch**.  Rows are addressed by ``index`` ``(G, B)`` (training-set row of
each batch entry of each member), flattened internally to ``g·N + n``.

Adam on rows (``adam="dense"``, default, and ``adam="rowwise"``) is :class:`RowAdam`, in
:mod:`.row_adam` (re-exported here), whose docstring says how each keeps to the batch's rows.

Storages
--------
``float32``    table and moments in float32: ``12·G·N·L`` bytes + ``4·G·N`` (row steps).
``float16``    table in float16 written with **stochastic rounding** (an update of 1e-3
               on a logit of 5 is below half a float16 ulp (2⁻⁹ in [4, 8)) and would be
               lost with round-to-nearest; stochastic rounding keeps it in expectation),
               moments in bfloat16 (float32's exponent range: ``(1−β₂)g²`` underflows
               float16 for ``|g| < 8e-3``); arithmetic in float32.
               ``6·G·N·L + 4·G·N`` bytes.
``memmap``     float32 table, moments and row steps in ``.npy`` memory maps under a
               directory; a batch reads and writes only its rows (never the whole
               table).  Resident memory O(B·L); on disk ``12·G·N·L + 4·G·N`` bytes.
``factorised`` ``φ_n = U_n V + b``: per-example code ``U (N, r)``, per-label matrix
               ``V (r, L)`` and bias ``b (L)``, with Adam moments:
               ``12·(N·r + r·L + L) + 4·N`` bytes per member, growing as (N + L)·r.
               Rows of U are updated only for the batch (row-wise or lazily dense, as
               above); V and b get dense Adam every step (every row uses them).
               Initialised with the best rank-r approximation (Eckart–Young, after
               moving the per-label mean into ``b``) of the §6.1 initial table, which it
               reproduces exactly when r ≥ L.  It is a different model (a low-rank
               estimator), not an approximation of the float32 run.
"""
from __future__ import annotations

import dataclasses
import math
import uuid
import warnings
import weakref
from pathlib import Path

import numpy as np
import torch

from .. import ownership
from ..errors import ConfigError, SpmlError
from ..io import load_numpy
from ..params import Options, check_params
from .row_adam import ADAM_MODES, RowAdam, _dense_adam_  # (ADAM_MODES, RowAdam re-exported: they lived here)

STORAGES = ("float32", "float16", "memmap", "factorised")
#: the one check of a storage name (:mod:`spmlkit.params`): ROLE's registration, its
#: estimator and :func:`make_store` / :func:`storage_bytes` all use it
STORAGE = [Options(*STORAGES)]
CHUNK_ROWS = 65536


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


#: §6.1 initial logits (the authors' code, elijahcole/single-positive-multi-label)
LOGIT_OBSERVED_POSITIVE = _logit(0.995)
LOGIT_OBSERVED_NEGATIVE = _logit(0.005)
LOGIT_UNOBSERVED_BOUND = _logit(0.6)  # unobserved: uniform on [σ⁻¹(0.4), σ⁻¹(0.6)] = [−b, b]


def member_rng(seed: int) -> np.random.Generator:
    """The estimator's own random stream for a member seed (independent of the model's)."""
    return np.random.default_rng(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, 0x201E]))


def iter_initial_logits(observed: np.ndarray, seed: int, chunk_rows: int = CHUNK_ROWS):
    """Yield ``(start, block)`` of the §6.1 initial table for one member, ``block`` float32
    ``(rows, L)``: unobserved entries uniform on [σ⁻¹(0.4), σ⁻¹(0.6)] in logit space,
    observed positives σ⁻¹(0.995), observed negatives σ⁻¹(0.005).  The same ``seed`` gives
    the same table whatever the storage (the chunking is fixed)."""
    rng = member_rng(seed)
    n = observed.shape[0]
    for start in range(0, n, chunk_rows):
        z = np.asarray(observed[start:start + chunk_rows])
        block = ((2.0 * rng.random(z.shape) - 1.0) * LOGIT_UNOBSERVED_BOUND).astype(np.float32)
        block[z == 1] = LOGIT_OBSERVED_POSITIVE
        block[z == -1] = LOGIT_OBSERVED_NEGATIVE
        yield start, block


def initial_logits(observed: np.ndarray, seed: int) -> np.ndarray:
    """The whole §6.1 initial table of one member (float32 ``(N, L)``)."""
    out = np.empty(observed.shape, dtype=np.float32)
    for start, block in iter_initial_logits(observed, seed):
        out[start:start + len(block)] = block
    return out


def _iter_table(table, chunk_rows: int = CHUNK_ROWS):
    """Chunks of a given table (array, memmap or tensor) as float32 numpy."""
    for start in range(0, table.shape[0], chunk_rows):
        block = table[start:start + chunk_rows]
        if isinstance(block, torch.Tensor):
            block = block.detach().cpu().float().numpy()
        yield start, np.array(block, dtype=np.float32)  # a copy: memmapped snapshots are read-only


def stochastic_round_half(x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """float32 -> float16, rounded to one of its two float16 neighbours with probability
    proportional to proximity (unbiased: ``E[out] = x``); ``u`` uniform [0, 1), shaped like ``x``."""
    x = x.clamp(-65504.0, 65504.0)
    h = x.half()
    hf = h.float()
    toward = torch.where(x > hf, torch.full_like(h, math.inf), torch.full_like(h, -math.inf))
    nb = torch.nextafter(h, toward)
    gap = nb.float() - hf
    p = torch.where(gap != 0, (x - hf) / gap, torch.zeros_like(x))
    return torch.where(u < p, nb, h)


# ---------------------------------------------------------------------- stores
@dataclasses.dataclass
class _BatchRows:
    """The distinct rows of one step's batch as ``read`` gathered them, kept for ``update``:
    ``rows`` (flat row numbers: sorted and distinct, or the batch's own when it is
    ``distinct``), ``inv`` (batch entry -> position in ``rows``; None: the identity), the
    rows' learning rates (one per row, or the single member's scalar), their float32 values ``phi`` at global step ``t``
    (:meth:`RowAdam.current`), and ``m, v, steps`` as stored."""

    t: int
    index: torch.Tensor
    flat: torch.Tensor
    rows: torch.Tensor
    inv: torch.Tensor
    lr: "float | torch.Tensor"
    phi: torch.Tensor
    m: torch.Tensor
    v: torch.Tensor
    steps: torch.Tensor


class _Store:
    """Common logic.  A subclass stores row-addressed arrays ``phi`` (the table, or the
    codes U), ``m``, ``v`` (``(G·N, width)``) and ``steps`` (``(G·N,)``) and implements
    ``_gather(rows) -> (phi, m, v, steps)`` as float32/int tensors and
    ``_scatter(rows, phi, m, v, steps)``; ``_logits(index, batch)`` and ``_row_grad`` map
    gathered rows to the batch's logits and back."""

    kind = ""

    def __init__(self, n_members: int, n_rows: int, n_labels: int, *, lrs, adam: str = "rowwise",
                 betas=(0.9, 0.999), eps: float = 1e-8, device="cpu"):
        self.G, self.N, self.L = int(n_members), int(n_rows), int(n_labels)
        self.device = torch.device(device)  # where the arrays live and rows are read/written
        self.lrs = torch.as_tensor(lrs, dtype=torch.float32, device="cpu").reshape(-1).to(self.device)
        if self.lrs.numel() != self.G:
            raise ConfigError(f"{self.G} members but {self.lrs.numel()} estimator learning rates")
        self.opt = RowAdam(adam, betas, eps, device=self.device)
        self._pending = None  # the rows ``read`` gathered (values at the current step) for ``update``
        self._offsets = torch.arange(self.G, dtype=torch.long, device=self.device).unsqueeze(1) * self.N  # g·N
        self._lr0 = float(self.lrs[0])  # one member: a Python float (cheaper than a tensor per row)
        self._lr_values = [float(x) for x in self.lrs.cpu()]  # read once, not per chunk of every table pass

    # -------------------------------------------------------------- rows
    def _flat(self, index: torch.Tensor) -> torch.Tensor:
        """Flat row numbers ``g·N + n`` of an index ``(G, B)``."""
        if self.G == 1:
            return index.reshape(-1).long()
        return (index.long() + self._offsets).reshape(-1)

    def _members(self, rows: torch.Tensor) -> torch.Tensor:
        return torch.div(rows, self.N, rounding_mode="floor")

    def _prepare(self, index: torch.Tensor, distinct: bool = False) -> _BatchRows:
        """Gather the batch's distinct rows, brought up to the current step (dense mode).
        ``distinct``: the caller knows no row repeats within a member (no de-duplication)."""
        flat = self._flat(index)
        if distinct:
            rows, inv = flat, None
        else:
            rows, inv = torch.unique(flat, sorted=True, return_inverse=True)  # sorted: grouped by member
        lr = self._lr0 if self.G == 1 else self.lrs.index_select(0, self._members(rows)).unsqueeze(1)
        phi, m, v, steps = self._gather(rows)
        self.opt.current(phi, m, v, steps, lr)
        return _BatchRows(self.opt.t, index, flat, rows, inv, lr, phi, m, v, steps)

    # ---------------------------------------------------------- interface
    def read(self, index: torch.Tensor, distinct: bool = False) -> torch.Tensor:
        """Logits of the batch rows ``(G, B) -> (G, B, L)`` float32 (a new tensor).  The
        rows gathered here are kept for the ``update`` of the same step; nothing is
        written (a read without an update leaves the store as it was).  ``distinct``: no
        row repeats within a member (:attr:`~spmlkit.methods.base.Batch.distinct`)."""
        self._pending = batch = self._prepare(index, distinct)
        return self._logits(index, batch)

    def update(self, index: torch.Tensor, grad: torch.Tensor) -> None:
        """One optimizer step from ``grad`` = d loss / d (the logits returned by ``read``)."""
        batch, self._pending = self._pending, None
        if batch is None or batch.t != self.opt.t or not (batch.index is index
                                                           or torch.equal(batch.flat, self._flat(index))):
            batch = self._prepare(index)  # rows not read at this step
        self.opt.t += 1
        grad_rows = self._row_grad(index, grad.float(), batch)  # (G·B, width) per batch entry
        if batch.inv is None:
            g = grad_rows
        else:  # sums the gradients of repeated rows
            g = grad_rows.new_zeros(batch.rows.numel(), grad_rows.shape[1]).index_add_(0, batch.inv, grad_rows)
        new_phi, new_steps = self.opt.step(batch.phi, batch.m, batch.v, batch.steps, g, batch.lr)
        self._scatter(batch.rows, new_phi, batch.m, batch.v, new_steps)
        self._after_update(index, grad)

    @staticmethod
    def _entries(batch: _BatchRows) -> torch.Tensor:
        """The gathered rows per batch entry ``(G·B, width)``."""
        return batch.phi if batch.inv is None else batch.phi.index_select(0, batch.inv)

    def _logits(self, index, batch: _BatchRows) -> torch.Tensor:
        return self._entries(batch).view(*index.shape, self.L)

    def _row_grad(self, index, grad, batch: _BatchRows):
        return grad.reshape(-1, grad.shape[-1])

    def _after_update(self, index, grad):
        pass

    def member_blocks(self, g: int, chunk_rows: int = CHUNK_ROWS, *, as_stored: bool = False):
        """``(start, float32 block)`` of member ``g``'s current logits, as tensors on the
        store's device (no host copy).  In dense mode the rows updated fewer than S steps
        ago get back the part of their tail still to come (:meth:`RowAdam.current`) unless
        ``as_stored`` (the settled rows, as written)."""
        base = g * self.N
        for start in range(0, self.N, chunk_rows):
            rows = torch.arange(base + start, base + min(start + chunk_rows, self.N), device=self.device)
            phi, m, v, steps = self._gather(rows)
            if not as_stored:
                self.opt.current(phi, m, v, steps, self._lr_values[g])
            yield start, self._rows_to_logits(g, phi)

    def iter_member_table(self, g: int, chunk_rows: int = CHUNK_ROWS, *, as_stored: bool = False):
        """:meth:`member_blocks` as float32 NumPy blocks on the host."""
        for start, block in self.member_blocks(g, chunk_rows, as_stored=as_stored):
            yield start, block.cpu().numpy()

    def _rows_to_logits(self, g, phi):
        return phi

    def member_table(self, g: int) -> np.ndarray:
        out = np.empty((self.N, self.L), dtype=np.float32)
        for start, block in self.iter_member_table(g):
            out[start:start + len(block)] = block
        return out

    def member_state(self, g: int) -> dict:
        """Member ``g``'s current table (float32), kept on the store's device: a snapshot per
        improved member costs no host copy; files get it through
        :func:`spmlkit.device.to_cpu`."""
        return {"logits": torch.cat([block for _, block in self.member_blocks(g)])}

    def load_member_state(self, g: int, state: dict) -> None:
        """Start member ``g`` from a table (any store's ``member_state``); its optimizer state is reset."""
        self._pending = None
        self.set_member_table(g, _chunks_from_state(state, self.N, self.L))

    def initialise(self, observed: np.ndarray, seeds) -> None:
        self._pending = None
        for g, seed in enumerate(seeds):
            self.set_member_table(g, iter_initial_logits(observed, seed))

    def _reset_rows(self, sl: slice) -> None:
        raise NotImplementedError

    #: how dense-mode rows are stored ("settled": momentum tail applied at the update)
    DENSE_ROWS = "settled"

    def _opt_state(self) -> dict:
        return {"adam": self.opt.mode, "t": self.opt.t, "dense_rows": self.DENSE_ROWS}

    def _load_opt_state(self, state: dict) -> None:
        if state.get("adam", "rowwise") != self.opt.mode:
            raise ConfigError(f"checkpoint's estimator used adam={state.get('adam')!r}, this run {self.opt.mode!r}")
        if self.opt.mode == "dense" and int(state.get("t", 0)) > 0 and state.get("dense_rows") != self.DENSE_ROWS:
            raise ConfigError("checkpoint's dense-Adam estimator rows were written by an older spmlkit (rows not "
                              "settled); resume it with that version or start the run again")
        self.opt.t = int(state.get("t", 0))
        self._pending = None


def _host_copy(t: torch.Tensor) -> torch.Tensor:
    """A CPU copy of ``t`` (one device-to-host copy; on the CPU a clone)."""
    return t.clone() if t.device.type == "cpu" else t.cpu()


def _chunks_from_state(state: dict, N: int, L: int):
    """Chunks of a member's logits from any store's ``member_state`` (or ``{"logits": table}``)."""
    if "logits" in state:
        table = state["logits"]
    elif "path" in state:
        p = Path(state["path"])
        if not p.exists():
            raise SpmlError(f"estimator snapshot {p} is missing (memmap ROLE keeps snapshots in its directory)")
        table = load_numpy(p, mmap=True)  # never unpickles (object arrays are refused)
    elif "U" in state:
        U, V, b = (torch.as_tensor(state[k], device="cpu").float() for k in ("U", "V", "b"))
        if U.shape[0] != N or V.shape[1] != L:
            raise ConfigError(f"estimator state has {U.shape[0]} x {V.shape[1]} logits, expected {N} x {L}")

        def gen():
            for start in range(0, N, CHUNK_ROWS):
                yield start, (U[start:start + CHUNK_ROWS] @ V + b).numpy()

        return gen()
    else:
        raise ConfigError(f"unrecognised label-estimator state with keys {sorted(state)}")
    if tuple(table.shape) != (N, L):
        raise ConfigError(f"estimator table has shape {tuple(table.shape)}, expected ({N}, {L})")
    return _iter_table(table)


class DenseStore(_Store):
    """``float32``: everything in float32 tensors.  ``float16``: float16 table written with
    stochastic rounding (one generator per member, so stacked members equal separate
    runs), bfloat16 moments, float32 arithmetic."""

    def __init__(self, n_members, n_rows, n_labels, *, half: bool = False, seeds=None, **kw):
        super().__init__(n_members, n_rows, n_labels, **kw)
        self.half = bool(half)
        self.kind = "float16" if half else "float32"
        tdt, mdt = (torch.float16, torch.bfloat16) if half else (torch.float32, torch.float32)
        GN = self.G * self.N
        dev = self.device
        self.table = torch.zeros(GN, self.L, dtype=tdt, device=dev)
        self.exp_avg = torch.zeros(GN, self.L, dtype=mdt, device=dev)
        self.exp_avg_sq = torch.zeros(GN, self.L, dtype=mdt, device=dev)
        self.steps = torch.zeros(GN, dtype=torch.int32, device=dev)
        self.generators = None
        if half:  # CPU generators on every device: the same rounding draws everywhere
            seeds = list(seeds) if seeds is not None else [0] * self.G
            self.generators = [torch.Generator(device="cpu").manual_seed((int(s) * 1_000_003 + 0x5EED) & 0x7FFFFFFF)
                               for s in seeds]

    def _gather(self, rows):
        return (self.table.index_select(0, rows).float(), self.exp_avg.index_select(0, rows).float(),
                self.exp_avg_sq.index_select(0, rows).float(), self.steps.index_select(0, rows))

    def _scatter(self, rows, phi, m, v, steps):
        if self.half:
            counts = torch.bincount(self._members(rows), minlength=self.G).tolist()
            u = torch.cat([torch.rand(c, self.L, generator=gen, device="cpu")
                           for c, gen in zip(counts, self.generators)]).to(self.device)
            phi = stochastic_round_half(phi, u)
        self.table.index_copy_(0, rows, phi.to(self.table.dtype))
        self.exp_avg.index_copy_(0, rows, m.to(self.exp_avg.dtype))
        self.exp_avg_sq.index_copy_(0, rows, v.to(self.exp_avg_sq.dtype))
        self.steps.index_copy_(0, rows, steps.to(self.steps.dtype))

    def set_member_table(self, g, chunks):
        base = g * self.N
        for start, block in chunks:
            self.table[base + start: base + start + len(block)] = torch.from_numpy(block).to(self.table.device,
                                                                                             self.table.dtype)
        sl = slice(base, base + self.N)
        self.exp_avg[sl] = 0
        self.exp_avg_sq[sl] = 0
        self.steps[sl] = 0

    def member_state(self, g):
        if self.opt.mode == "rowwise":  # kept in the storage dtype (float16 snapshots are half size)
            return {"logits": self.table[g * self.N:(g + 1) * self.N].clone()}
        return super().member_state(g)

    _TENSORS = ("table", "exp_avg", "exp_avg_sq", "steps")

    def state_dict(self):
        # straight to the host on a GPU (a clone there first would double the table's memory)
        out = {"kind": self.kind, **self._opt_state(),
               **{n: _host_copy(getattr(self, n)) for n in self._TENSORS}}
        if self.generators is not None:
            out["generators"] = [gen.get_state() for gen in self.generators]
        return out

    def load_state_dict(self, state):
        if state.get("kind") != self.kind:
            raise ConfigError(f"checkpoint holds a {state.get('kind')!r} estimator, this run uses {self.kind!r}")
        self._load_opt_state(state)
        for n in self._TENSORS:
            getattr(self, n).copy_(state[n])  # a state written on any device
        if self.generators is not None:
            for gen, s in zip(self.generators, state["generators"]):
                gen.set_state(s.cpu())

    def nbytes(self):
        return {n: getattr(self, n).element_size() * getattr(self, n).numel() for n in self._TENSORS}


class MemmapStore(_Store):
    """float32 table, moments and row steps in ``.npy`` memory maps; only batch rows are
    read or written.  Files live in a fresh sub-folder of ``directory`` (or of a temporary
    folder, removed when the store is garbage-collected).  ``state_dict`` copies the files
    to a snapshot folder beside them (the last two are kept) and returns its path, so a
    checkpoint never holds the table; resuming needs that folder, i.e. a ``directory``
    that outlives the process.  Best-epoch member snapshots are ``.npy`` files too."""

    kind = "memmap"
    _ARRAYS = (("table", np.float32), ("exp_avg", np.float32), ("exp_avg_sq", np.float32), ("steps", np.int32))

    def __init__(self, n_members, n_rows, n_labels, *, directory=None, **kw):
        super().__init__(n_members, n_rows, n_labels, **kw)
        if directory is None:
            root = ownership.temporary_folder("spml-role-", "scratch")
            self._finalizer = weakref.finalize(self, ownership.discard, str(root))
        else:  # the run's scratch folder (checked: never a link), or a folder the user named
            root = Path(directory)
            self._finalizer = None
        self.dir = ownership.new_folder(root / f"estimator-{uuid.uuid4().hex[:12]}", "scratch")
        self._snapshots: list[Path] = []
        self._member_files: dict[int, list[Path]] = {}
        self._open(create=True)

    def _open(self, create: bool) -> None:
        GN = self.G * self.N
        for name, dt in self._ARRAYS:
            shape = (GN,) if name == "steps" else (GN, self.L)
            path = self.dir / f"{name}.npy"
            arr = (ownership.open_memmap(path, mode="w+", dtype=dt, shape=shape) if create
                   else ownership.open_memmap(path, mode="r+"))
            setattr(self, name, arr)

    def _gather(self, rows):
        r = rows.numpy()
        return (torch.from_numpy(self.table[r]), torch.from_numpy(self.exp_avg[r]),
                torch.from_numpy(self.exp_avg_sq[r]), torch.from_numpy(self.steps[r]))

    def _scatter(self, rows, phi, m, v, steps):
        r = rows.numpy()
        self.table[r] = phi.numpy()
        self.exp_avg[r] = m.numpy()
        self.exp_avg_sq[r] = v.numpy()
        self.steps[r] = steps.numpy().astype(np.int32)

    def set_member_table(self, g, chunks):
        base = g * self.N
        for start, block in chunks:
            sl = slice(base + start, base + start + len(block))
            self.table[sl] = block
            self.exp_avg[sl] = 0
            self.exp_avg_sq[sl] = 0
            self.steps[sl] = 0

    def _flush(self):
        for name, _ in self._ARRAYS:
            getattr(self, name).flush()

    def member_state(self, g):
        """Written to ``members/member<g>-<n>.npy``; the last two are kept per member (the
        previous epoch's checkpoint may still refer to the older one)."""
        d = ownership.mkdir(self.dir / "members")
        files = self._member_files.setdefault(g, [])
        n = int(files[-1].stem.split("-")[-1]) + 1 if files else 0
        path = d / f"member{g}-{n}.npy"
        out = ownership.open_memmap(path, mode="w+", dtype=np.float32, shape=(self.N, self.L))
        for start, block in self.iter_member_table(g):
            out[start:start + len(block)] = block
        out.flush()
        del out
        files.append(path)
        while len(files) > 2:
            ownership.remove(files.pop(0))
        return {"path": str(path)}

    def state_dict(self):
        self._flush()
        n = int(self._snapshots[-1].name.split("-")[-1]) + 1 if self._snapshots else 0
        snap = ownership.mkdir(self.dir / f"snapshot-{n}")
        for name, _ in self._ARRAYS:
            ownership.copy_file(self.dir / f"{name}.npy", snap / f"{name}.npy")
        self._snapshots.append(snap)
        while len(self._snapshots) > 2:
            ownership.remove(self._snapshots.pop(0))
        return {"kind": self.kind, **self._opt_state(), "snapshot": str(snap), "shape": (self.G, self.N, self.L)}

    def load_state_dict(self, state):
        if state.get("kind") != self.kind:
            raise ConfigError(f"checkpoint holds a {state.get('kind')!r} estimator, this run uses {self.kind!r}")
        snap = Path(state["snapshot"])
        if not snap.is_dir():
            raise SpmlError(f"memmap estimator snapshot {snap} is missing; a memmap ROLE run resumes only when "
                            "its estimator directory (--param directory=...) still exists")
        if tuple(state["shape"]) != (self.G, self.N, self.L):
            raise ConfigError(f"estimator snapshot has shape {tuple(state['shape'])}, "
                              f"expected {(self.G, self.N, self.L)}")
        self._load_opt_state(state)
        for name, _ in self._ARRAYS:
            delattr(self, name)
            ownership.copy_file(snap / f"{name}.npy", self.dir / f"{name}.npy")
        self._open(create=False)

    def nbytes(self):
        return {name: getattr(self, name).nbytes for name, _ in self._ARRAYS}


class FactorisedStore(_Store):
    """``φ_n = U_n V + b`` per member: rows of ``U (N, r)`` updated only for the batch;
    ``V (r, L)`` and ``b (L)`` with dense Adam every step.  ``rank`` is capped at ``L``
    (a rank-L factorisation is already exact and larger than the table)."""

    kind = "factorised"
    FIT_ROWS = 4096  # rows per float64 sub-block when fitting the factors

    def __init__(self, n_members, n_rows, n_labels, *, rank: int = 64, **kw):
        super().__init__(n_members, n_rows, n_labels, **kw)
        rank = int(rank)
        if rank < 1:
            raise ConfigError(f"factorised estimator rank must be >= 1, got {rank}")
        if rank >= self.L:
            warnings.warn(f"factorised estimator with rank {rank} >= L={self.L} labels uses rank {self.L} and "
                          "more memory than the full table; use storage float32/float16 instead", stacklevel=3)
        self.rank = r = min(rank, self.L)
        G, N, L = self.G, self.N, self.L
        dev = self.device
        self.U = torch.zeros(G * N, r, device=dev)
        self.U_exp_avg = torch.zeros(G * N, r, device=dev)
        self.U_exp_avg_sq = torch.zeros(G * N, r, device=dev)
        self.steps = torch.zeros(G * N, dtype=torch.int32, device=dev)
        self.V = torch.zeros(G, r, L, device=dev)
        self.b = torch.zeros(G, 1, L, device=dev)
        self.V_exp_avg, self.V_exp_avg_sq = torch.zeros_like(self.V), torch.zeros_like(self.V)
        self.b_exp_avg, self.b_exp_avg_sq = torch.zeros_like(self.b), torch.zeros_like(self.b)
        self.dense_steps = torch.zeros(G, dtype=torch.int32, device=dev)

    def _gather(self, rows):
        return (self.U.index_select(0, rows), self.U_exp_avg.index_select(0, rows),
                self.U_exp_avg_sq.index_select(0, rows), self.steps.index_select(0, rows))

    def _scatter(self, rows, phi, m, v, steps):
        self.U.index_copy_(0, rows, phi)
        self.U_exp_avg.index_copy_(0, rows, m)
        self.U_exp_avg_sq.index_copy_(0, rows, v)
        self.steps.index_copy_(0, rows, steps.to(torch.int32))

    def _batch_codes(self, index, batch):
        return self._entries(batch).view(index.shape[0], -1, self.rank)

    def _logits(self, index, batch):
        return torch.baddbmm(self.b, self._batch_codes(index, batch), self.V).view(*index.shape, self.L)

    def _row_grad(self, index, grad, batch):
        """Chain rule through ``logits = U V + b``: d/dU = grad Vᵀ (per batch entry); the
        V and b gradients are taken before anything changes."""
        G = index.shape[0]
        grad = grad.reshape(G, -1, self.L)
        U = self._batch_codes(index, batch)
        self._dense_grads = (torch.bmm(U.transpose(1, 2), grad), grad.sum(dim=1, keepdim=True))
        return torch.bmm(grad, self.V.transpose(1, 2)).reshape(-1, self.rank)

    def _after_update(self, index, grad):
        gV, gb = self._dense_grads
        self._dense_grads = None
        self.dense_steps += 1
        t = self.dense_steps.view(-1, 1, 1)
        lr = self.lrs.view(-1, 1, 1)
        b1, b2, eps = self.opt.b1, self.opt.b2, self.opt.eps
        _dense_adam_(self.V, self.V_exp_avg, self.V_exp_avg_sq, gV, lr, t, b1, b2, eps)
        _dense_adam_(self.b, self.b_exp_avg, self.b_exp_avg_sq, gb, lr, t, b1, b2, eps)

    def _rows_to_logits(self, g, phi):
        return phi @ self.V[g] + self.b[g]

    def set_member_table(self, g, chunks):
        chunks = list(chunks)  # two passes over a one-shot iterator (load_member_state re-reads instead)
        self._fit_member(g, lambda: iter(chunks))

    def initialise(self, observed, seeds):
        for g, seed in enumerate(seeds):
            self._fit_member(g, lambda s=seed: iter_initial_logits(observed, s))

    def _fit_member(self, g: int, make_chunks) -> None:
        """Best rank-r approximation with a per-label bias: ``b`` = column means, ``V`` = the
        top-r eigenvectors of the centred Gram matrix, ``U`` = centred rows projected on
        them.  Two passes over the chunks (column sums and Gram matrix in float64, then
        the codes), the float64 arithmetic on sub-blocks of ``FIT_ROWS`` rows: never more
        than one chunk of the table and a few MB of temporaries in memory (``make_chunks``
        is called once per pass)."""
        L, r, N = self.L, self.rank, self.N
        s = np.zeros(L)
        gram = np.zeros((L, L))
        for _, block in make_chunks():
            for i in range(0, len(block), self.FIT_ROWS):
                b64 = block[i:i + self.FIT_ROWS].astype(np.float64)
                s += b64.sum(0)
                gram += b64.T @ b64
        mean = s / N
        _, vecs = np.linalg.eigh(gram - N * np.outer(mean, mean))  # ascending eigenvalues
        W = vecs[:, ::-1][:, :r].copy()  # (L, r)
        base = g * N
        for start, block in make_chunks():
            for i in range(0, len(block), self.FIT_ROWS):
                code = (block[i:i + self.FIT_ROWS].astype(np.float64) - mean) @ W
                row = base + start + i
                self.U[row: row + len(code)] = torch.from_numpy(code.astype(np.float32)).to(self.device)
        self.V[g] = torch.from_numpy(W.T.astype(np.float32)).to(self.device)
        self.b[g, 0] = torch.from_numpy(mean.astype(np.float32)).to(self.device)
        self._reset_member(g)

    def _reset_member(self, g: int) -> None:
        sl = slice(g * self.N, (g + 1) * self.N)
        self.U_exp_avg[sl] = 0
        self.U_exp_avg_sq[sl] = 0
        self.steps[sl] = 0
        for t in (self.V_exp_avg, self.V_exp_avg_sq, self.b_exp_avg, self.b_exp_avg_sq):
            t[g] = 0
        self.dense_steps[g] = 0

    def member_state(self, g):
        rows = torch.arange(g * self.N, (g + 1) * self.N, device=self.device)
        phi, m, v, steps = self._gather(rows)
        self.opt.current(phi, m, v, steps, self._lr_values[g])
        return {"U": phi.clone(), "V": self.V[g].clone(), "b": self.b[g].clone()}

    def load_member_state(self, g, state):
        if "U" in state and torch.as_tensor(state["U"]).shape[1] == self.rank:
            sl = slice(g * self.N, (g + 1) * self.N)
            self.U[sl] = torch.as_tensor(state["U"], device="cpu").float().to(self.device)
            self.V[g] = torch.as_tensor(state["V"], device="cpu").float().to(self.device)
            self.b[g] = torch.as_tensor(state["b"], device="cpu").float().to(self.device)
            self._reset_member(g)
            return
        self._pending = None
        self._fit_member(g, lambda: _chunks_from_state(state, self.N, self.L))  # read twice, never held whole

    _TENSORS = ("U", "U_exp_avg", "U_exp_avg_sq", "steps", "V", "V_exp_avg", "V_exp_avg_sq", "b", "b_exp_avg",
                "b_exp_avg_sq", "dense_steps")

    def state_dict(self):
        return {"kind": self.kind, "rank": self.rank, **self._opt_state(),
                **{n: getattr(self, n).clone() for n in self._TENSORS}}

    def load_state_dict(self, state):
        if state.get("kind") != self.kind or state.get("rank") != self.rank:
            raise ConfigError(f"checkpoint holds a {state.get('kind')!r} estimator (rank {state.get('rank')}), "
                              f"this run uses {self.kind!r} (rank {self.rank})")
        self._load_opt_state(state)
        for n in self._TENSORS:
            getattr(self, n).copy_(state[n])

    def nbytes(self):
        return {n: getattr(self, n).element_size() * getattr(self, n).numel() for n in self._TENSORS}


def make_store(storage: str, n_members: int, n_rows: int, n_labels: int, *, lrs, seeds=None, rank: int = 64,
               directory=None, adam: str = "rowwise", betas=(0.9, 0.999), eps: float = 1e-8,
               device="cpu") -> _Store:
    """A store of ``storage``; ``device`` holds the float32/float16/factorised arrays (the
    ``memmap`` storage is on the host by nature and ignores it)."""
    check_params({"storage": storage}, {"storage": STORAGE}, owner="ROLE's label estimator")
    kw = dict(lrs=lrs, adam=adam, betas=betas, eps=eps)
    if storage == "float32":
        return DenseStore(n_members, n_rows, n_labels, device=device, **kw)
    if storage == "float16":
        return DenseStore(n_members, n_rows, n_labels, half=True, seeds=seeds, device=device, **kw)
    if storage == "memmap":
        return MemmapStore(n_members, n_rows, n_labels, directory=directory, **kw)
    return FactorisedStore(n_members, n_rows, n_labels, rank=rank, device=device, **kw)


def storage_bytes(storage: str, n_rows: int, n_labels: int, *, rank: int = 64, n_members: int = 1) -> int:
    """Bytes of a storage's arrays (table or factors, Adam moments, step counts) by formula;
    ``_Store.nbytes`` measures the allocated arrays (tested equal)."""
    check_params({"storage": storage}, {"storage": STORAGE}, owner="ROLE's label estimator")
    G, N, L = n_members, n_rows, n_labels
    if storage in ("float32", "memmap"):
        return G * (12 * N * L + 4 * N)
    if storage == "float16":
        return G * (6 * N * L + 4 * N)
    r = min(rank, L)  # factorised
    return G * (12 * (N * r + r * L + L) + 4 * N + 4)
