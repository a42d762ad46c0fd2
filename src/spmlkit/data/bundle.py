"""Prepared bundles: a dataset split, observed and frozen on disk.

``spml prepare`` turns a :class:`~spmlkit.data.MultiLabelDataset` into a folder that
every later step reads (memory-mapped, never loaded whole)::

    <bundle>/meta.json                 written last: a bundle without it is incomplete
    <bundle>/{train,val,test}/X.npy    float32 features       (feature datasets)
    <bundle>/{train,val,test}/paths.txt image paths, one per line (image datasets)
    <bundle>/{train,val,test}/Y.*.npy   full labels, sparse (absent for observed-only data)
    <bundle>/{train,val,test}/index.npy row numbers in the source split
    <bundle>/{train,val,test}/ids.npy  example identifiers (unicode), when the source has them
    <bundle>/{train,val,test}/xy.npy   float64 (N, 2) places (x, y), when the source has them
    <bundle>/val/Z.*.npy, test/Z.*.npy  observations (observed-only data only), sparse
    <bundle>/{val,test}/mask.*.npy      where Y is known (labels surveyed on part of the examples), sparse
    <bundle>/observed/<regime>.*.npy    training observations Z, one matrix per regime
    <bundle>/observed/partial-p<p>.*.npy the 'partial' regime at hiding probability p (on demand)
    <bundle>/features/<name>/<split>.npy  cached backbone features of image bundles

A label, observation or mask matrix ``M`` is stored sparse (:mod:`spmlkit.sparse_labels`),
as ``M.header.npy`` (rows, labels, fill, dtype code), ``M.indptr.npy`` (int64 row
pointers), ``M.indices.npy`` (int32 label indices) and, unless every listed entry is 1,
``M.values.npy`` (int8): a million single positives take 13 MB whatever the number of
labels.  Bundles of format 1 (dense ``M.npy``) are still read, converted row block by row
block.

Protocol (Cole et al. §6.1, the authors' data preparation, elijahcole/single-positive-multi-label `preproc/`): where the source has an
official test split it is the test set; otherwise ``test_fraction`` of it is held out
(seeded).  ``val_fraction`` (default 20%) of the training set is held out for
validation (seeded).  ``test_fraction=0`` keeps no test split (the model to deploy
trains on every row but the validation rows, which ``auto`` and best-epoch selection
need); ``val_fraction=0`` keeps no validation split (the last epoch is kept).  Validation and test keep full labels.  Training examples with no
true positive cannot get a single positive and are dropped (the count is stored in
``meta.json`` and printed).  The observations of the chosen regime are generated once
here; other regimes are generated on demand from the same seed (the kept positive is
the same in every single-positive regime) and cached, so every method sees the same
labels.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._version import __version__
from ..errors import ConfigError, CorruptFileError, DataFormatError, SpmlError
from .. import ownership
from ..io import FolderLock, read_json, sha256_file
from ..ownership import save_npy, write_json, write_text
from ..labels import full_observations, get_regime, has_positive, label_stats, observation_stats, observe
from ..sparse_labels import SparseLabels, as_sparse
from .bundle_checks import OBSERVED_ONLY, _VERIFIED, _check_finite, _verify_checksum, check_observations  # (re-exported)
from .dataset import MultiLabelDataset, Split

BUNDLE_FORMAT = 2
#: formats this version reads: 1 stored label matrices dense (``M.npy``), 2 sparse
READABLE_FORMATS = (1, 2)
SPLITS = ("train", "val", "test")


def split_indices(n: int, fraction: float, rng: np.random.Generator, *,
                  source: str | None = None, option: str = "hold-out fraction") -> tuple[np.ndarray, np.ndarray]:
    """Seeded hold-out: returns sorted ``(keep, held_out)`` row indices, ``round(n*fraction)`` held out.
    ``source`` (the dataset's file, or what is held out) prefixes the error message and
    ``option`` (e.g. ``--test-fraction``) names the setting it comes from."""
    where = source + ": " if source else ""
    if not 0.0 < fraction < 1.0:
        raise ConfigError(f"{where}{option} must be below 1 (0 holds nothing out), got {fraction:g}"
                          if fraction >= 1 else f"{where}{option} must be in (0, 1), got {fraction:g}")
    n_out = int(round(n * fraction))
    if n_out == 0 or n_out == n:
        raise ConfigError(f"{where}{option} {fraction:g} cannot hold out {fraction:.0%} of {n} examples "
                          f"({'none' if n_out == 0 else 'all'} would be left "
                          f"{'out' if n_out == 0 else 'to train on'}); choose another {option}")
    perm = rng.permutation(n)
    return np.sort(perm[n_out:]), np.sort(perm[:n_out])


def is_bundle_folder(path: str | Path) -> bool:
    """True when ``path`` holds a bundle written by spmlkit (its ``meta.json``)."""
    try:
        meta = read_json(Path(path) / "meta.json")
    except (OSError, SpmlError):
        return False
    return isinstance(meta, dict) and "format" in meta and "spmlkit_version" in meta and "sizes" in meta


ownership.register_kind("bundle", "a bundle", is_ours=is_bundle_folder,
                        layout=("meta.json", "train", "val", "test", "observed", "features"))


_DTYPE_CODES = {0: np.dtype(bool), 1: np.dtype(np.int8)}


def save_labels(folder: Path, stem: str, M) -> list[Path]:
    """Write the label/observation/mask matrix ``M`` (dense or sparse) as ``stem.*.npy``
    in ``folder`` (module docstring); returns the files written."""
    S = as_sparse(M)
    code = next(c for c, d in _DTYPE_CODES.items() if d == S.dtype)
    files = {"header": np.array([len(S), S.n_labels, S.fill, code], dtype=np.int64),
             "indptr": S.indptr, "indices": S.indices}
    if S.values is not None:
        files["values"] = S.values
    out = []
    for part, arr in files.items():
        path = folder / f"{stem}.{part}.npy"
        save_npy(path, arr)
        out.append(path)
    return out


def _cache_labels(folder: Path, stem: str, M) -> None:
    """Cache ``M`` as ``stem.*.npy`` with a checksum sidecar for each part, such that a
    reader never meets a part without its sidecar: the parts are written under a pending
    name, each sidecar goes in place before its part is renamed into place, and the header
    (what :func:`labels_stored` looks for) comes last.  Two processes generating the same
    observations at once (``spml bench --jobs 2`` on one bundle, the ranks of a distributed
    run) each write their own pending files and rename the same bytes into place."""
    pending = f"{stem}.pending-{os.getpid()}"  # each writer its own (distributed ranks write at once)
    parts = save_labels(folder, pending, M)
    parts.sort(key=lambda f: f.name == f"{pending}.header.npy")  # the header last
    for f in parts:
        final = folder / (stem + f.name[len(pending):])
        write_text(final.with_name(final.name + ".sha256"), sha256_file(f) + "\n")
        ownership.rename(f, final)


def labels_stored(folder: Path, stem: str) -> bool:
    """True when ``folder`` holds the matrix ``stem`` (sparse, or dense from format 1)."""
    return (folder / f"{stem}.header.npy").exists() or (folder / f"{stem}.npy").exists()


def _build_bundle(out: Path, parts: dict, train, observed_only: bool, dataset, regime_name: str, obs_ss,
                  hide_prob: float, seed: int, val_fraction: float, test_fraction: float, n_dropped: int,
                  notes: list, replacing: bool, sources=()) -> None:
    """Write the bundle into a temporary sibling folder, then move it into place
    (:func:`spmlkit.ownership.build`): only over nothing, an empty folder, or the bundle
    ``--overwrite`` was checked to replace (checked again there, under the lock: a folder
    that appeared meanwhile is never removed, nor a file of anyone else's in the old bundle)."""
    with ownership.build(out, "bundle", replace=replacing, inputs=sources) as tmp:
        arrays = {}
        for split in SPLITS:
            s, rows = parts[split]
            d = tmp / split
            if s.X is not None:
                save_npy(d / "X.npy", np.asarray(s.X, dtype=np.float32))
            else:
                write_text(d / "paths.txt", "".join(p + "\n" for p in s.paths))
            if s.Y is not None:
                save_labels(d, "Y", s.Y)
            if s.Z is not None and split != "train":
                save_labels(d, "Z", s.Z)
            if s.areas is not None:  # largest-instance areas (the 'single_positive_largest' regime;
                save_npy(d / "areas.npy", s.areas.astype(np.float64))  # COCO-style data, few labels)
            if s.mask is not None and s.Y is not None:  # where Y is known
                save_labels(d, "mask", as_sparse(s.mask, dtype=bool))
            save_npy(d / "index.npy", np.asarray(rows, dtype=np.int64))
            if s.ids is not None:  # ids and places pass through to predictions
                save_npy(d / "ids.npy", np.asarray(s.ids, dtype=str).reshape(-1))
            if s.xy is not None:
                save_npy(d / "xy.npy", s.xy.astype(np.float64))
            arrays[split] = len(s)
        Z = train.Z if observed_only else observe(as_sparse(train.Y), regime_name, seed=obs_ss,
                                                  hide_prob=hide_prob, areas=train.areas)
        save_labels(tmp / "observed", regime_name, Z)  # (its folder made by spmlkit.ownership)
        meta = {
            "format": BUNDLE_FORMAT,
            "spmlkit_version": __version__,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "name": dataset.name,
            "source": dataset.source,
            "kind": dataset.kind,
            "label_names": list(dataset.label_names),
            "feature_names": dataset.feature_names,
            **({"encoding": dataset.encoding} if dataset.encoding is not None else {}),
            **({"places": dataset.places} if dataset.places is not None else {}),
            **({"feature_source": dataset.feature_source} if dataset.feature_source is not None else {}),
            **({"label_reading": dataset.label_reading} if dataset.label_reading is not None else {}),
            "n_features": int(train.X.shape[1]) if train.X is not None else None,
            "has_full_labels": not observed_only,
            "full_label_splits": [sp for sp in SPLITS if parts[sp][0].Y is not None],
            "regime": regime_name,
            "seed": int(seed),
            "val_fraction": val_fraction,
            "test_fraction": test_fraction if "test" not in dataset.splits else None,
            "hide_prob": hide_prob,
            "sizes": arrays,
            "dropped_train_without_positive": n_dropped,
            **({"background_rows": int((as_sparse(train.Z).row_counts(0) == len(dataset.label_names)).sum())}
               if dataset.background else {}),
            "train_label_stats": label_stats(train.Y) if not observed_only else None,
            "train_observation_stats": observation_stats(Z),
            "notes": notes,
            # integrity of every array written here (verified when read, mandatory; see Bundle._npy)
            "checksums": {str(f.relative_to(tmp)): sha256_file(f) for f in sorted(tmp.rglob("*.npy"))},
        }
        write_json(tmp / "meta.json", meta)


def _seed_streams(seed: int):
    split_ss, test_ss, obs_ss = np.random.SeedSequence(seed).spawn(3)
    return np.random.default_rng(split_ss), np.random.default_rng(test_ss), obs_ss


def prepare_bundle(dataset: MultiLabelDataset, out: str | Path, *, regime: str = "single_positive",
                   seed: int = 0, val_fraction: float = 0.2, test_fraction: float = 0.2, hide_prob: float = 0.5,
                   overwrite: bool = False, log=print) -> "Bundle":
    """Split, observe and save ``dataset`` as a bundle at ``out`` (atomically: a temporary
    folder is renamed into place at the end)."""
    given = Path(out)  # the bundle is returned under the path as given (relative paths stay relative)
    out = Path(os.path.abspath(out))  # '.' and 'a/..' have no usable name or parent otherwise
    ownership.check_output_folder(out)
    # an output is never an input: not the source file, nor a folder holding it (by inode)
    sources = [s for s in (dataset.source, *getattr(dataset, "inputs", ())) if s]
    ownership.refuse_inputs(out, sources)
    if out.exists():
        if not overwrite:
            raise ConfigError(f"{out} already exists; choose another --out or pass --overwrite")
        ownership.check_clearable(out, "bundle", inputs=sources)
    observed_only = not dataset.has_full_labels
    if observed_only and len(dataset.splits["train"]) and not as_sparse(dataset.splits["train"].Z).row_counts(1).any():
        raise DataFormatError(dataset.source or None, "no observed positive in the training data (every observation "
                                                      "is negative or unobserved); single-positive training needs "
                                                      "positives")
    regime_name = OBSERVED_ONLY if observed_only else get_regime(regime).name
    split_rng, test_rng, obs_ss = _seed_streams(seed)

    src_train = dataset.splits["train"]
    parts: dict[str, tuple[Split, np.ndarray]] = {}
    notes = list(dataset.notes)
    train_rows = np.arange(len(src_train))
    none = np.zeros(0, dtype=np.int64)
    if "test" in dataset.splits:
        parts["test"] = (dataset.splits["test"], np.arange(len(dataset.splits["test"])))
    elif test_fraction == 0:  # the final model: every row trains or validates (evaluate with a hold-out first)
        parts["test"] = (src_train.subset(none), none)
        notes.append("no test split (--test-fraction 0): every row trains or validates; test scores are not "
                     "available (evaluate with a hold-out first, then prepare again with --test-fraction 0 "
                     "for the model you deploy)")
    else:
        train_rows, test_rows = split_indices(len(src_train), test_fraction, test_rng,
                                              source=f"{dataset.source or dataset.name} (test split)",
                                              option="--test-fraction")
        parts["test"] = (src_train.subset(test_rows), test_rows)
        notes.append(f"no official test split: held out {test_fraction:.0%} of the training file as test (seed {seed})")
    if "val" in dataset.splits:
        parts["val"] = (dataset.splits["val"], np.arange(len(dataset.splits["val"])))
    elif val_fraction == 0:  # no validation: the last epoch is kept; auto (which chooses on validation) refuses
        parts["val"] = (src_train.subset(none), none)
        notes.append("no validation split (--val-fraction 0): training keeps the last epoch (--selection last); "
                     "auto needs a validation split")
    else:
        keep, val = split_indices(len(train_rows), val_fraction, split_rng,
                                  source=f"{dataset.source or dataset.name} (validation split)",
                                  option="--val-fraction")
        parts["val"] = (src_train.subset(train_rows[val]), train_rows[val])
        train_rows = train_rows[keep]
    train = src_train.subset(train_rows)

    # drop training examples that cannot carry a single positive
    if observed_only:
        Zt = as_sparse(train.Z)
        keep_mask = Zt.row_counts(0) < Zt.n_labels  # at least one observed label
        why = "no observed label"
        if dataset.background:  # declared background rows are kept
            keep_mask = np.ones(len(train), dtype=bool)
    else:
        keep_mask = has_positive(train.Y)
        why = "no true positive"
    n_dropped = int((~keep_mask).sum())
    if n_dropped:
        train = train.subset(np.flatnonzero(keep_mask))
        train_rows = train_rows[keep_mask]
        log(f"dropped {n_dropped} training example(s) with {why} (they cannot carry a single positive)")
    if len(train) == 0:
        raise DataFormatError(dataset.source or None, "no training examples left after dropping those without positives")
    parts["train"] = (train, train_rows)

    ownership.ensure_parent(out)  # (checked inside a folder spmlkit owns: a bench's bundles/)
    # one prepare (or features run) per bundle at a time: a lock file beside it (the bundle
    # folder itself is replaced), and the existing bundle's own lock when it is replaced
    with FolderLock(out, what="bundle", lock_file=out.parent / f".{out.name}{FolderLock.NAME}", remove=True), \
            contextlib.ExitStack() as held:
        replacing = out.exists()
        if replacing and is_bundle_folder(out):
            held.enter_context(FolderLock(out, what="bundle"))
        _build_bundle(out, parts, train, observed_only, dataset, regime_name, obs_ss, hide_prob, seed, val_fraction,
                      test_fraction, n_dropped, notes, replacing, sources)
    return Bundle(given)


@dataclass
class Bundle:
    """A prepared bundle on disk; every array is opened memory-mapped (read-only) on
    access, never loaded whole (pass ``mmap=False`` for an in-memory copy)."""

    path: Path

    def __init__(self, path: str | Path):
        self.path = Path(path)
        meta_path = self.path / "meta.json"
        if not meta_path.exists():
            if self.path.exists():
                raise SpmlError(f"{self.path} is not a complete bundle (no meta.json); re-run 'spml prepare'")
            raise SpmlError(f"bundle {self.path} not found; create it with 'spml prepare'")
        self.meta = read_json(meta_path)
        if not isinstance(self.meta, dict):
            raise CorruptFileError(f"{meta_path}: expected a JSON object describing the bundle")
        if self.meta.get("format") not in READABLE_FORMATS:
            raise SpmlError(f"{self.path}: bundle format {self.meta.get('format')!r} is not supported by this "
                            f"spmlkit ({__version__}, format {BUNDLE_FORMAT}); re-run 'spml prepare'")
        missing = [k for k in ("name", "label_names", "kind", "has_full_labels", "regime", "sizes", "seed")
                   if k not in self.meta]
        sizes = self.meta.get("sizes")
        names = self.meta.get("label_names")
        if (missing or not isinstance(sizes, dict) or any(not isinstance(sizes.get(k), int) for k in SPLITS)
                or not isinstance(names, list) or not names or len(set(map(str, names))) != len(names)):
            raise CorruptFileError(f"{meta_path}: damaged bundle description ("
                                   + (f"missing {', '.join(missing)}" if missing else
                                      "sizes or label_names are not valid") + "); re-run 'spml prepare'")
        if not isinstance(self.meta.get("checksums"), dict) or not self.meta["checksums"]:
            raise CorruptFileError(f"{meta_path}: records no checksums of the bundle's arrays (written by an older "
                                   "spmlkit, or edited); spmlkit reads only arrays it can verify — re-run "
                                   "'spml prepare'")
        self._check_recorded_files()

    def _check_recorded_files(self) -> None:
        """Every array ``meta.json`` records must be there (a regular file): a deleted
        ``observed.values.npy`` would read observed negatives as positives, a deleted
        ``ids.npy``/``xy.npy`` would silently drop ids and places from predictions."""
        gone = [rel for rel in self.meta["checksums"]
                if not isinstance(rel, str) or not (self.path / rel).is_file()]
        if gone:
            more = f" (and {len(gone) - 3} more)" if len(gone) > 3 else ""
            raise CorruptFileError(f"{self.path}: files the bundle records are missing: {', '.join(map(str, gone[:3]))}"
                                   f"{more}; the bundle was altered — re-run 'spml prepare'")

    # ---------------------------------------------------------------- properties
    @property
    def name(self) -> str:
        return self.meta["name"]

    @property
    def label_names(self) -> list[str]:
        return list(self.meta["label_names"])

    @property
    def n_labels(self) -> int:
        return len(self.meta["label_names"])

    @property
    def kind(self) -> str:
        return self.meta["kind"]

    @property
    def has_full_labels(self) -> bool:
        return bool(self.meta["has_full_labels"])

    @property
    def regime(self) -> str:
        return self.meta["regime"]

    def size(self, split: str) -> int:
        return int(self.meta["sizes"][split])

    # -------------------------------------------------------------------- arrays
    def _npy(self, rel: str, mmap: bool = True, *, rows: int | None = None, cols: int | None = None,
             what: str = "array", ndim: int = 2, dtype=None, advice: str = "re-run 'spml prepare'") -> np.ndarray:
        """Load ``rel`` after checking it against the checksum recorded when it was
        written (``meta.json["checksums"]``, or a ``.sha256`` sidecar for arrays written
        later); never unpickles (object arrays are refused).  ``rows``/``cols``: the
        shape it must have."""
        p = self.path / rel
        if not p.exists():
            raise SpmlError(f"{p} is missing from the bundle")
        _verify_checksum(p, self.meta["checksums"].get(rel), advice=advice)
        try:
            arr = np.load(p, mmap_mode="r" if mmap else None, allow_pickle=False)
        except ValueError as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if "allow_pickle" in msg or "Object arrays" in msg or "Python objects" in msg:  # (the last: mapped)
                msg = "holds Python objects (an object array); spmlkit never unpickles bundle files"
            raise CorruptFileError(f"{p}: not a readable numeric array ({msg}); {advice}") from None
        except (OSError, EOFError) as exc:
            raise CorruptFileError(f"{p}: cannot be read ({getattr(exc, 'strerror', None) or exc}); "
                                   f"{advice}") from None
        if arr.dtype.hasobject or arr.ndim != ndim or arr.dtype.kind not in "biuf":
            raise CorruptFileError(f"{p}: expected a {ndim}-D numeric {what}, found {arr.ndim}-D {arr.dtype}; "
                                   f"{advice}")
        if rows is not None and arr.shape[0] != rows:
            raise CorruptFileError(f"{p}: {what} has {arr.shape[0]} rows but the bundle's meta.json says {rows}; "
                                   f"{advice}")
        if cols is not None and ndim > 1 and arr.shape[1] != cols:
            raise CorruptFileError(f"{p}: {what} has {arr.shape[1]} columns, expected {cols}; {advice}")
        if dtype is not None and arr.dtype != dtype:
            raise CorruptFileError(f"{p}: {what} must be {np.dtype(dtype).name} (as spmlkit writes it), found "
                                   f"{arr.dtype}; {advice}")
        return arr

    def features(self, split: str, feature_set: str | None = None, *, mmap: bool = True) -> np.ndarray:
        """``(N, D)`` float32 features of ``split`` (memory-mapped).

        For image bundles, ``feature_set`` names a cache written by ``spml features``;
        with one cache present it is chosen automatically."""
        self._check_split(split)
        if self.kind == "features" and feature_set is None:
            return self._npy(f"{split}/X.npy", mmap, rows=self.size(split), cols=self.meta.get("n_features"),
                             what="feature matrix", dtype=np.float32)
        sets = self.feature_sets()
        if feature_set is None:
            if len(sets) == 1:
                feature_set = sets[0]
            elif not sets:
                raise SpmlError(f"{self.path} holds images and no cached features; run 'spml features {self.path}'")
            else:
                raise SpmlError(f"{self.path} has several feature caches {sets}; choose one with --feature-set")
        if feature_set not in sets:
            raise SpmlError(f"feature set {feature_set!r} not in {self.path}; available: {sets or 'none'}")
        X = self._npy(f"features/{feature_set}/{split}.npy", mmap, rows=self.size(split), what="feature matrix",
                      dtype=np.float32, advice=f"run 'spml features {self.path}' again with the options that "
                                                f"made it (a cache an older spmlkit wrote gets its checksums "
                                                f"recorded; a damaged one: delete {self.path / 'features' / feature_set} "
                                                "first)")
        _check_finite(self.path / "features" / feature_set / f"{split}.npy", X)
        return X

    def feature_sets(self) -> list[str]:
        d = self.path / "features"
        return sorted(p.name for p in d.iterdir() if (p / "test.npy").exists()) if d.is_dir() else []

    def paths(self, split: str) -> list[str]:
        self._check_split(split)
        p = self.path / split / "paths.txt"
        if not p.exists():
            raise SpmlError(f"{self.path} holds feature vectors, not images")
        return p.read_text(encoding="utf-8").splitlines()

    def _matrix(self, rel: str, *, rows: int, what: str, dtype, mmap: bool = True) -> SparseLabels:
        """The stored matrix ``rel`` (``split/Y``, ``observed/<regime>``, ...): sparse files,
        or a dense format-1 ``rel.npy`` converted row block by row block.  Every file goes
        through :meth:`_npy` (checksum, dtype, shape); the matrix must have ``rows`` rows,
        the bundle's labels as columns and values of its kind."""
        folder, _, stem = rel.rpartition("/")
        base = self.path / folder
        where = self.path / f"{rel}.*.npy"
        L = self.n_labels
        if not (base / f"{stem}.header.npy").exists():
            dense = self._npy(f"{rel}.npy", mmap, rows=rows, cols=L, what=what)
            if np.dtype(dtype) == np.int8:
                if dense.dtype != np.int8:
                    raise CorruptFileError(f"{base / (stem + '.npy')}: observations must be int8 (+1 / 0 / -1), "
                                           f"found {dense.dtype}")
            elif dense.dtype != np.bool_:
                raise CorruptFileError(f"{base / (stem + '.npy')}: a {what} must be a bool matrix (as "
                                       f"'spml prepare' writes it), found {dense.dtype}; re-run 'spml prepare'")
            return SparseLabels.from_dense(dense, dtype=dtype, source=str(base / f"{stem}.npy"))
        head = self._npy(f"{rel}.header.npy", False, ndim=1, what=f"{what} header")
        if head.dtype.kind not in "iu" or head.shape != (4,) or int(head[3]) not in _DTYPE_CODES:
            raise CorruptFileError(f"{where}: damaged {what} header; re-run 'spml prepare'")
        n, width, fill, code = (int(v) for v in head)
        if n != rows or width != L or _DTYPE_CODES[code] != np.dtype(dtype):
            raise CorruptFileError(f"{where}: the {what} is {n} x {width} ({_DTYPE_CODES[code]}) where the bundle "
                                   f"says {rows} x {L} ({np.dtype(dtype)}); re-run 'spml prepare'")
        indptr = self._npy(f"{rel}.indptr.npy", mmap, ndim=1, rows=n + 1, what=f"{what} row pointers")
        indices = self._npy(f"{rel}.indices.npy", mmap, ndim=1, what=f"{what} label indices")
        values = None
        if (base / f"{stem}.values.npy").exists():
            values = self._npy(f"{rel}.values.npy", mmap, ndim=1, rows=indices.size, what=f"{what} values")
        try:
            return SparseLabels(indptr, indices, values, n_labels=L, fill=fill, dtype=dtype, source=str(where))
        except SpmlError as exc:
            raise CorruptFileError(f"{exc}; re-run 'spml prepare'") from None

    def labels(self, split: str, *, mmap: bool = True) -> SparseLabels | None:
        """Full labels ``Y`` of ``split`` as :class:`~spmlkit.sparse_labels.SparseLabels`
        (bool; ``np.asarray`` gives the dense matrix), or None when the bundle has no full
        labels for it.  Anything but 0/1 is refused, as observations must be in {-1, 0, +1}."""
        self._check_split(split)
        if not labels_stored(self.path / split, "Y"):
            return None
        return self._matrix(f"{split}/Y", rows=self.size(split), what="label matrix", dtype=bool, mmap=mmap)

    def index(self, split: str) -> np.ndarray:
        """Row numbers of ``split`` in its source (``index.npy``), through the same checked
        reader as every other array (checksum, dtype, shape): whole numbers, one per row
        of the split, none negative or repeated."""
        self._check_split(split)
        p = self.path / split / "index.npy"
        idx = self._npy(f"{split}/index.npy", False, rows=self.size(split), ndim=1, what="row index")
        if idx.dtype.kind not in "iu":
            raise CorruptFileError(f"{p}: row numbers must be whole numbers, found {idx.dtype}; re-run 'spml prepare'")
        if idx.size and (int(idx.min()) < 0 or len(np.unique(idx)) != len(idx)):
            raise CorruptFileError(f"{p}: row numbers are negative or repeated; the file was altered — re-run "
                                   "'spml prepare'")
        return idx

    def ids(self, split: str) -> list[str] | None:
        """Example identifiers of ``split`` (``ids.npy``: the source's ``siteid``/``id``
        column), or None when the source had none.  Checked like every array (checksum,
        one per row) and read without unpickling."""
        self._check_split(split)
        rel = f"{split}/ids.npy"
        p = self.path / rel
        if not p.exists():
            return None
        _verify_checksum(p, (self.meta.get("checksums") or {}).get(rel))
        try:
            arr = np.load(p, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise CorruptFileError(f"{p}: not a readable array of identifiers ({exc}); re-run 'spml prepare'") from None
        if arr.dtype.kind != "U" or arr.ndim != 1 or len(arr) != self.size(split):
            raise CorruptFileError(f"{p}: expected {self.size(split)} identifiers (text), found {arr.ndim}-D "
                                   f"{arr.dtype} of {len(arr)}; re-run 'spml prepare'")
        return [str(i) for i in arr]

    def xy(self, split: str) -> np.ndarray | None:
        """``(N, 2)`` places of ``split`` (``xy.npy``; in the coordinate system of
        ``meta.json["places"]``), or None."""
        self._check_split(split)
        if not (self.path / split / "xy.npy").exists():
            return None
        return self._npy(f"{split}/xy.npy", False, rows=self.size(split), cols=2, what="place (x, y) array")

    def label_mask(self, split: str, *, mmap: bool = True) -> SparseLabels | None:
        """``(N, L)`` bool, sparse: where the full labels of ``split`` are known (a label
        surveyed only on part of the examples); None when they are known everywhere."""
        self._check_split(split)
        if not labels_stored(self.path / split, "mask"):
            return None
        return self._matrix(f"{split}/mask", rows=self.size(split), what="label mask", dtype=bool, mmap=mmap)

    def areas(self, split: str) -> np.ndarray | None:
        """``(N, L)`` area of each present label's largest instance (COCO-style bundles), or
        None when the source had no instance annotations."""
        self._check_split(split)
        if not (self.path / split / "areas.npy").exists():
            return None
        return self._npy(f"{split}/areas.npy", False, rows=self.size(split), cols=self.n_labels,
                         what="instance-area matrix", dtype=np.float64)

    def observations(self, split: str = "train", regime: str | None = None, *,
                     hide_prob: float | None = None, mmap: bool = True) -> np.ndarray:
        """Observations ``Z`` (memory-mapped read-only when stored).  For ``train``: the
        bundle's regime (default) or another one, generated from the bundle's seed on first
        use and cached in ``observed/``.
        ``hide_prob`` (``partial`` regime only) overrides the bundle's hiding probability;
        such observations are cached as ``observed/partial-p<hide_prob>.npy``.  They come
        from the same uniform draws for every ``hide_prob``, so the labels hidden at a
        smaller probability stay hidden at a larger one (nested, as a sweep should be).
        For ``val``/``test`` of observed-only bundles: the user's observations."""
        self._check_split(split)
        if split != "train":
            if labels_stored(self.path / split, "Z"):
                return check_observations(self._matrix(f"{split}/Z", rows=self.size(split), what="observation matrix",
                                                       dtype=np.int8, mmap=mmap), self.path / split / "Z.*.npy")
            Y = self.labels(split)
            if Y is None:
                raise SpmlError(f"{self.path}: split {split!r} has neither labels nor observations")

            return full_observations(Y)
        name = self.regime if regime is None else (regime if regime == OBSERVED_ONLY else get_regime(regime).name)
        fname = name
        if hide_prob is not None:
            if name != "partial":
                raise ConfigError(f"hide_prob applies to the 'partial' regime only, not {name!r}")
            if not 0.0 <= float(hide_prob) <= 1.0:
                raise ConfigError(f"hide_prob must be in [0, 1], got {hide_prob}")
            fname = f"partial-p{float(hide_prob):g}"
        if labels_stored(self.path / "observed", fname):
            return check_observations(self._matrix(f"observed/{fname}", rows=self.size("train"),
                                                   what="observation matrix", dtype=np.int8, mmap=mmap),
                                      self.path / "observed" / f"{fname}.*.npy", name,
                                      background_rows=int(self.meta.get("background_rows") or 0))
        if not self.has_full_labels:
            raise SpmlError(f"{self.path} holds the user's own observations only; regime {name!r} cannot be "
                            "simulated without full labels")
        _, _, obs_ss = _seed_streams(int(self.meta["seed"]))
        hp = float(self.meta.get("hide_prob", 0.5)) if hide_prob is None else float(hide_prob)
        Z = observe(self.labels("train"), name, seed=obs_ss, hide_prob=hp, areas=self.areas("train"))
        ownership.folder(self.path, "bundle")  # a bundle spmlkit wrote (never a link inside it followed)
        _cache_labels(self.path / "observed", fname, Z)
        return Z

    def selection_observations(self, split: str = "val", regime: str = "single_positive") -> np.ndarray:
        """What a practitioner would have for ``split`` (default ``val``): the user's own
        observations when the bundle has them; otherwise observations simulated from the
        split's full labels under ``regime`` (the training regime), from a seed stream of
        the bundle's seed of its own (the training draw is unchanged), not cached.

        The observed-label selection criteria (``observed_map``, the ``auto`` recipe's
        choice) score with these, so a benchmark on fully labelled data selects exactly
        as a user with single-positive validation data would."""
        self._check_split(split)
        if split == "train":
            return self.observations("train", regime=regime)
        Y = self.labels(split)
        if Y is None:
            return self.observations(split)
        name = regime if regime == OBSERVED_ONLY else get_regime(regime).name
        if name in ("full", OBSERVED_ONLY):
            return full_observations(Y)
        stream = np.random.SeedSequence(int(self.meta["seed"])).spawn(4)[3]  # [0..2]: splits, test, training draw
        return observe(Y, name, seed=stream, hide_prob=float(self.meta.get("hide_prob", 0.5)),
                       areas=self.areas(split))

    def _check_split(self, split: str) -> None:
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")

    def summary(self) -> str:
        m = self.meta
        s = m["sizes"]
        lines = [f"bundle {self.path}: {m['name']} ({m['kind']}), {self.n_labels} labels, "
                 f"train {s['train']} / val {s['val']} / test {s['test']}, regime {m['regime']}, seed {m['seed']}"]
        if not m.get("has_full_labels", True):
            full = m.get("full_label_splits") or []
            lines.append("  observed labels only (no full labels)"
                         + (f"; full labels in: {', '.join(full)}" if full else "; validation and test use "
                            "observed labels only"))
        if m.get("dropped_train_without_positive"):
            lines.append(f"  dropped {m['dropped_train_without_positive']} training example(s) without a positive")
        for n in m.get("notes", []):
            lines.append(f"  note: {n}")
        return "\n".join(lines)
