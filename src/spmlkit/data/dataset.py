"""In-memory containers returned by every loader.

A loader returns a :class:`MultiLabelDataset`: label names plus one
:class:`Split` per official split (``"train"``, and ``"test"`` / ``"val"`` where the
dataset defines them).  A split holds either feature vectors ``X`` or image ``paths``,
and either full labels ``Y`` (the papers' simulation setting) or observations ``Z``
(a practitioner's own single-positive data; see :mod:`spmlkit.labels` for the codes).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DataFormatError
from ..labels import as_full_labels, as_observations, label_frequencies
from ..sparse_labels import SparseLabels


@dataclass
class Split:
    X: np.ndarray | None = None  # (N, D) float32 features
    paths: list[str] | None = None  # image file paths (absolute)
    #: (N, L) bool full labels: a dense array or :class:`~spmlkit.sparse_labels.SparseLabels`
    #: (readers of wide label sets give the sparse form; both are accepted everywhere)
    Y: "np.ndarray | SparseLabels | None" = None
    Z: "np.ndarray | SparseLabels | None" = None  # (N, L) int8 observations, when no full labels exist
    ids: list[str] | None = None  # optional example identifiers
    #: optional (N, L) float: area of each present label's largest instance (COCO-style
    #: annotations; read by the 'single_positive_largest' regime), 0 where absent
    areas: np.ndarray | None = None
    #: optional (N, L) bool (dense or sparse): where the full label ``Y`` is known (surveyed); a
    #: species surveyed only at its own group's sites is evaluated there only.  None = everywhere.
    mask: "np.ndarray | SparseLabels | None" = None
    #: optional (N, 2) float64: each example's place (x, y) in the dataset's
    #: coordinate system (``MultiLabelDataset.places``); kept by the bundle so that
    #: predictions can be put on a map
    xy: np.ndarray | None = None

    def __post_init__(self):
        if (self.X is None) == (self.paths is None):
            raise ValueError("a Split holds exactly one of X (features) or paths (images)")
        if self.Y is None and self.Z is None:
            raise ValueError("a Split needs full labels Y or observations Z")
        if self.Y is not None:
            self.Y = as_full_labels(self.Y)
        if self.Z is not None:
            self.Z = as_observations(self.Z)
        n = len(self)
        if self.areas is not None:
            self.areas = np.asarray(self.areas, dtype=np.float64)
        if self.mask is not None and not isinstance(self.mask, SparseLabels):
            self.mask = np.asarray(self.mask, dtype=bool)
        if self.xy is not None:
            self.xy = np.asarray(self.xy, dtype=np.float64).reshape(-1, 2)
        if self.ids is not None:
            self.ids = [str(i) for i in self.ids]
        for name, arr in (("Y", self.Y), ("Z", self.Z), ("ids", self.ids), ("areas", self.areas), ("mask", self.mask),
                          ("xy", self.xy)):
            if arr is not None and len(arr) != n:
                raise DataFormatError(None, f"{name} has {len(arr)} rows but the inputs have {n}")

    def __len__(self) -> int:
        return len(self.X) if self.X is not None else len(self.paths)

    @property
    def n_labels(self) -> int:
        return (self.Y if self.Y is not None else self.Z).shape[1]

    def subset(self, rows: np.ndarray) -> "Split":
        rows = np.asarray(rows)
        return Split(
            X=None if self.X is None else self.X[rows],
            paths=None if self.paths is None else [self.paths[i] for i in rows],
            Y=None if self.Y is None else self.Y[rows],
            Z=None if self.Z is None else self.Z[rows],
            ids=None if self.ids is None else [self.ids[i] for i in rows],
            areas=None if self.areas is None else self.areas[rows],
            mask=None if self.mask is None else self.mask[rows],
            xy=None if self.xy is None else self.xy[rows],
        )


def check_names(names, what: str, source=None) -> None:
    """Label or feature names: text, not empty, distinct (a number or None where a name
    belongs is a mistake upstream: a missing header, unnamed columns)."""
    for n in names:
        if not isinstance(n, str):
            raise DataFormatError(source, f"{what} name {n!r} is a {type(n).__name__}, not text; name every {what} "
                                          "(e.g. str(name))")
        if not n.strip():
            raise DataFormatError(source, f"a {what} has an empty name; every {what} needs a name")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if list(names).count(n) > 1})
        raise DataFormatError(source, f"duplicate {what} names: {dup[:5]}")


@dataclass
class MultiLabelDataset:
    name: str
    label_names: list[str]
    splits: dict[str, Split]
    source: str = ""
    feature_names: list[str] | None = None
    notes: list[str] = field(default_factory=list)
    #: training examples with no observed label are **background rows** (e.g. an
    #: ecologist's random background sites), kept by ``spml prepare`` rather than dropped
    background: bool = False
    #: how raw covariates became ``feature_names``
    #: (:meth:`spmlkit.data.encoding.CovariateEncoding.to_dict`), so that a model predicts from
    #: a table in the training layout; None for data read as ready-made features
    encoding: dict | None = None
    #: what the splits' ``xy`` are: ``{"columns": ["x", "y"], "crs": "EPSG:4326" or
    #: None, "rasters": {...the grid they were extracted from, when they were}}``
    places: dict | None = None
    #: the backbone whose image features ``X`` holds (``"efficientnet-lite0-224"``), for
    #: data that are a backbone's features read as a table (the embedded VOC 2007); None
    #: for the data's own features.  Recorded in the bundle (``meta.json["feature_source"]``)
    feature_source: str | None = None
    #: how the labels were read, when a user decided or the reader's rule did
    #: (:mod:`spmlkit.data.formats.label_rule`): ``"observed: declared (--observed)"``,
    #: ``"full labels: declared (--full-labels)"``, ``"observed: evidently partial (...)"``;
    #: None for a dataset's own full labels.  Recorded in the bundle (``meta.json["label_reading"]``)
    label_reading: str | None = None

    def __post_init__(self):
        if "train" not in self.splits:
            raise ValueError("a dataset needs a 'train' split")
        L = len(self.label_names)
        for name, s in self.splits.items():
            if s.n_labels != L:
                raise DataFormatError(self.source or None,
                                      f"split {name!r} has {s.n_labels} label columns; expected {L}")
        check_names(self.label_names, "label", self.source or None)
        if self.feature_names is not None:
            check_names(self.feature_names, "feature", self.source or None)
        kinds = {s.X is not None for s in self.splits.values()}
        if len(kinds) > 1:
            raise DataFormatError(self.source or None, "splits mix feature vectors and image paths")
        if self.is_features:
            dims = {s.X.shape[1] for s in self.splits.values()}
            if len(dims) > 1:
                raise DataFormatError(self.source or None, f"splits have different feature dimensions {sorted(dims)}")

    @property
    def is_features(self) -> bool:
        return self.splits["train"].X is not None

    @property
    def kind(self) -> str:
        return "features" if self.is_features else "images"

    @property
    def has_full_labels(self) -> bool:
        return all(s.Y is not None for s in self.splits.values())

    @property
    def n_labels(self) -> int:
        return len(self.label_names)


def single_use_labels(ds: MultiLabelDataset) -> list[str]:
    """The labels that are positive (observed positive, or true where the split has full
    labels) in exactly one row over all splits, in label order: when the vocabulary is
    read from a label column, most likely a typo that silently made a new label.  Empty
    when every label is used once (then none stands out)."""
    counts = np.zeros(len(ds.label_names), dtype=np.int64)
    for split in ds.splits.values():
        M = split.Z if split.Z is not None else split.Y
        if M is not None:
            counts += label_frequencies(M.positives() if isinstance(M, SparseLabels) else np.asarray(M) == 1)
    once = [str(ds.label_names[j]) for j in np.flatnonzero(counts == 1)]
    return once if len(once) < len(ds.label_names) else []


def check_features(X: np.ndarray, source=None) -> np.ndarray:
    """Float32 (N, D) features with finite values, or a :class:`DataFormatError` naming the row."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise DataFormatError(source, f"features must be a 2-D (examples x features) array, got shape {X.shape}")
    if X.dtype == object:
        raise DataFormatError(source, "features hold Python objects (an object array); save a numeric array")
    if np.iscomplexobj(X):
        raise DataFormatError(source, f"features are complex numbers (dtype {X.dtype}); expected real numbers "
                                      "(the imaginary part would be lost)")
    if not np.issubdtype(X.dtype, np.number) and X.dtype != bool:
        raise DataFormatError(source, f"features must be numeric, got dtype {X.dtype}")
    if X.shape[1] == 0:
        raise DataFormatError(source, f"no feature columns (shape {X.shape}); expected at least one feature per "
                                      "example")
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, without a RuntimeWarning
        X32 = X.astype(np.float32, copy=False)
    bad = ~np.isfinite(X32)
    if bad.any():
        r, c = (int(i) for i in np.argwhere(bad)[0])
        if np.isfinite(X[r, c]):
            raise DataFormatError(source, f"feature value {float(X[r, c])!r} at row {r + 1}, column {c + 1} overflows "
                                          f"float32 (largest magnitude {float(np.finfo(np.float32).max):.4g}); "
                                          "rescale it")
        raise DataFormatError(source, f"non-finite feature value {X32[r, c]} at row {r + 1}, column {c + 1}")
    return X32


def resolve_path(root: Path, rel: str) -> str:
    p = Path(rel)
    return str(p if p.is_absolute() else (root / p))
