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
  error.  Otherwise it reads like a set column.

Unless told (``observed=True``/``--observed``, ``observed=False``/``--full-labels``),
:func:`load_table_dataset` (and ``spml prepare``) read the labels of every layout by one
rule (:mod:`.label_rule`): evidently partial rows are observed positives, anything else
is refused, asking.

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

NPZ archives are read by :mod:`.npz` (``load_npz``, re-exported here).
"""
from __future__ import annotations

import csv
import dataclasses
import fnmatch
from pathlib import Path

import numpy as np

from ...errors import DataFormatError, did_you_mean
from ...labels import MISSING_LABELS, check_label_names, normalize_label
from ...reading import open_text
from .label_rule import READ_DECLARED, read_by_the_rule
from .table_checks import (CLASS_CODES, check_header, columns_listed, describe_name_difference,
                           refuse_contradicting_ids)
from ...sparse_labels import SparseLabels
from ..dataset import MultiLabelDataset, Split, check_features, resolve_path
from .arff import not_utf8_error
from .npz import MAX_LABELS, load_npz  # re-exported: the NPZ reader lived here


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
    naming the option, rather than "label column ... matches no column".  A
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
            raise DataFormatError(path, f"{what} {p!r} matches no column of the header{did_you_mean(p, header)}; "
                                        f"{columns_listed(header)}", line=1)
        for h in hits:
            if h not in taken:
                taken.add(h)
                out.append(h)
    return out


def _iter_records(path: Path, delimiter: str | None):
    """The CSV/TSV records of ``path`` with the line each starts on (1-based), one at a time.

    The csv module reads the file object itself (``newline=''``), so a quoted field may
    span lines and line numbers stay those of the file.  The file must be UTF-8 (a
    byte-order mark is allowed); anything else is an error naming the line."""
    reader = None
    if path.exists() and not path.is_file():  # /dev/zero, a pipe: read until memory runs out
        raise DataFormatError(path, "not a regular file (a folder, a device or a pipe); expected a CSV/TSV file")
    try:
        with open_text(path) as fh:  # (the reader rule: a regular file, opened without blocking)
            delim = _delimiter_for(path, delimiter, fh.read(4096))
            fh.seek(0)
            reader = csv.reader(fh, delimiter=delim)
            start = 1
            for row in reader:
                yield start, row
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


def _read_records(path: Path, delimiter: str | None) -> list[tuple[int, list[str]]]:
    """Every record of ``path`` (:func:`_iter_records`) in a list (small tables)."""
    return list(_iter_records(path, delimiter))


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


def _parse_numbers(block: list[list[str]], lines: list[int], names: list[str], path: Path, what: str) -> np.ndarray:
    """A block of number cells as float64: numpy parses them (5x faster than a Python loop);
    on a bad or non-finite cell the first one is found and named with its line and column."""
    try:
        X = np.array(block, dtype=np.float64) if block else np.zeros((0, len(names)))
        if np.isfinite(X).all():
            return X
    except ValueError:
        pass
    for r, row in enumerate(block):
        for j, v in enumerate(row):
            try:
                x = float(v)
            except ValueError:
                raise DataFormatError(path, f"{what} {names[j]!r} has value {v.strip()!r}; expected a number",
                                      line=lines[r]) from None
            if not np.isfinite(x):
                raise DataFormatError(path, f"{what} {names[j]!r} has non-finite value {v.strip()!r}",
                                      line=lines[r])
    raise AssertionError("unreachable")  # pragma: no cover


#: rows parsed at a time: the text of one block is held, the rest of the table only as
#: float32 features and label indices (memory O(N·D + nnz), not the whole file's strings)
BLOCK_ROWS = 20_000


class _Labels:
    """Label entries of a table read block by block: ``(row, label, value)`` triples with
    the label as a provisional number in first-seen order when the vocabulary is not fixed
    (renumbered to the sorted names at the end)."""

    def __init__(self, label_names):
        self.fixed = label_names is not None
        self.index = {nme: j for j, nme in enumerate(label_names or [])}
        self.rows, self.cols, self.vals, self.lines = [], [], [], []

    def add(self, rows, cols, vals, lines):
        self.rows.append(np.asarray(rows, dtype=np.int64))
        self.cols.append(np.asarray(cols, dtype=np.int64))
        self.vals.append(np.asarray(vals, dtype=np.int8))
        self.lines.append(np.asarray(lines, dtype=np.int64))

    def arrays(self):
        cat = (lambda parts, dt: np.concatenate(parts) if parts else np.zeros(0, dtype=dt))
        return (cat(self.rows, np.int64), cat(self.cols, np.int64), cat(self.vals, np.int8),
                cat(self.lines, np.int64))


@dataclasses.dataclass
class _Layout:
    """Where a table's labels, inputs and identifiers are: the columns the options name,
    normalized and matched to the header (indices into each row)."""
    header: list[str]
    single: bool  # one label name per row (label_column) rather than a set of them
    label_set_column: str | None  # the column of label names (set or single); None: wide labels
    label_columns: list[str] | None
    path_column: str | None
    special: dict  # option ("path_column", "id_column", "label_set_column") -> column index
    lab_idx: list[int]  # the wide label columns
    feat_idx: list[int]
    feat_names: list[str]


def _open_table(path: Path, delimiter: str | None, label_set_column: str | None, separator: str):
    """Open the table: its records after the header and the header's names (NFC, stripped:
    the names the options are matched to), refusing a missing file, an empty separator, an
    empty file and a header read with the wrong delimiter or with unusable names."""
    if not path.exists():
        raise DataFormatError(path, "file not found")
    if label_set_column is not None and not separator:
        raise DataFormatError(path, "the label separator is empty; give the text between label names of "
                                    f"column {label_set_column!r} (--separator, e.g. ';')")
    records = _iter_records(path, delimiter)
    first = next(records, None)
    if first is None:
        raise DataFormatError(path, "empty file; expected a header row")
    header = [normalize_label(h) for h in first[1]]
    _check_delimiter(header, path)
    check_header(header, path)
    return records, header


def _layout(path: Path, header: list[str], label_columns, labels_last, label_set_column, label_column,
            path_column, id_column) -> _Layout:
    """Sniff the layout: exactly one way of giving the labels, every named column in the
    header, no id or path column that is also a label, and at least one feature column
    unless the inputs are image paths."""
    label_set_column, label_column, path_column, id_column = (
        None if c is None else normalize_label(c) for c in (label_set_column, label_column, path_column, id_column))
    if label_columns is not None:
        label_columns = [normalize_label(c) for c in label_columns]
    n_layouts = sum(x is not None for x in (label_columns, labels_last, label_set_column, label_column))
    if n_layouts != 1:
        raise DataFormatError(path, "say where the labels are: exactly one of label_columns, labels_last, "
                                    "label_set_column or label_column (--label-columns / --labels-last / "
                                    "--label-set-column / --label-column)")
    single = label_column is not None
    if single:
        label_set_column = label_column
    special = {}
    for opt, name in (("path_column", path_column), ("id_column", id_column),
                      ("label_column" if single else "label_set_column", label_set_column)):
        if name is not None:
            if name not in header:
                raise DataFormatError(path, f"--{opt.replace('_', '-')} {name!r} is not a column of the header"
                                            f"{did_you_mean(name, header)}; {columns_listed(header)}", line=1)
            special["label_set_column" if opt == "label_column" else opt] = header.index(name)
    if label_columns is not None:
        lab_idx = _match_columns(header, label_columns, path, "label column")
    elif labels_last is not None:
        if not 0 < labels_last < len(header):
            raise DataFormatError(path, f"labels_last={labels_last} but the header has {len(header)} columns", line=1)
        lab_idx = list(range(len(header) - labels_last, len(header)))
    else:
        lab_idx = []
    for opt in ("id_column", "path_column"):  # an id (or image path) is never also a label
        if opt in special and special[opt] in lab_idx:
            raise DataFormatError(path, f"column {header[special[opt]]!r} is both the {opt.replace('_', ' ')} and a "
                                        "label column; leave it out of the label columns (or choose another "
                                        f"--{opt.replace('_', '-')})", line=1)
    taken = set(lab_idx) | set(special.values())
    feat_idx = [i for i in range(len(header)) if i not in taken]
    if path_column is None and not feat_idx:
        raise DataFormatError(path, "no feature columns left after removing label/id columns; "
                                    "for images pass path_column (--path-column)")
    return _Layout(header, single, label_set_column, label_columns, path_column, special, lab_idx, feat_idx,
                   [header[c] for c in feat_idx])


def _blocks(records, header: list[str], path: Path):
    """The data rows in blocks of at most :data:`BLOCK_ROWS` rows (fewer for wide tables:
    about 4M cells of text at a time), blank rows skipped, a row of the wrong width refused."""
    block: list[tuple[int, list[str]]] = []
    block_rows = min(BLOCK_ROWS, max(1, 2 ** 22 // max(len(header), 1)))
    for line, r in records:
        if not any(c.strip() for c in r):
            continue
        if len(r) != len(header):
            hint = ("; a quoted field of this row runs over several lines — is a closing quote missing?"
                    if any("\n" in c or "\r" in c for c in r) else "")
            raise DataFormatError(path, f"row has {len(r)} fields; the header has {len(header)}{hint}", line=line)
        block.append((line, r))
        if len(block) >= block_rows:
            yield block
            block = []
    if block:
        yield block


def _set_label_entries(path: Path, block, lay: _Layout, labels: _Labels, codes: set, n: int, separator: str,
                       observed: bool, label_names) -> None:
    """Parse a block's column of label names (a set per cell, or one name per row) into
    label entries; ``codes`` collects the single-label cells that are class codes (None for
    a name that is not).  An unknown name (fixed vocabulary), a line break in a name, an
    empty single label and a negative outside observations are errors naming the line."""
    col = lay.special["label_set_column"]
    label_set_column = lay.label_set_column
    rows, cols, vals, where = [], [], [], []
    for k, (line, r) in enumerate(block):
        cell = normalize_label(r[col])
        if lay.single:
            if cell in MISSING_LABELS:
                raise DataFormatError(path, f"{'empty' if not cell else 'missing (' + repr(cell) + ')'} label "
                                            f"in column {label_set_column!r}; each row needs one label (use "
                                            "--label-set-column for rows with none or several)", line=line)
            items = [cell]
            codes.add(cell) if cell in CLASS_CODES else codes.add(None)
        else:
            items = [t for t in (normalize_label(t) for t in cell.split(separator))
                     if t not in MISSING_LABELS] if cell else []
        for t in items:
            if "\n" in t or "\r" in t:
                raise DataFormatError(path, f"label {t!r} in column {label_set_column!r} contains a line "
                                            "break (a quoted field spanning lines); expected one label name",
                                      line=line)
            neg = False
            if labels.fixed:
                neg = t.startswith("-") and t[1:] in labels.index and t not in labels.index
                name = t[1:] if neg else t
                if name not in labels.index:
                    shown = ", ".join(label_names[:8]) + (", ..." if len(label_names) > 8 else "")
                    raise DataFormatError(path, f"unknown label {t!r} in column {label_set_column!r}; known "
                                                f"labels: {shown}", line=line)
            else:
                neg = t.startswith("-")
                name = t.lstrip("-") if neg else t
                if not name:
                    continue
                labels.index.setdefault(name, len(labels.index))
            if neg and not observed and not (lay.single and cell in CLASS_CODES):  # (codes: refused when read)
                raise _negative_error(path, t, line)
            rows.append(n + k)
            cols.append(labels.index[name])
            vals.append(-1 if neg else 1)
            where.append(line)
    labels.add(rows, cols, vals, where)


def _negative_error(path: Path, name: str, line: int) -> DataFormatError:
    return DataFormatError(path, f"negative label {name!r} is only meaningful for observations (--observed)",
                           line=line)


def _wide_label_entries(path: Path, block, lines: list[int], lay: _Layout, labels: _Labels, n: int,
                        observed: bool) -> None:
    """Parse a block's wide label columns (``0``/``1``; observations also ``-1`` and empty;
    ``1.0`` reads as ``1`` and a missing-value mark as empty) into label entries; any other
    value is an error naming the line and the column."""
    lab_idx = lay.lab_idx
    wide_allowed = np.array(["1", "0", "-1", ""] if observed else ["1", "0"])
    cells = np.char.strip(np.array([[r[c] for c in lab_idx] for _, r in block], dtype=str).reshape(
        len(block), len(lab_idx)))
    cells = np.where(np.char.endswith(cells, ".0"), np.char.rstrip(np.char.rstrip(cells, "0"), "."), cells)
    cells = np.where(np.isin(cells, list(MISSING_LABELS)), "", cells)  # 'NA': a missing value, not a label
    ok = np.isin(cells, wide_allowed)
    if not ok.all():
        r, j = (int(i) for i in np.argwhere(~ok)[0])
        exp = "1, -1, 0 or empty" if observed else "0 or 1"
        hint = ("; a column of label names is --label-column (singular: one name per row) or "
                "--label-set-column (several names per cell), not --label-columns"
                if len(lab_idx) == 1 and lay.label_columns is not None else "")
        if not observed and cells[r, j] in ("-1", ""):
            hint += "; -1 and empty cells are observations (negative, unknown): pass --observed"
        raise DataFormatError(path, f"label column {lay.header[lab_idx[j]]!r} has value "
                                    f"{block[r][1][lab_idx[j]]!r}; expected {exp}{hint}", line=block[r][0])
    v = np.where(cells == "1", 1, np.where(cells == "-1", -1, 0)).astype(np.int8)
    r, c = np.nonzero(v)
    labels.add(r + n, c, v[r, c], np.asarray(lines)[r])


def _block_paths(path: Path, block, lay: _Layout, root: Path, check_files: bool) -> list[str]:
    """A block's image paths, resolved against the table's folder (``root``); an empty path,
    and with ``check_files`` a missing image, is an error naming the line."""
    col = lay.special["path_column"]
    out = []
    for line, r in block:
        p = r[col].strip()
        if not p:
            raise DataFormatError(path, f"empty image path in column {lay.path_column!r}", line=line)
        full = resolve_path(root, p)
        if check_files and not Path(full).is_file():
            raise DataFormatError(path, f"image file {p!r} not found (looked for {full}; relative paths "
                                        "are read from the table's folder)", line=line)
        out.append(full)
    return out


def _found_label_names(path: Path, lay: _Layout, labels: _Labels, codes: set, label_names, cols: np.ndarray):
    """Check the label names once every block is read: single labels that are only class
    codes are refused; without a fixed vocabulary the names found become the sorted label
    names and the entries' columns are renumbered to them.  Returns ``(label_names, cols)``."""
    label_set_column = lay.label_set_column
    if lay.single and codes and None not in codes:
        raise DataFormatError(path, f"column {label_set_column!r} holds only the codes {', '.join(sorted(codes))}: "
                                    "class codes, not label names (-1 would read as an observed negative of label "
                                    "'1'); for one 0/1 (or +1/-1/0) column per label use --label-columns, else "
                                    "give the labels their names")
    if label_set_column is not None:
        if not labels.fixed:
            found = list(labels.index)
            if not found:
                raise DataFormatError(path, f"column {label_set_column!r} names no labels")
            label_names = sorted(found)
            new_pos = {nme: i for i, nme in enumerate(label_names)}
            renumber = np.array([new_pos[nme] for nme in found], dtype=np.int64)
            cols = renumber[cols] if cols.size else cols
        if not label_names:
            raise DataFormatError(path, f"column {label_set_column!r} names no labels")
    check_label_names(label_names, path)
    return label_names, cols


def read_table(path: str | Path, *, label_columns: list[str] | None = None, labels_last: int | None = None,
               label_set_column: str | None = None, separator: str = ";", label_names: list[str] | None = None,
               path_column: str | None = None, id_column: str | None = None, observed: bool = False,
               delimiter: str | None = None, label_column: str | None = None,
               check_files: bool = True) -> tuple[Split, list[str], list[str] | None]:
    """Read one CSV/TSV file; returns ``(split, label_names, feature_names)``.

    The table is read in blocks of :data:`BLOCK_ROWS` rows: features become float32 as
    they are read and labels a list of entries, so the labels of the split are sparse
    (:class:`~spmlkit.sparse_labels.SparseLabels`) whatever the number of labels.  A table
    with one label per row and an ``id_column`` may list an example once per label (a long
    table of ``(example, label)`` rows): rows with the same id are one example, like rows
    naming the same image; their features must agree.

    The steps: open the table and read its header (:func:`_open_table`), sniff the layout
    (:func:`_layout`), parse the rows block by block (:func:`_blocks`; labels by
    :func:`_set_label_entries` or :func:`_wide_label_entries`, inputs by :func:`_block_paths`
    or as numbers), check the label names (:func:`_found_label_names`) and build the split
    with sparse labels (:func:`_table_split`)."""
    path = Path(path)
    records, header = _open_table(path, delimiter, label_set_column, separator)
    lay = _layout(path, header, label_columns, labels_last, label_set_column, label_column, path_column, id_column)
    if label_names is not None:
        label_names = [normalize_label(c) for c in label_names]
    labels = _Labels(None if lay.label_set_column is None else label_names)
    if lay.label_set_column is None:
        label_names = [header[i] for i in lay.lab_idx]
    codes: set = set()  # the single-label cells that are class codes (None: a name that is not)
    X_blocks: list[np.ndarray] = []
    ids: list[str] | None = [] if "id_column" in lay.special else None
    paths: list[str] | None = [] if lay.path_column is not None else None
    all_lines: list[int] = []
    root = path.parent.resolve()
    n = 0
    for block in _blocks(records, header, path):
        lines = [line for line, _ in block]
        all_lines.extend(lines)
        if ids is not None:
            ids.extend(r[lay.special["id_column"]].strip() for _, r in block)
        if lay.label_set_column is not None:
            _set_label_entries(path, block, lay, labels, codes, n, separator, observed, label_names)
        else:
            _wide_label_entries(path, block, lines, lay, labels, n, observed)
        if paths is not None:
            paths.extend(_block_paths(path, block, lay, root, check_files))
        else:
            X = _parse_numbers([[r[c].strip() for c in lay.feat_idx] for _, r in block], lines, lay.feat_names,
                               path, "feature column")
            X_blocks.append(_features_to_float32(X, path, lines, lay.feat_names))
        n += len(block)
    if n == 0:
        raise DataFormatError(path, "no data rows after the header")
    rows, cols, vals, where = labels.arrays()
    label_names, cols = _found_label_names(path, lay, labels, codes, label_names, cols)
    if not observed and lay.label_set_column is not None and bool((vals == -1).any()):  # a code beside names
        e = int(np.flatnonzero(vals == -1)[0])
        raise _negative_error(path, "-" + label_names[cols[e]], int(where[e]))
    return _table_split(path, lay, label_names, (rows, cols, vals, where), all_lines, ids, paths, X_blocks,
                        observed)


def _table_split(path: Path, lay: _Layout, label_names, entries, all_lines, ids, paths, X_blocks, observed):
    """Build the split: refuse ids that contradict, merge the rows naming the same image
    (or, one label per row, the same id), keep only positives for full labels and store the
    labels sparse.  Returns ``(split, label_names, feature_names)``."""
    rows, cols, vals, where = entries
    if observed and not bool((vals == 1).any()):
        raise DataFormatError(path, "no observed positive in the table (every label is unobserved or negative); "
                                    "single-positive training needs at least one")
    if ids is not None and not lay.single:
        refuse_contradicting_ids(path, ids, rows, cols, vals, all_lines)
    L = len(label_names)
    X = None if paths is not None else (np.concatenate(X_blocks) if len(X_blocks) > 1 else X_blocks[0])
    keys = paths if paths is not None else (ids if lay.single and ids is not None else None)
    rows, cols, vals, where, keep = _merge_rows(path, keys, rows, cols, vals, where, all_lines, label_names,
                                                X=X, feat_names=lay.feat_names,
                                                what="image" if paths is not None else "example")
    n_out = len(keep)
    if not observed:
        pos = vals == 1
        rows, cols, vals, where = rows[pos], cols[pos], vals[pos], where[pos]
    M = SparseLabels.from_coo(rows, cols, None if not observed or bool((vals == 1).all()) else vals,
                              shape=(n_out, L), dtype=np.int8 if observed else bool, source=str(path))
    Y = None if observed else M
    Z = M if observed else None
    if ids is not None and len(keep) != len(ids):
        ids = [ids[i] for i in keep]
    if paths is not None:
        return Split(paths=[paths[i] for i in keep] if len(keep) != len(paths) else paths, Y=Y, Z=Z, ids=ids), \
            list(label_names), None
    X = X[keep] if len(keep) != len(X) else X
    return Split(X=check_features(X, path), Y=Y, Z=Z, ids=ids), list(label_names), lay.feat_names


def _merge_rows(path: Path, keys, rows, cols, vals, lines, all_lines, names, *, X=None, feat_names=None,
                what: str = "image"):
    """Rows with the same key (image path, or example id of a long table) become one
    example whose labels are the union (first row's position and id).  +1 and -1 for one
    label on two rows is an error; a label listed twice on one row or on two rows of one
    example counts once.  Returns the merged entries and the kept rows."""
    n = len(all_lines)
    keep = np.arange(n)
    if keys is not None:
        first: dict = {}
        row_of = np.empty(n, dtype=np.int64)
        for i, k in enumerate(keys):
            row_of[i] = first.setdefault(k, len(first))
        if len(first) != n:
            keep = np.zeros(len(first), dtype=np.int64)
            seen = np.zeros(len(first), dtype=bool)
            for i, j in enumerate(row_of):
                if not seen[j]:
                    seen[j], keep[j] = True, i
            if X is not None:  # the rows of one example must describe it the same way
                same = (X == X[keep][row_of]).all(axis=1)
                if not same.all():
                    i = int(np.flatnonzero(~same)[0])
                    c = int(np.flatnonzero(X[i] != X[keep[row_of[i]]])[0])
                    raise DataFormatError(path, f"{what} {keys[i]!r} is listed on several rows with different "
                                                f"values of feature column {feat_names[c]!r} (line "
                                                f"{all_lines[keep[row_of[i]]]})", line=all_lines[i])
            rows = row_of[rows]
    order = np.lexsort((lines, cols, rows))
    rows, cols, vals, lines = rows[order], cols[order], vals[order], lines[order]
    if rows.size > 1:
        same = (rows[1:] == rows[:-1]) & (cols[1:] == cols[:-1])
        clash = same & (vals[1:] != vals[:-1])
        if clash.any():
            e = int(np.flatnonzero(clash)[0]) + 1
            who = f"{what} {keys[keep[rows[e]]]!r}" if keys is not None else "this row"
            raise DataFormatError(path, f"label {names[cols[e]]!r} of {who} is observed positive on one line and "
                                        f"negative on another (line {lines[e - 1]})", line=int(lines[e]))
        dup = np.concatenate([[False], same])
        rows, cols, vals, lines = rows[~dup], cols[~dup], vals[~dup], lines[~dup]
    return rows, cols, vals, lines, keep


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

    ``observed=True`` reads the labels as observations, ``observed=False`` as complete
    label sets; ``observed=None`` (the default: the user said neither) reads them by one
    rule for every layout (:mod:`.label_rule`): rows that are evidently partial (exactly
    one positive each, or one or two of at least five labels) are observed positives, with
    one line about it to ``log`` (after the tables are read, so that a refusal comes
    first, alone); anything else is refused, asking for ``--observed`` or ``--full-labels``."""
    kwargs["observed"] = bool(observed)
    tr, labels, feats = read_table(train, **kwargs)
    splits = {"train": tr}
    if test is not None:
        kw = dict(kwargs)
        if kw.get("label_set_column") is not None or kw.get("label_column") is not None:
            kw["label_names"] = labels
        te, labels_te, feats_te = read_table(test, **kw)
        if labels_te != labels:
            raise DataFormatError(test, "label columns differ from the training table's: "
                                  + describe_name_difference(labels, labels_te, "label"))
        if feats is not None and feats_te != feats:  # matched by name, never by position
            if sorted(feats_te) != sorted(feats):
                raise DataFormatError(test, "feature columns differ from the training table's: "
                                      + describe_name_difference(feats, feats_te, "feature column"), line=1)

            te = dataclasses.replace(te, X=te.X[:, [feats_te.index(f) for f in feats]])
        splits["test"] = te
    ds = MultiLabelDataset(name=name or Path(train).stem, label_names=labels, splits=splits, source=str(train),
                           feature_names=feats, label_reading=None if observed is None else READ_DECLARED[observed])
    return ds if observed is not None else read_by_the_rule(ds, str(train), kwargs, log=log)
