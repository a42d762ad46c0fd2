"""Presence-only species data: the common ecology layout, read as single-positive
multi-label data with background rows and a masked, fully surveyed test set.

Files (CSV, header on line 1; ``NA`` or an empty cell is a missing value)
--------------------------------------------------------------------------
* **records** — one row per presence record: one label (``label_column``, default
  ``spid``) observed at one place, with the place's covariates.  Optional columns
  ``group`` (the label's survey group, e.g. bird / plant), ``x``, ``y`` (the place; used
  to merge records, never as predictors), ``siteid``, ``occ`` (ignored).  Every other
  column is a covariate.
* **background** (optional) — rows with the same covariates and no label (e.g. 10,000
  random sites): they become training examples with no observed label, the
  *background rows* of the method contract (``MultiLabelDataset.background``).
* **tests** — one or more pairs ``(covariates, presence/absence)`` of fully surveyed
  test sites: the covariate table has the covariates, the presence/absence table one
  0/1 column per label surveyed there (rows in the same order; when both have a
  ``siteid`` they must agree row by row).  A label is evaluated only on the sites of the
  tables that have its column: for AWT the bird table has the bird columns and the plant
  table the plant ones, so birds are scored on bird sites only.  This is the test
  split's label mask (``Split.mask``), not a special case: the metrics score each label
  on its masked rows.  When the records and a table both have a ``group`` column, a
  label's group in the records must be the table's group.

Covariates
----------
The covariates are the records' covariate columns; background and test tables must
have them all, with a number in every row.  **Categorical** covariates are one-hot
encoded (a column ``name=value`` per level seen in training; a level seen only in test
rows sets none): declared with ``categorical=[...]`` or, when not declared, detected as
integer-valued columns with at most ``max_levels`` (6) distinct values over the training
rows (disdat: NZ ``age``, ``toxicats``; CAN ``ontveg``; SWI ``calc``).  **That rule fails**
on integer-coded ordinal or count covariates with few levels (they are one-hot encoded,
losing their order: disdat NSW ``disturb`` 1–3 and ``soilfert`` 1–5, documented as
continuous) and on categorical covariates with more levels (left numeric: NSW ``vegsys``, 9
vegetation types).  So a folder in the disdat layout that documents its covariates
(``docs/<R>.Rd`` or ``man/<R>.Rd``, the package's table with a *Type* column) is read with
the types it documents (:func:`documented_categorical`); the rule is the fallback when
nothing is declared or documented.  Standardisation
on the training statistics (records and background) is the trainer's (``TrainConfig.standardize``,
on by default for feature data), so the bundle keeps the covariates in their units.
The encoding (:class:`~spmlkit.data.encoding.CovariateEncoding`) is stored with the
dataset (``MultiLabelDataset.encoding``), so a trained model predicts from a table in
the training layout (``spml predict RUN NZtest_env.csv``); the ``siteid`` and ``x``,
``y`` of every row are kept too (``Split.ids``, ``Split.xy``) and pass through to
predictions.

Views (``view=``)
-----------------
``records`` (default): one training example per record (one observed positive);
``sites``: records at the same place (same ``x``, ``y``) merged into one example with
several observed positives (covariates of the place's first record).

Bad input ends in one :class:`~spmlkit.errors.DataFormatError` naming the file and the
line: an unknown label in a test table, a label with records but no test column, a
missing or non-numeric covariate, a presence/absence cell that is not 0 or 1, tables of
a test pair whose rows do not match.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import ConfigError, DataFormatError
from ...reading import read_text
from ...sparse_labels import SparseLabels
from ..dataset import MultiLabelDataset, Split
from .occurrences import records_on_rasters
from .occurrences import spatial_blocks  # noqa: F401  (with the records it splits; importable here too)
from ..encoding import CovariateEncoding

MISSING = ("", "NA", "NaN", "nan")
RESERVED = ("siteid", "occ", "x", "y", "group")


def _read(path, latin1: list | None = None) -> tuple[list[str], list[list[str]]]:
    """``(header, rows)`` of a CSV under the reader rule (a regular file; UTF-8, else
    Latin-1 — a file saved by a Latin-1 tool is listed in ``latin1`` for the note)."""
    path = Path(path)
    if not path.exists():
        raise DataFormatError(path, "file not found")
    text, encoding = read_text(path)
    if encoding != "UTF-8" and latin1 is not None and path.name not in latin1:
        latin1.append(path.name)
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise DataFormatError(path, f"not a readable CSV table ({exc})") from None
    if not rows:
        raise DataFormatError(path, "empty file; expected a header line", line=1)
    header = [h.strip() for h in rows[0]]
    body = rows[1:]
    for i, r in enumerate(body):
        if len(r) != len(header):
            raise DataFormatError(path, f"{len(r)} fields, the header has {len(header)}", line=i + 2)
    return header, body


def _column(path, header, name) -> int:
    try:
        return header.index(name)
    except ValueError:
        raise DataFormatError(path, f"no column {name!r} (expected: {', '.join(header)})", line=1) from None


def _ids(header, body, column: str = "siteid") -> list[str] | None:
    """The ``siteid`` cells of a table (None when it has no such column)."""
    if column not in header:
        return None
    j = header.index(column)
    return [r[j].strip() for r in body]


def _optional_numbers(path, header, body, names) -> np.ndarray | None:
    """The columns ``names`` as numbers when the table has them all, each cell a number;
    else None (places of test sites are kept when given, never required)."""
    if not all(c in header for c in names):
        return None
    try:
        return _numbers(path, header, body, names)
    except DataFormatError:
        return None


def _numbers(path, header, body, names) -> np.ndarray:
    """The covariates ``names`` as float64, every cell required."""
    idx = [_column(path, header, n) for n in names]
    out = np.empty((len(body), len(idx)))
    for i, r in enumerate(body):
        for j, c in enumerate(idx):
            v = r[c].strip()
            if v in MISSING:
                raise DataFormatError(path, f"missing value of covariate {names[j]!r}", line=i + 2)
            try:
                out[i, j] = float(v)
            except ValueError:
                raise DataFormatError(path, f"covariate {names[j]!r} is {v!r}, not a number", line=i + 2) from None
    return out


@dataclass
class PresenceOnlyTables:
    """The raw tables (covariates in their units, categorical ones not yet encoded)."""

    covariates: list[str]
    categorical: list[str]
    label_names: list[str]
    records: np.ndarray  # (R, C) covariates of the presence records
    record_labels: np.ndarray  # (R,) label index of each record
    record_places: list  # (R,) place key of each record (x, y), or the row number
    background: np.ndarray  # (M, C)
    test: np.ndarray  # (T, C)
    test_Y: np.ndarray  # (T, L) bool
    test_mask: np.ndarray  # (T, L) bool: surveyed
    record_xy: np.ndarray | None = None  # (R, 2) place coordinates of the records (when given)
    background_xy: np.ndarray | None = None  # (M, 2)
    sources: dict = field(default_factory=dict)
    record_ids: list | None = None  # (R,) the records' siteid (None: no such column)
    background_ids: list | None = None  # (M,)
    test_ids: list | None = None  # (T,)
    test_xy: np.ndarray | None = None  # (T, 2)
    passthrough: tuple = ()  # the records' columns that are not covariates
    latin1: tuple = ()  # the files read as Latin-1 (not UTF-8)

    @property
    def encoding(self) -> CovariateEncoding:
        """The one-hot encoding of the categorical covariates, levels from the training
        rows (records and background)."""
        return CovariateEncoding.fit(np.concatenate([self.records, self.background]), self.covariates,
                                     categorical=self.categorical, passthrough=self.passthrough)


def read_presence_only(records, *, background=None, tests=(), label_column: str = "spid",
                       group_column: str = "group", place_columns=("x", "y"), ignore=("siteid", "occ"),
                       categorical=None, max_levels: int = 6) -> PresenceOnlyTables:
    """Read the tables described in the module docstring (see :func:`load_presence_only`).

    The steps: read the records and their labels (:func:`_record_labels`), the covariates
    of the records and the background, the categorical covariates (:func:`_categorical`),
    then each surveyed test site table (:func:`_test_site`)."""
    latin1: list = []
    rh, rb = _read(records, latin1)
    li = _column(records, rh, label_column)
    pi = [rh.index(c) for c in place_columns] if all(c in rh for c in place_columns) else None
    skip = {label_column, group_column, *place_columns, *ignore}
    covariates = [c for c in rh if c not in skip]
    if not covariates:
        raise DataFormatError(records, "no covariate column", line=1)
    labels, groups, rec_labels, places = _record_labels(records, rh, rb, li, label_column, group_column, pi)
    order = sorted(labels)
    index = {n: k for k, n in enumerate(order)}
    R = _numbers(records, rh, rb, covariates)
    B = np.empty((0, len(covariates)))
    rxy = _numbers(records, rh, rb, list(place_columns)) if pi is not None else None
    bxy = np.empty((0, 2)) if rxy is not None else None
    rids = _ids(rh, rb)
    bids = [] if rids is not None else None
    if background is not None:
        bh, bb = _read(background, latin1)
        B = _numbers(background, bh, bb, covariates)
        if rxy is not None:
            bxy = _numbers(background, bh, bb, list(place_columns)) if all(c in bh for c in place_columns) else None
        bids = _ids(bh, bb) if rids is not None else None
    categorical = _categorical(records, covariates, np.concatenate([R, B]), categorical, max_levels)
    if not tests:
        raise ConfigError("presence-only data needs at least one fully surveyed test table (covariates and "
                          "presence/absence)")
    Xs, Ys, Ms, seen, tids, txy = [], [], [], set(), [], []
    for env, pa in tests:
        ids, xy, X, Y, M = _test_site(env, pa, latin1, records, covariates, skip, group_column, place_columns,
                                      index, groups, seen)
        tids.append(ids)
        txy.append(xy)
        Xs.append(X)
        Ys.append(Y)
        Ms.append(M)
    missing = [n for n in order if n not in seen]
    if missing:
        raise DataFormatError(records, f"label(s) {missing[:5]} have presence records but no column in any test "
                              "table; every label needs surveyed test sites")
    return PresenceOnlyTables(covariates=covariates, categorical=list(categorical), label_names=order, records=R,
                              record_labels=np.array([index[n] for n in rec_labels]), record_places=places,
                              background=B, test=np.concatenate(Xs), test_Y=np.concatenate(Ys),
                              test_mask=np.concatenate(Ms), record_xy=rxy, background_xy=bxy,
                              record_ids=rids, background_ids=bids,
                              test_ids=None if any(t is None for t in tids) else sum(tids, []),
                              test_xy=None if any(t is None for t in txy) else np.concatenate(txy),
                              passthrough=tuple(c for c in rh if c not in covariates), latin1=tuple(latin1),
                              sources={"records": str(records), "background": None if background is None else
                                       str(background), "tests": [[str(e), str(p)] for e, p in tests]})


def _record_labels(records, rh: list, rb: list, li: int, label_column: str, group_column: str, pi):
    """Each record's label (none missing) and place, the labels in first-seen order and each
    label's group (one per label); ``li`` and ``pi`` are the label and place columns.
    Returns ``(labels, groups, record labels, places)``."""
    gi = rh.index(group_column) if group_column in rh else None
    labels, groups, rec_labels, places = [], {}, [], []
    for i, r in enumerate(rb):
        name = r[li].strip()
        if name in MISSING:
            raise DataFormatError(records, f"missing label ({label_column!r})", line=i + 2)
        if name not in groups:
            labels.append(name)
            groups[name] = r[gi].strip() if gi is not None else None
        elif gi is not None and groups[name] != r[gi].strip():
            raise DataFormatError(records, f"label {name!r} has records in groups {groups[name]!r} and "
                                  f"{r[gi].strip()!r}", line=i + 2)
        rec_labels.append(name)
        places.append(tuple(r[c].strip() for c in pi) if pi is not None else i)
    if not labels:
        raise DataFormatError(records, "no presence record")
    return labels, groups, rec_labels, places


def _categorical(records, covariates: list, train: np.ndarray, categorical, max_levels: int) -> list:
    """The categorical covariates: those named (each a covariate), else the integer ones
    with at most ``max_levels`` levels in the training rows."""
    if categorical is None:
        categorical = [c for j, c in enumerate(covariates)
                       if np.all(train[:, j] == np.round(train[:, j])) and len(np.unique(train[:, j])) <= max_levels]
    else:
        unknown = [c for c in categorical if c not in covariates]
        if unknown:
            raise ConfigError(f"categorical covariate(s) {unknown} are not covariates of {records} "
                              f"({', '.join(covariates)})")
    return categorical


def _test_site(env, pa, latin1: list, records, covariates: list, skip: set, group_column: str, place_columns,
               index: dict, groups: dict, seen: set):
    """One surveyed test table pair: the covariate table ``env`` and the presence/absence
    table ``pa`` (the same sites in the same order), each label column 0/1 and of its
    label's group; ``seen`` collects the labels with a column.  Returns ``(ids, xy,
    covariates, presence, mask)``."""
    eh, eb = _read(env, latin1)
    ids = _ids(eh, eb)
    xy = _optional_numbers(env, eh, eb, list(place_columns))
    ph, pb = _read(pa, latin1) if pa != env else (eh, eb)
    if len(pb) != len(eb):
        raise DataFormatError(pa, f"{len(pb)} rows, but the covariate table {env} has {len(eb)}")
    if "siteid" in eh and "siteid" in ph and pa != env:
        a, b = eh.index("siteid"), ph.index("siteid")
        for i, (re_, rp) in enumerate(zip(eb, pb)):
            if re_[a].strip() != rp[b].strip():
                raise DataFormatError(pa, f"site {rp[b]!r} does not match row {i + 2} of {env} "
                                      f"(site {re_[a]!r}); the two tables must list the same sites in order",
                                      line=i + 2)
    X = _numbers(env, eh, eb, covariates)
    cols = [c for c in ph if c not in skip and c not in covariates]
    tg = ph.index(group_column) if group_column in ph else None
    Y = np.zeros((len(pb), len(index)), bool)
    M = np.zeros((len(pb), len(index)), bool)
    for c in cols:
        if c not in index:
            raise DataFormatError(pa, f"label {c!r} has no presence record in {records} (the test labels must "
                                  "be labels of the records)", line=1)
        k, j = index[c], ph.index(c)
        seen.add(c)
        for i, r in enumerate(pb):
            v = r[j].strip()
            if v not in ("0", "1"):
                raise DataFormatError(pa, f"label {c!r} is {v!r}; expected 0 or 1 (absent / present)", line=i + 2)
            if tg is not None and groups[c] is not None and r[tg].strip() != groups[c]:
                raise DataFormatError(pa, f"site of group {r[tg].strip()!r} has a column for label {c!r}, "
                                      f"whose records are of group {groups[c]!r}", line=i + 2)
            Y[i, k] = v == "1"
        M[:, k] = True
    return ids, xy, X, Y, M


def encode(tables: PresenceOnlyTables, X: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """One-hot encode the categorical covariates of ``X`` (levels seen in the training rows;
    a level seen only here sets none of the covariate's columns)."""
    enc = tables.encoding
    return enc.transform(X, unseen="ignore"), enc.feature_names


def to_dataset(tables: PresenceOnlyTables, *, view: str = "records", name: str = "presence-only",
               val_blocks: int | None = None, val_fraction: float = 0.2, seed: int = 0) -> MultiLabelDataset:
    """The :class:`MultiLabelDataset`: training = records (``view``) + background rows,
    test = the surveyed sites with their label mask.  ``val_blocks``: a validation split
    of whole spatial blocks (:func:`spatial_blocks`, records and background in the held-out
    blocks) instead of ``spml prepare``'s random hold-out."""
    L = len(tables.label_names)
    xy = tables.record_xy
    rids = tables.record_ids
    if view == "records":
        Xr = tables.records
        Zr = SparseLabels.single(tables.record_labels, L)  # one integer per record, whatever L
    elif view == "sites":
        first: dict = {}
        for i, p in enumerate(tables.record_places):
            first.setdefault(p, i)
        rows = np.array(sorted(first.values()))
        slot = {p: k for k, p in enumerate(tables.record_places[i] for i in rows)}
        Xr = tables.records[rows]
        xy = None if xy is None else xy[rows]
        rids = None if rids is None else [rids[i] for i in rows]
        at = np.array([slot[p] for p in tables.record_places], dtype=np.int64)
        pairs = np.unique(np.stack([at, np.asarray(tables.record_labels, dtype=np.int64)], axis=1), axis=0)
        Zr = SparseLabels.from_coo(pairs[:, 0], pairs[:, 1], shape=(len(rows), L))
    else:
        raise ConfigError(f"unknown presence-only view {view!r}; expected 'records' or 'sites'")
    X, names = encode(tables, np.concatenate([Xr, tables.background]))
    Z = SparseLabels.vstack([Zr, SparseLabels.empty(len(tables.background), L)])
    Xt, _ = encode(tables, tables.test)
    notes = [f"presence-only: {len(tables.records)} records -> {len(Xr)} examples ({view} view), "
             f"{len(tables.background)} background rows, {len(Xt)} surveyed test sites"]
    if tables.latin1:
        notes.append(f"{', '.join(tables.latin1)} not UTF-8; read as Latin-1")
    if tables.categorical:
        notes.append(f"one-hot encoded categorical covariates: {', '.join(tables.categorical)}")
    all_xy = None if xy is None or tables.background_xy is None else np.concatenate([xy, tables.background_xy])
    ids = None if rids is None or tables.background_ids is None else [*rids, *tables.background_ids]
    splits = {"train": Split(X=X, Z=Z, ids=ids, xy=all_xy),
              "test": Split(X=Xt, Y=tables.test_Y, mask=tables.test_mask, ids=tables.test_ids, xy=tables.test_xy)}
    if val_blocks:
        if all_xy is None:
            raise ConfigError("spatial-block validation needs the place columns (x, y) in the records and background")
        held = spatial_blocks(all_xy, val_blocks, val_fraction, seed)
        splits = {"train": splits["train"].subset(np.flatnonzero(~held)),
                  "val": splits["train"].subset(np.flatnonzero(held)), "test": splits["test"]}
        notes.append(f"validation: {held.sum()} rows in {val_fraction:.0%} of {val_blocks}x{val_blocks} spatial blocks "
                     f"(seed {seed})")
    places = {"columns": ["x", "y"], "crs": None} if all_xy is not None else None
    return MultiLabelDataset(name=name, label_names=list(tables.label_names), splits=splits,
                             source=tables.sources["records"], feature_names=names, notes=notes, background=True,
                             encoding=tables.encoding.to_dict(), places=places)


def load_presence_only(records, *, background=None, tests=(), view: str = "records", name: str | None = None,
                       val_blocks: int | None = None, **options) -> MultiLabelDataset:
    """Read presence records, optional background rows and surveyed test tables (module docstring).

    ``tests``: pairs ``(covariates_csv, presence_absence_csv)`` (the same file twice when
    one table has both); ``options`` go to :func:`read_presence_only` (``label_column``,
    ``group_column``, ``place_columns``, ``ignore``, ``categorical``, ``max_levels``)."""
    tables = read_presence_only(records, background=background, tests=tests, **options)
    return to_dataset(tables, view=view, name=name or Path(records).stem, val_blocks=val_blocks)


def region_files(folder, region: str) -> dict:
    """The files of ``region`` in a folder laid out as ``<R>train_po.csv``, ``<R>train_bg.csv``,
    ``<R>test_env[_<group>].csv`` / ``<R>test_pa[_<group>].csv`` (the layout of Elith et al.
    2020's data, R package ``disdat``)."""
    folder = Path(folder)
    records = folder / f"{region}train_po.csv"
    if not records.is_file():
        found = sorted(p.name[:-len("train_po.csv")] for p in folder.glob("*train_po.csv"))
        raise ConfigError(f"{folder}: no {records.name}; regions here: {', '.join(found) or 'none'}")
    bg = folder / f"{region}train_bg.csv"
    tests = []
    for env in sorted(folder.glob(f"{region}test_env*.csv")):
        pa = env.with_name(env.name.replace("test_env", "test_pa"))
        if not pa.is_file():
            raise DataFormatError(env, f"no presence/absence table {pa.name} beside it")
        tests.append((env, pa))
    return {"records": records, "background": bg if bg.is_file() else None, "tests": tests}


def documented_categorical(folder, region: str) -> list[str] | None:
    r"""The covariates that the region's own documentation types as *Categorical*, or None
    when the folder has no documentation for it: ``docs/<R>.Rd`` or ``man/<R>.Rd``, the R
    package ``disdat``'s ``\tabular`` of environmental variables whose rows are
    ``code \tab description \tab units \tab Type \cr`` (Elith et al. 2020), read by
    :func:`rd_categorical`."""
    folder = Path(folder)
    for doc in (folder / "docs" / f"{region}.Rd", folder / "man" / f"{region}.Rd"):
        if doc.is_file():
            return rd_categorical(doc.read_text(encoding="utf-8", errors="replace"))
    return None


def rd_categorical(text: str) -> list[str]:
    r"""The codes of the rows of an ``.Rd`` ``\tabular`` whose last cell is *Categorical*.

    >>> rd_categorical("a \\tab x \\tab 1 = low \\tab Continuous \\cr\n"
    ...                "veg \\tab y \\tab 1 = wet, 2 = dry \\tab Categorical \\cr\n")
    ['veg']
    """
    found = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.replace("\\cr", "").split("\\tab")]
        if len(cells) >= 3 and cells[-1].lower() == "categorical" and cells[0] and " " not in cells[0]:
            found.append(cells[0])
    return found


def load_presence_only_folder(folder, region: str, *, view: str = "records", name: str | None = None,
                              val_blocks: int | None = None, **options) -> MultiLabelDataset:
    """:func:`load_presence_only` on the files of :func:`region_files`; the categorical
    covariates are the ones declared (``categorical=``), else the ones the region's
    documentation types so (:func:`documented_categorical`), else the detection rule's."""
    f = region_files(folder, region)
    if options.get("categorical") is None:
        documented = documented_categorical(folder, region)
        if documented is not None:
            options["categorical"] = documented
    return load_presence_only(f["records"], background=f["background"], tests=f["tests"], view=view,
                              name=name or region, val_blocks=val_blocks, **options)


def _is_presence_only_folder(path: Path) -> bool:
    return any(Path(path).glob("*train_po.csv"))


from .base import register_format  # noqa: E402  (the registration below is this module's only use of it)


@register_format("presence-only", folder=_is_presence_only_folder, order=60,
                 description="presence-only records (<R>train_po.csv, <R>train_bg.csv, <R>test_env/pa.csv; "
                             "--region), or a records CSV with --background and --test ENV.csv:PA.csv")
def _load(path, *, test=None, name=None, region=None, background=None, view="records", categorical=None,
          label_column=None, val_blocks=None, rasters=None, raster_options=None, log=None,
          **_ignored) -> MultiLabelDataset:
    """``spml prepare`` of presence-only data: a folder and ``region``, a records CSV with
    ``background`` and ``test`` = ``ENV.csv:PA.csv[,ENV2.csv:PA2.csv]``, or a records CSV
    with covariate ``rasters`` (:func:`spmlkit.data.formats.occurrences.records_on_rasters`,
    its options in ``raster_options``)."""
    path = Path(path)
    if rasters:
        if test or background or region:
            raise ConfigError("--rasters draws the background from the rasters and holds out test rows: "
                              "--test, --background and --region do not apply")
        return records_on_rasters(path, rasters, categorical=categorical, label_column=label_column,
                                  val_blocks=int(val_blocks) if val_blocks else None, name=name, log=log,
                                  **(raster_options or {}))
    opts = {"categorical": categorical} if categorical is not None else {}
    if val_blocks:
        opts["val_blocks"] = int(val_blocks)
    if label_column:
        opts["label_column"] = label_column
    if path.is_dir():
        if not region:
            found = sorted(p.name[:-len("train_po.csv")] for p in path.glob("*train_po.csv"))
            raise ConfigError(f"{path}: presence-only folder: name the region with --region ({', '.join(found)})")
        return load_presence_only_folder(path, region, view=view, name=name, **opts)
    if not test:
        raise ConfigError("presence-only records need surveyed test tables: --test ENV.csv:PA.csv[,ENV2.csv:PA2.csv]")
    tests = []
    for item in str(test).split(","):
        env, _, pa = item.partition(":")
        tests.append((Path(env), Path(pa or env)))
    return load_presence_only(path, background=background, tests=tests, view=view, name=name, **opts)
