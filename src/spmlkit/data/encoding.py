"""Covariate encoding: how a table of covariates in their units becomes the feature matrix
a model is trained on, stored so that new data in the *same layout* can be encoded the
same way.

A presence-only table (``spml prepare``) or a raster stack has **covariates** (columns or
bands named like ``mat``, ``rain``, ``biome``); the categorical ones are one-hot encoded
into a column ``name=level`` per level seen in the training rows, the others kept as
they are.  :class:`CovariateEncoding` records that mapping (covariate names in order,
the levels of each categorical covariate, and the columns of the training layout that
are not covariates: ids, coordinates, the label column) and applies it to new rows.
It is written into the bundle's ``meta.json["encoding"]`` and copied into a trained
model's ``model.json["input"]["encoding"]``; the standardisation learnt on the encoded
training rows is the model's own (``mean``/``std`` in its weights file), applied after
this encoding.

A level of a categorical covariate that the training rows never had is an error in
prediction (:meth:`CovariateEncoding.transform` with ``unseen="raise"``): the model has
no column for it, and predicting as if the covariate had *no* level would be silently
wrong.  (``spml prepare`` keeps the older rule for the test tables of a presence-only
set: such a site sets none of the covariate's columns, ``unseen="ignore"``.)
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import CorruptFileError, DataFormatError
from ..reading import open_text

MISSING = ("", "NA", "NaN", "nan")
#: the columns a raw covariate table may carry beside its covariates, read as identifiers
#: and coordinates when present (``spml predict`` passes them through to its output)
ID_COLUMNS = ("siteid", "id")
PLACE_COLUMNS = ("x", "y")


def level_name(covariate: str, level: float) -> str:
    """The encoded column of ``level`` of a categorical covariate: ``name=level``
    (``%g``, so 2.0 -> ``age=2``)."""
    return f"{covariate}={level:g}"


def _shown(values, n: int = 8) -> str:
    values = list(values)
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values[:n]) + (
        f", ... ({len(values)} in all)" if len(values) > n else "")


@dataclass(frozen=True)
class CovariateEncoding:
    """Covariates (raw column names, in order), the levels of the categorical ones, and
    the other columns of the training layout (``passthrough``: allowed in a table to
    encode, never read as covariates).

    >>> enc = CovariateEncoding.fit(np.array([[1.5, 2], [0.5, 3]]), ["t", "soil"], categorical=["soil"])
    >>> enc.feature_names
    ['t', 'soil=2', 'soil=3']
    >>> enc.transform(np.array([[4.0, 3]])).tolist()
    [[4.0, 0.0, 1.0]]
    """

    covariates: tuple
    levels: dict = field(default_factory=dict)  # categorical covariate -> tuple of its levels (sorted floats)
    passthrough: tuple = ()

    @classmethod
    def fit(cls, X, covariates, *, categorical=(), passthrough=()) -> "CovariateEncoding":
        """The encoding of training rows ``X`` ``(N, C)`` (covariates in their units):
        each covariate in ``categorical`` gets the levels found in ``X``."""
        X = np.asarray(X, dtype=np.float64)
        covariates = tuple(str(c) for c in covariates)
        if X.ndim != 2 or X.shape[1] != len(covariates):
            raise ValueError(f"X has shape {X.shape}; expected (N, {len(covariates)}) for covariates {covariates}")
        levels = {}
        for c in categorical:
            j = covariates.index(c)
            levels[c] = tuple(float(v) for v in np.unique(X[:, j]))
        return cls(covariates=covariates, levels=levels, passthrough=tuple(str(p) for p in passthrough))

    # -------------------------------------------------------------- description
    @property
    def categorical(self) -> list[str]:
        return [c for c in self.covariates if c in self.levels]

    @property
    def feature_names(self) -> list[str]:
        """The encoded columns, in the order of :meth:`transform`."""
        out = []
        for c in self.covariates:
            if c in self.levels:
                out.extend(level_name(c, v) for v in self.levels[c])
            else:
                out.append(c)
        return out

    def groups(self) -> list[tuple[str, np.ndarray]]:
        """``(covariate, encoded column indices)`` for each covariate (a categorical one
        owns its one-hot columns): what a permutation or a partial-dependence curve moves
        together."""
        out, k = [], 0
        for c in self.covariates:
            n = len(self.levels[c]) if c in self.levels else 1
            out.append((c, np.arange(k, k + n)))
            k += n
        return out

    def to_dict(self) -> dict:
        return {"covariates": list(self.covariates), "categorical": {c: list(v) for c, v in self.levels.items()},
                "passthrough": list(self.passthrough)}

    @classmethod
    def from_dict(cls, d, source=None) -> "CovariateEncoding":
        """The encoding stored by :meth:`to_dict` (``source``: the file it came from, for
        the error when it is damaged)."""
        try:
            cov = d["covariates"]
            cat = d.get("categorical") or {}
            ok = (isinstance(cov, list) and cov and all(isinstance(c, str) for c in cov) and len(set(cov)) == len(cov)
                  and isinstance(cat, dict) and all(c in cov and isinstance(v, list) and v
                                                    and all(isinstance(x, (int, float)) for x in v)
                                                    for c, v in cat.items()))
        except (TypeError, KeyError, AttributeError):
            ok = False
        if not ok:
            raise CorruptFileError(f"{source or 'model'}: damaged covariate encoding (expected covariates and the "
                                   "levels of the categorical ones); restore the file or prepare and train again")
        return cls(covariates=tuple(cov), levels={c: tuple(float(x) for x in v) for c, v in cat.items()},
                   passthrough=tuple(str(p) for p in d.get("passthrough") or ()))

    # --------------------------------------------------------------- encoding
    def unseen_level(self, X) -> tuple[str, float, int, int] | None:
        """The first value of a categorical covariate in ``X`` that is not one of its
        training levels: ``(covariate, level, first row, rows with an unseen level of
        that covariate)``, or None."""
        X = np.asarray(X)
        for j, c in enumerate(self.covariates):
            if c in self.levels:
                bad = ~np.isin(X[:, j], np.asarray(self.levels[c]))
                if bad.any():
                    r = int(np.flatnonzero(bad)[0])
                    return c, float(X[r, j]), r, int(bad.sum())
        return None

    def transform(self, X, *, unseen: str = "raise", source=None, lines=None) -> np.ndarray:
        """Encode raw rows ``X`` ``(N, C)`` (covariates in the order of
        :attr:`covariates`) into ``(N, D)`` float32.  ``unseen="raise"``: a level not seen
        in training is a :class:`DataFormatError` naming the covariate and the level
        (``source`` and ``lines[row]`` name the file and line); ``"ignore"``: that row
        sets none of the covariate's columns."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(self.covariates):
            raise DataFormatError(source, f"covariates have shape {X.shape}; expected (N, {len(self.covariates)}): "
                                          f"{', '.join(self.covariates)}")
        if unseen == "raise":
            bad = self.unseen_level(X)
            if bad is not None:
                c, v, r, n = bad
                line = lines[r] if lines is not None else None
                more = f" (and {n - 1} more row(s))" if n > 1 else ""
                raise DataFormatError(source, f"covariate {c!r} has level {v:g}{more}, which the model never saw in "
                                              f"training (its levels: {_shown(self.levels[c])})", line=line)
        cols = []
        for j, c in enumerate(self.covariates):
            if c in self.levels:
                cols.extend((X[:, j] == v).astype(np.float32) for v in self.levels[c])
            else:
                cols.append(X[:, j].astype(np.float32))
        return np.stack(cols, axis=1) if cols else np.zeros((len(X), 0), np.float32)


# ------------------------------------------------------------------ raw tables
@dataclass
class CovariateTable:
    """A raw covariate table read by name: ``X`` ``(N, C)`` float64 in the encoding's
    covariate order, row ids (``siteid``/``id`` or ``--id-column``; None: none), the
    ``x``/``y`` columns when present, and each row's line in the file."""

    X: np.ndarray
    ids: list[str] | None
    xy: np.ndarray | None
    lines: list[int]
    id_column: str | None = None


def csv_header(path) -> list[str]:
    """The first line of a CSV/TSV, split into stripped column names."""
    path = Path(path)
    with open_text(path, errors="replace") as fh:
        first = fh.readline()
    delim = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    return [h.strip() for h in next(csv.reader([first], delimiter=delim), [])]


def read_covariate_table(path, encoding: CovariateEncoding, *, id_column: str | None = None) -> CovariateTable:
    """The covariates of ``encoding`` from the CSV/TSV ``path``, matched **by name**
    (any order; the training layout's other columns and columns the model does not know
    are not read).  A covariate missing from the header, or a missing or non-numeric
    value, is a one-line :class:`DataFormatError` naming the column (and the line).
    ``id_column``: the column of row identifiers (its absence is an error); default
    ``siteid`` or ``id`` when present."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, "file not found")
    delim = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    with open_text(path) as f:
        try:
            rows = list(csv.reader(f, delimiter=delim))
        except (csv.Error, UnicodeDecodeError) as exc:
            raise DataFormatError(path, f"not a readable CSV table ({exc})") from None
    if not rows:
        raise DataFormatError(path, "empty file; expected a header line", line=1)
    header = [h.strip() for h in rows[0]]
    missing = [c for c in encoding.covariates if c not in header]
    if missing:
        raise DataFormatError(path, f"missing covariate column {missing[0]!r}"
                              + (f" (and {', '.join(map(repr, missing[1:4]))})" if len(missing) > 1 else "")
                              + f"; the model was trained on {', '.join(encoding.covariates)}", line=1)
    dup = next((c for c in encoding.covariates if header.count(c) > 1), None)
    if dup is not None:
        raise DataFormatError(path, f"column {dup!r} appears twice in the header", line=1)
    if id_column is not None and id_column not in header:
        raise DataFormatError(path, f"id column {id_column!r} is not in the header", line=1)
    if id_column is None:
        id_column = next((c for c in ID_COLUMNS if c in header and c not in encoding.covariates), None)
    idx = [header.index(c) for c in encoding.covariates]
    pl = [header.index(c) for c in PLACE_COLUMNS] if all(c in header for c in PLACE_COLUMNS) else None
    ii = header.index(id_column) if id_column is not None else None
    body = [(i + 2, r) for i, r in enumerate(rows[1:]) if any(c.strip() for c in r)]
    X = np.empty((len(body), len(idx)))
    xy = np.empty((len(body), 2)) if pl is not None else None
    ids = [] if ii is not None else None
    for n, (line, r) in enumerate(body):
        if len(r) != len(header):
            raise DataFormatError(path, f"{len(r)} fields, the header has {len(header)}", line=line)
        for j, c in enumerate(idx):
            v = r[c].strip()
            if v in MISSING:
                raise DataFormatError(path, f"missing value of covariate {encoding.covariates[j]!r}", line=line)
            try:
                X[n, j] = float(v)
            except ValueError:
                raise DataFormatError(path, f"covariate {encoding.covariates[j]!r} is {v!r}, not a number",
                                      line=line) from None
            if not np.isfinite(X[n, j]):
                raise DataFormatError(path, f"covariate {encoding.covariates[j]!r} is {v!r}, not a finite number",
                                      line=line)
        if pl is not None:
            try:
                xy[n] = [float(r[pl[0]]), float(r[pl[1]])]
            except ValueError:
                xy = None
                pl = None
        if ids is not None:
            ids.append(r[ii].strip())
    if not body:
        raise DataFormatError(path, "no data rows below the header")
    return CovariateTable(X=X, ids=ids, xy=xy, lines=[line for line, _ in body], id_column=id_column)


def is_raw_layout(header: list[str], encoding: CovariateEncoding) -> bool:
    """True when a table with ``header`` holds the covariates in their raw layout (every
    covariate by name) rather than the encoded columns (``name=level``)."""
    names = encoding.feature_names
    if all(c in header for c in names) and names != list(encoding.covariates):
        return False
    return True
