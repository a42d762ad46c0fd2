"""Generic tables (CSV / TSV) and NumPy ``.npz`` archives.

CSV / TSV
---------
A header row is required.  Labels come in one of two layouts:

* **wide** — one column per label, named by ``label_columns`` (names or shell-style
  globs such as ``"Class*"``) or the last ``labels_last`` columns.  Values: ``0``/``1``
  for full labels; for observations (``observed=True``) ``1`` observed positive,
  ``-1`` observed negative, ``0`` or empty = unobserved.
* **set** — one column (``label_set_column``) holding the label names of the row,
  separated by ``separator`` (default ``;``).  For full labels the names are the
  positives and every other label is negative; for observations they are the
  observed positives, and a name prefixed with ``-`` is an observed negative.
* **single** — one column (``label_column``) holding exactly one label name per row
  (the practitioner's ``path,label`` file); the cell is not split, an empty cell is an
  error.  Otherwise it reads like a set column.  :func:`load_table_dataset` (and
  ``spml prepare``) read such a table as observed single positives unless told that its
  labels are complete (``observed=False``, ``--full-labels``).

``label_names`` fixes the label vocabulary and its order; a name outside it is an
error naming the line.  Without it the labels are the sorted names found.

Inputs are either numeric feature columns (every column that is not a label, path or
id column) or, with ``path_column``, image paths: relative paths are resolved against
the table's folder and stored absolute; with ``check_files`` (default) every image
must exist (the error names the line).  Rows naming the same image are **one
example**: their labels are merged (so a ``path,label`` file may list an image once per
label); a label observed positive on one line and negative on another is an error.
Errors name the file, the line and the column.  The csv module reads the file itself, so
a quoted field may span lines (line numbers stay the file's); the file must be UTF-8.

NPZ
---
Keys ``X`` (or ``features``) and ``Y`` (or ``labels``), optionally ``Z`` instead of ``Y``
for observations, ``label_names`` and ``feature_names``.  Official splits may be given
as ``X_train``/``Y_train``/``X_test``/``Y_test`` (and ``_val``).  Nothing is unpickled;
object or complex arrays and arrays without rows, feature columns or label columns are
refused.
"""
from __future__ import annotations

import csv
import fnmatch
import zipfile
from pathlib import Path

import numpy as np

from ...errors import DataFormatError
from ..dataset import MultiLabelDataset, Split, check_features, resolve_path
from .arff import not_utf8_error


def _delimiter_for(path: Path, delimiter: str | None, sample: str) -> str:
    if delimiter:
        return delimiter
    if path.suffix.lower() in (".tsv", ".tab"):
        return "\t"
    if path.suffix.lower() == ".csv":
        return ","
    try:
        return csv.Sniffer().sniff(sample, delimiters=",\t;").delimiter
    except csv.Error:
        return ","


def _check_delimiter(header: list[str], path: Path) -> None:
    """A header read as one column that holds another delimiter (a semicolon CSV, as
    spreadsheets write them where the decimal mark is a comma, read with ','): say so,
    naming the option, rather than "label column ... matches no column" (issue 37).  A
    table always has at least two columns (labels and features or paths)."""
    if len(header) != 1:
        return
    seen = {d: header[0].count(d) for d in (";", "\t", "|")}
    d, n = max(seen.items(), key=lambda kv: kv[1])
    if n:
        shown = {"\t": "a tab", ";": "';'", "|": "'|'"}[d]
        opt = "\\t" if d == "\t" else d
        raise DataFormatError(path, f"the header is one column ({header[0][:60]!r}): the file looks separated by "
                                    f"{shown}, not the delimiter it was read with; pass --delimiter '{opt}'", line=1)


def _match_columns(header: list[str], patterns: list[str], path: Path, what: str) -> list[int]:
    """Column indices matching ``patterns`` (names or globs), in pattern order then header
    order, each once.  Linear in the header's length per pattern (a set, not a list, says
    which columns are taken: 100,000 label columns were quadratic)."""
    out: list[int] = []
    taken: set[int] = set()
    positions: dict[str, list[int]] | None = None
    for p in patterns:
        if any(c in p for c in "*?["):
            hits = [i for i, h in enumerate(header) if fnmatch.fnmatchcase(h, p)]
        else:
            if positions is None:
                positions = {}
                for i, h in enumerate(header):
                    positions.setdefault(h, []).append(i)
            hits = positions.get(p, [])
        if not hits:
            raise DataFormatError(path, f"{what} {p!r} matches no column of the header", line=1)
        for h in hits:
            if h not in taken:
                taken.add(h)
                out.append(h)
    return out


def _read_records(path: Path, delimiter: str | None) -> list[tuple[int, list[str]]]:
    """The CSV/TSV records of ``path`` with the line each starts on (1-based).

    The csv module reads the file object itself (``newline=''``), so a quoted field may
    span lines and line numbers stay those of the file.  The file must be UTF-8 (a
    byte-order mark is allowed); anything else is an error naming the line."""
    records: list[tuple[int, list[str]]] = []
    reader = None
    if path.exists() and not path.is_file():  # /dev/zero, a pipe: read until memory runs out
        raise DataFormatError(path, "not a regular file (a folder, a device or a pipe); expected a CSV/TSV file")
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            delim = _delimiter_for(path, delimiter, fh.read(4096))
            fh.seek(0)
            reader = csv.reader(fh, delimiter=delim)
            start = 1
            for row in reader:
                records.append((start, row))
                start = reader.line_num + 1
    except UnicodeDecodeError:
        raw = path.read_bytes()
        try:
            raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise not_utf8_error(path, raw, exc) from None
        raise  # pragma: no cover - the whole file decodes, so the first failure cannot happen
    except csv.Error as exc:
        line = reader.line_num if reader is not None else None
        raise DataFormatError(path, f"not a readable CSV/TSV table ({exc})", line=line) from None
    return records


def _features_to_float32(X: np.ndarray, path: Path, lines: list[int], names: list[str]) -> np.ndarray:
    """``X`` (float64, finite) as float32; a value beyond float32's range is an error
    naming the line and the column (no RuntimeWarning is printed first)."""
    with np.errstate(over="ignore", invalid="ignore"):
        X32 = X.astype(np.float32)
    bad = ~np.isfinite(X32)
    if bad.any():
        r, c = (int(i) for i in np.argwhere(bad)[0])
        raise DataFormatError(path, f"feature column {names[c]!r} has value {float(X[r, c])!r}, which overflows "
                                    f"float32 (largest magnitude {float(np.finfo(np.float32).max):.4g}); rescale it",
                              line=lines[r])
    return X32


def read_table(path: str | Path, *, label_columns: list[str] | None = None, labels_last: int | None = None,
               label_set_column: str | None = None, separator: str = ";", label_names: list[str] | None = None,
               path_column: str | None = None, id_column: str | None = None, observed: bool = False,
               delimiter: str | None = None, label_column: str | None = None,
               check_files: bool = True) -> tuple[Split, list[str], list[str] | None]:
    """Read one CSV/TSV file; returns ``(split, label_names, feature_names)``."""
    path = Path(path)
    if not path.exists():
        raise DataFormatError(path, "file not found")
    if label_set_column is not None and not separator:
        raise DataFormatError(path, "the label separator is empty; give the text between label names of "
                                    f"column {label_set_column!r} (--separator, e.g. ';')")
    rows = _read_records(path, delimiter)
    if not rows:
        raise DataFormatError(path, "empty file; expected a header row")
    header = [h.strip() for h in rows[0][1]]
    _check_delimiter(header, path)
    body = [(line, r) for line, r in rows[1:] if any(c.strip() for c in r)]
    if not body:
        raise DataFormatError(path, "no data rows after the header")
    n_layouts = sum(x is not None for x in (label_columns, labels_last, label_set_column, label_column))
    if n_layouts != 1:
        raise DataFormatError(path, "say where the labels are: exactly one of label_columns, labels_last, "
                                    "label_set_column or label_column (--label-columns / --labels-last / "
                                    "--label-set-column / --label-column)")
    single = label_column is not None
    if single:
        label_set_column = label_column
    special = {}
    for opt, name in (("path_column", path_column), ("id_column", id_column), ("label_set_column", label_set_column)):
        if name is not None:
            if name not in header:
                raise DataFormatError(path, f"{opt} {name!r} is not in the header {header[:8]}...", line=1)
            special[opt] = header.index(name)
    if label_columns is not None:
        lab_idx = _match_columns(header, label_columns, path, "label column")
    elif labels_last is not None:
        if not 0 < labels_last < len(header):
            raise DataFormatError(path, f"labels_last={labels_last} but the header has {len(header)} columns", line=1)
        lab_idx = list(range(len(header) - labels_last, len(header)))
    else:
        lab_idx = []
    for line, r in body:
        if len(r) != len(header):
            hint = ("; a quoted field of this row runs over several lines — is a closing quote missing?"
                    if any("\n" in c or "\r" in c for c in r) else "")
            raise DataFormatError(path, f"row has {len(r)} fields; the header has {len(header)}{hint}", line=line)

    n = len(body)
    ids = [r[special["id_column"]].strip() for _, r in body] if "id_column" in special else None
    # ----- labels
    if label_set_column is not None:
        col = special["label_set_column"]
        sets = []
        for line, r in body:
            cell = r[col].strip()
            if single:
                if not cell:
                    raise DataFormatError(path, f"empty label in column {label_set_column!r}; each row needs one "
                                                "label (use --label-set-column for rows with none or several)",
                                          line=line)
                items = [cell]
            else:
                items = [t.strip() for t in cell.split(separator) if t.strip()] if cell else []
            for t in items:
                if "\n" in t or "\r" in t:
                    raise DataFormatError(path, f"label {t!r} in column {label_set_column!r} contains a line break "
                                                "(a quoted field spanning lines); expected one label name", line=line)
            sets.append((line, items))
        if label_names is None:
            label_names = sorted({t.lstrip("-") for _, items in sets for t in items})
        if not label_names:
            raise DataFormatError(path, f"column {label_set_column!r} names no labels")
        index = {nme: j for j, nme in enumerate(label_names)}
        M = np.zeros((n, len(label_names)), dtype=np.int8)
        for k, (line, items) in enumerate(sets):
            for t in items:
                neg = t.startswith("-") and t[1:] in index and t not in index
                name = t[1:] if neg else t
                if name not in index:
                    shown = ", ".join(label_names[:8]) + (", ..." if len(label_names) > 8 else "")
                    raise DataFormatError(path, f"unknown label {t!r} in column {label_set_column!r}; known "
                                                f"labels: {shown}", line=line)
                if neg and not observed:
                    raise DataFormatError(path, f"negative label {t!r} is only meaningful for observations "
                                                "(--observed)", line=line)
                M[k, index[name]] = -1 if neg else 1
        if not observed:
            M = (M == 1).astype(np.int8)
    else:
        label_names = [header[i] for i in lab_idx]
        allowed = ("1", "0", "-1", "") if observed else ("1", "0")
        M = np.zeros((n, len(lab_idx)), dtype=np.int8)
        for k, (line, r) in enumerate(body):
            for j, c in enumerate(lab_idx):
                v = r[c].strip()
                if v.endswith(".0"):
                    v = v[:-2]
                if v not in allowed:
                    exp = "1, -1, 0 or empty" if observed else "0 or 1"
                    raise DataFormatError(path, f"label column {header[c]!r} has value {r[c]!r}; expected {exp}",
                                          line=line)
                M[k, j] = int(v) if v else 0
    Y = None if observed else M.astype(bool)
    Z = M if observed else None
    # ----- inputs
    taken = set(lab_idx) | set(special.values())
    if path_column is not None:
        col = special["path_column"]
        paths = []
        root = path.parent.resolve()
        for line, r in body:
            p = r[col].strip()
            if not p:
                raise DataFormatError(path, f"empty image path in column {path_column!r}", line=line)
            full = resolve_path(root, p)
            if check_files and not Path(full).is_file():
                raise DataFormatError(path, f"image file {p!r} not found (looked for {full}; relative paths are "
                                            "read from the table's folder)", line=line)
            paths.append(full)
        paths, M, ids = _merge_repeated_paths(path, paths, M, ids, [line for line, _ in body], label_names)
        Y = None if observed else M.astype(bool)
        Z = M if observed else None
        return Split(paths=paths, Y=Y, Z=Z, ids=ids), list(label_names), None
    feat_idx = [i for i in range(len(header)) if i not in taken]
    if not feat_idx:
        raise DataFormatError(path, "no feature columns left after removing label/id columns; "
                                    "for images pass path_column (--path-column)")
    X = np.empty((n, len(feat_idx)), dtype=np.float64)
    for k, (line, r) in enumerate(body):
        for j, c in enumerate(feat_idx):
            v = r[c].strip()
            try:
                X[k, j] = float(v)
            except ValueError:
                raise DataFormatError(path, f"feature column {header[c]!r} has value {v!r}; expected a number",
                                      line=line) from None
            if not np.isfinite(X[k, j]):
                raise DataFormatError(path, f"feature column {header[c]!r} has non-finite value {v!r}", line=line)
    X = _features_to_float32(X, path, [line for line, _ in body], [header[c] for c in feat_idx])
    return Split(X=check_features(X, path), Y=Y, Z=Z, ids=ids), list(label_names), [header[i] for i in feat_idx]


def _merge_repeated_paths(path: Path, paths: list[str], M: np.ndarray, ids, lines: list[int], names):
    """Rows naming the same image become one example whose labels are the union (first
    row's position and id).  +1 and -1 for one label on two rows is an error."""
    first: dict[str, int] = {}
    for i, p in enumerate(paths):
        first.setdefault(p, i)
    if len(first) == len(paths):
        return paths, M, ids
    keep = sorted(first.values())
    row_of = {p: r for r, p in enumerate(paths[i] for i in keep)}
    out = np.zeros((len(keep), M.shape[1]), dtype=np.int8)
    seen_line = np.zeros((len(keep), M.shape[1]), dtype=np.int64)
    for i, p in enumerate(paths):
        r = row_of[p]
        for j in np.flatnonzero(M[i]):
            v = M[i, j]
            if out[r, j] not in (0, v):
                raise DataFormatError(path, f"label {names[j]!r} of {p!r} is observed positive on one line and "
                                            f"negative on another (line {seen_line[r, j]})", line=lines[i])
            out[r, j] = v
            seen_line[r, j] = lines[i]
    return [paths[i] for i in keep], out, (None if ids is None else [ids[i] for i in keep])


def read_feature_table(path: str | Path, *, id_column: str = "id", delimiter: str | None = None,
                       columns: list[str] | None = None, require_id: bool = False):
    """A CSV/TSV of features only (e.g. new data to predict): every column is a feature
    except ``id_column`` when present.  Returns ``(X, ids or None)``.

    ``columns`` (the feature names a model was trained on): the table's columns are
    matched **by name** and put in that order; a missing or an unexpected column is an
    error naming it and the file (columns matched by position would be silently wrong
    when the table's columns are reordered or renamed).  ``require_id``: the id column
    was named by the user (``--id-column``), so its absence is an error."""
    path = Path(path)
    if not path.exists():
        raise DataFormatError(path, "file not found")
    rows = _read_records(path, delimiter)
    if len(rows) < 2:
        raise DataFormatError(path, "expected a header row and at least one data row")
    header = [h.strip() for h in rows[0][1]]
    id_idx = header.index(id_column) if id_column in header else None
    if id_idx is None and require_id:
        raise DataFormatError(path, f"id column {id_column!r} is not in the header ({', '.join(map(repr, header[:8]))}"
                              f"{', ...' if len(header) > 8 else ''})", line=1)
    cols = [i for i in range(len(header)) if i != id_idx]
    if columns is not None:
        given = [header[i] for i in cols]
        dup = next((h for h in given if given.count(h) > 1), None)
        if dup is not None:
            raise DataFormatError(path, f"column {dup!r} appears twice in the header", line=1)
        want = set(columns)
        missing = [c for c in columns if c not in given]
        extra = [h for h in given if h not in want]

        def shown(names):
            return ", ".join(repr(n) for n in names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")

        if missing or extra:
            raise DataFormatError(path, "the feature columns do not match the model's ("
                                  + "; ".join(part for part in (f"missing {shown(missing)}" if missing else "",
                                                                f"not in the model {shown(extra)}" if extra else "")
                                              if part)
                                  + f"); expected the {len(columns)} columns the model was trained on, by name "
                                  f"(a column named '{id_column}' is allowed)", line=1)
        cols = [header.index(c) for c in columns]
    X = np.empty((len(rows) - 1, len(cols)))
    ids = []
    for r, (line, row) in enumerate(rows[1:]):
        if len(row) != len(header):
            raise DataFormatError(path, f"row has {len(row)} fields; the header has {len(header)}", line=line)
        for j, c in enumerate(cols):
            try:
                X[r, j] = float(row[c])
            except ValueError:
                raise DataFormatError(path, f"column {header[c]!r} has value {row[c]!r}; expected a number",
                                      line=line) from None
            if not np.isfinite(X[r, j]):
                raise DataFormatError(path, f"column {header[c]!r} has non-finite value {row[c]!r}", line=line)
        if id_idx is not None:
            ids.append(row[id_idx])
    X = _features_to_float32(X, path, [line for line, _ in rows[1:]], [header[c] for c in cols])
    return check_features(X, path), (ids if id_idx is not None else None)


def load_table_dataset(train: str | Path, *, test: str | Path | None = None, name: str | None = None,
                       observed: bool | None = None, log=None, **kwargs) -> MultiLabelDataset:
    """A dataset from a training table and an optional test table with the same layout.

    ``observed=None`` (the default) decides from the layout: a one-label-per-row table
    (``label_column``) holds observed single positives, so it is read as observations
    (one line about it goes to ``log`` and the dataset's notes); pass ``observed=False``
    when its labels really are complete (multi-class data); every other layout is read
    as full labels."""
    notes = []
    if observed is None:
        observed = kwargs.get("label_column") is not None
        if observed:
            notes.append(SINGLE_LABEL_NOTE.format(file=Path(train).name, column=kwargs["label_column"]))
            if log is not None:
                log(notes[-1])
    kwargs["observed"] = observed
    tr, labels, feats = read_table(train, **kwargs)
    splits = {"train": tr}
    if test is not None:
        kw = dict(kwargs)
        if kw.get("label_set_column") is not None or kw.get("label_column") is not None:
            kw["label_names"] = labels
        te, labels_te, _ = read_table(test, **kw)
        if labels_te != labels:
            raise DataFormatError(test, "label columns differ from the training table's")
        splits["test"] = te
    return MultiLabelDataset(name=name or Path(train).stem, label_names=labels, splits=splits,
                             source=str(train), feature_names=feats, notes=notes)


SINGLE_LABEL_NOTE = ("{file}: one label per row (column {column!r}) is read as observed single positives, as with "
                     "--observed; if each row's label is its complete label set (multi-class data), pass "
                     "--full-labels (observed=False)")


def load_npz(path: str | Path, *, name: str | None = None, observed: bool = False) -> MultiLabelDataset:
    """A dataset from an ``.npz`` archive (see module docstring for the keys).

    Never unpickles: an object array, a corrupt or truncated archive, complex numbers,
    or an array with no rows, no feature columns or no label columns is a one-line
    :class:`DataFormatError` naming the file."""
    from ...io import load_numpy, npz_array

    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, "file not found")
    with open(path, "rb") as fh:
        magic = fh.read(6)
    if magic == b"\x93NUMPY":
        raise DataFormatError(path, "is a single .npy array, not an .npz archive; expected an archive written by "
                                    "np.savez with keys X and Y (or X_train, Y_train, ...)")
    if not zipfile.is_zipfile(path):  # checked here: np.load leaves the file open when the zip is unreadable
        raise DataFormatError(path, "is not a readable .npz archive (truncated, damaged or not a zip file); expected "
                                    "a file written by np.savez")
    arc = load_numpy(path)
    try:
        return _npz_dataset(arc, path, name=name, observed=observed, read=lambda k: npz_array(arc, k, path))
    finally:
        arc.close()


def _npz_dataset(arc, path: Path, *, name, observed, read) -> MultiLabelDataset:
    keys = set(arc.files)

    def pick(*cands):
        for c in cands:
            if c in keys:
                return c, read(c)
        return None, None

    def labels(key, sfx, arr, n):
        if np.iscomplexobj(arr):
            raise DataFormatError(path, f"[{key}] labels are complex numbers (dtype {arr.dtype}); expected 0/1 "
                                        "(or +1/-1/0 observations)")
        if arr.ndim != 2:
            raise DataFormatError(path, f"[{key}] labels must be a 2-D (examples x labels) array, got shape "
                                        f"{arr.shape}")
        if arr.shape[1] == 0:
            raise DataFormatError(path, f"[{key}] has no label columns (shape {arr.shape}); expected at least one")
        if arr.shape[0] != n:
            raise DataFormatError(path, f"X{sfx} has {n} rows but its labels have {arr.shape[0]}")
        return arr

    splits = {}
    for split in ("train", "val", "test", None):
        sfx = f"_{split}" if split else ""
        xkey, X = pick(f"X{sfx}", f"features{sfx}")
        if X is None:
            continue
        ykey, Y = pick(f"Y{sfx}", f"labels{sfx}")
        zkey, Z = pick(f"Z{sfx}", f"observed{sfx}")
        if observed and Z is None:
            Z, Y, zkey = Y, None, ykey
        if Y is None and Z is None:
            raise DataFormatError(path, f"has X{sfx} but no Y{sfx} (labels) or Z{sfx} (observations)")
        X = check_features(X, f"{path} [{xkey}]")
        if X.shape[0] == 0:
            raise DataFormatError(path, f"[{xkey}] has no rows (shape {X.shape}); expected at least one example")
        if Y is not None:
            Y = labels(ykey, sfx, Y, X.shape[0])
        else:
            Z = labels(zkey, sfx, Z, X.shape[0])
        try:
            splits[split or "train"] = Split(X=X, Y=Y, Z=Z if Y is None else None)
        except DataFormatError as exc:
            raise DataFormatError(path, f"[{ykey if Y is not None else zkey}] "
                                        f"{str(exc).removeprefix('<input>: ')}") from None
        if split is None:
            break
    if "train" not in splits:
        raise DataFormatError(path, f"no features found; expected key 'X' (or 'X_train'), got {sorted(keys)}")
    L = splits["train"].n_labels
    _, names = pick("label_names")
    if names is not None and (names.ndim != 1 or len(names) != L):
        raise DataFormatError(path, f"[label_names] has shape {names.shape}; expected {L} names (one per label column)")
    label_names = [str(s) for s in names] if names is not None else [f"label{i}" for i in range(L)]
    _, fn = pick("feature_names")
    D = splits["train"].X.shape[1]
    if fn is not None and (fn.ndim != 1 or len(fn) != D):
        raise DataFormatError(path, f"[feature_names] has shape {fn.shape}; expected {D} names (one per feature "
                                    "column)")
    return MultiLabelDataset(name=name or path.stem, label_names=label_names, splits=splits, source=str(path),
                             feature_names=[str(s) for s in fn] if fn is not None else None)
