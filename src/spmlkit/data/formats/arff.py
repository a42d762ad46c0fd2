"""ARFF reader for multi-label data in the Mulan and MEKA conventions.

* **Mulan**: a standard ARFF file plus an XML file that lists the label attributes by
  name (``<labels><label name="..."/>...</labels>``).  The XML is authoritative for
  *which* attributes are labels (names may contain spaces and quotes, Mulan's *birds*);
  labels are kept in the ARFF's declaration order.
* **MEKA**: the ``@relation`` name carries ``-C n``; ``n > 0`` means the *first* n
  attributes are labels, ``n < 0`` the *last* |n|.  Used only when no XML is given
  (Mulan's *medical* carries a ``-C 45`` relation but its labels are the last 45
  attributes — its XML says so, and the XML wins).

Rows may be dense (``v1,v2,...``) or sparse (``{index value, ...}``, absent = 0).
Numeric attributes become float features; nominal attributes whose values are all
numbers are read as those numbers; other nominal attributes are one-hot encoded
(``name=value`` columns), except identifier-like ones with more than
``max_categories`` values (e.g. genbase's ``protein`` accession), which are dropped and
reported in :attr:`ArffData.dropped_attributes`.  Label attributes must hold 0 or 1.
Any violation raises :class:`~spmlkit.errors.DataFormatError` with the file and line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import DataFormatError
from ...reading import read_bytes
from .base import read_xml


@dataclass
class _Attribute:
    name: str
    kind: str  # "numeric" | "nominal" | "string" | "date"
    values: list[str] = field(default_factory=list)
    line: int = 0


@dataclass
class ArffData:
    X: np.ndarray  # (N, D) float32
    Y: np.ndarray  # (N, L) bool
    feature_names: list[str]
    label_names: list[str]
    relation: str
    dropped_attributes: list[str] = field(default_factory=list)


def _split_quoted(text: str, path, line: int) -> tuple[str, str]:
    """Split ``text`` into the first (possibly quoted) token and the rest."""
    text = text.strip()
    if not text:
        raise DataFormatError(path, "expected a name", line=line)
    q = text[0]
    if q in "'\"":
        out, i = [], 1
        while i < len(text):
            c = text[i]
            if c == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 2
                continue
            if c == q:
                return "".join(out), text[i + 1:].strip()
            out.append(c)
            i += 1
        raise DataFormatError(path, f"unterminated quote in {text!r}", line=line)
    m = re.match(r"(\S+)\s*(.*)$", text)
    return m.group(1), m.group(2).strip()


def _split_values(text: str) -> list[str]:
    """Split a comma-separated list that may contain quoted items."""
    out, cur, q, i = [], [], None, 0
    while i < len(text):
        c = text[i]
        if q:
            if c == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 2
                continue
            if c == q:
                q = None
            else:
                cur.append(c)
        elif c in "'\"":
            q = c
        elif c == ",":
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    out.append("".join(cur).strip())
    return out


def read_label_xml(path: str | Path) -> list[str]:
    """Label names from a Mulan XML label file (hierarchies are flattened in document order)."""
    path = Path(path)
    root = read_xml(path, missing="label XML file not found")
    names = [el.attrib["name"] for el in root.iter() if el.tag.split("}")[-1] == "label" and "name" in el.attrib]
    if not names:
        raise DataFormatError(path, "no <label name=...> elements found")
    return names


def _meka_label_count(relation: str) -> int | None:
    m = re.search(r"-C\s+(-?\d+)", relation)
    return int(m.group(1)) if m else None


@dataclass
class _FeatureColumns:
    """How the non-label attributes become feature columns: ``kind`` maps an attribute's
    index to ``("num", None)`` or ``("onehot", category -> offset)``, ``offset`` to its first
    column; ``numbers`` holds the declared values of nominal attributes read as numbers."""
    kind: dict
    offset: dict
    numbers: dict
    names: list[str]
    dropped: list[str]
    width: int


def read_arff(path: str | Path, *, labels_xml: str | Path | None = None, label_names: list[str] | None = None,
              max_categories: int = 64) -> ArffData:
    """Read a multi-label ARFF file.

    Parameters
    ----------
    path : the ``.arff`` file.
    labels_xml : Mulan label XML; if omitted, ``label_names`` or the MEKA ``-C n`` header is used.
    label_names : explicit label attribute names (alternative to the XML).
    max_categories : nominal feature attributes with more values are dropped as identifiers.

    The steps: read the lines (:func:`_read_lines`), parse the header
    (:func:`_read_header`), find the label attributes (:func:`_label_attributes`) and the
    feature columns (:func:`_feature_columns`), parse each data row (:func:`_parse_row`)
    and check the features fit float32 (:func:`_features_float32`).  The labels are dense:
    ARFF files are small enough to read whole (the reader rule's read budget).
    """
    path = Path(path)
    if not path.exists():
        raise DataFormatError(path, "file not found")
    if labels_xml is not None:
        label_names = read_label_xml(labels_xml)
    lines = _read_lines(path)
    attrs, relation, data_start = _read_header(path, lines)
    label_idx, label_names = _label_attributes(path, attrs, relation, label_names, labels_xml)
    feats = _feature_columns(path, attrs, set(label_idx), max_categories)
    label_pos = {a: j for j, a in enumerate(label_idx)}
    X_rows: list[np.ndarray] = []
    Y_rows: list[np.ndarray] = []
    row_lines: list[int] = []
    for ln in range(data_start + 1, len(lines) + 1):
        s = lines[ln - 1].strip()
        if not s or s.startswith("%"):
            continue
        x, y = _parse_row(path, s, ln, attrs, feats, label_pos, len(label_idx))
        X_rows.append(x)
        Y_rows.append(y)
        row_lines.append(ln)
    if not X_rows:
        raise DataFormatError(path, "no data rows after @data")
    X = _features_float32(path, X_rows, feats.names, row_lines)
    return ArffData(X=X, Y=np.asarray(Y_rows, dtype=bool), feature_names=feats.names,
                    label_names=list(label_names), relation=relation, dropped_attributes=feats.dropped)


def _read_header(path: Path, lines: list[str]) -> tuple[list[_Attribute], str, int]:
    """Parse the header up to ``@data``: the attributes (each name once, a supported type),
    the relation name and the line of ``@data``.  Returns ``(attributes, relation, data_line)``."""
    attrs: list[_Attribute] = []
    declared: dict[str, int] = {}  # attribute name -> line of its declaration
    relation = ""
    data_start = None
    for ln, raw in enumerate(lines, start=1):
        s = raw.strip()
        if not s or s.startswith("%"):
            continue
        low = s.lower()
        if low.startswith("@relation"):
            relation, _ = _split_quoted(s[len("@relation"):], path, ln) if s[len("@relation"):].strip() else ("", "")
        elif low.startswith("@attribute"):
            name, rest = _split_quoted(s[len("@attribute"):], path, ln)
            if name in declared:
                raise DataFormatError(path, f"attribute {name!r} is declared twice (first on line {declared[name]}); "
                                            "expected unique attribute names", line=ln)
            declared[name] = ln
            attrs.append(_attribute(path, name, rest, ln))
        elif low.startswith("@data"):
            data_start = ln
            break
        elif low.startswith("@"):
            raise DataFormatError(path, f"unexpected header line {s[:40]!r}", line=ln)
        else:
            raise DataFormatError(path, f"expected @relation/@attribute/@data, got {s[:40]!r}", line=ln)
    if data_start is None:
        raise DataFormatError(path, "no @data section")
    if not attrs:
        raise DataFormatError(path, "no @attribute declarations")
    return attrs, relation, data_start


def _attribute(path: Path, name: str, rest: str, ln: int) -> _Attribute:
    """One ``@attribute`` declaration's type (``rest``): nominal ``{...}``, numeric, string or date."""
    rl = rest.lower()
    if rest.startswith("{"):
        if not rest.endswith("}"):
            raise DataFormatError(path, f"nominal attribute {name!r}: missing closing '}}'", line=ln)
        return _Attribute(name, "nominal", _split_values(rest[1:-1]), ln)
    if rl in ("numeric", "real", "integer") or rl.startswith(("numeric", "real", "integer")):
        return _Attribute(name, "numeric", line=ln)
    if rl.startswith("string"):
        return _Attribute(name, "string", line=ln)
    if rl.startswith("date"):
        return _Attribute(name, "date", line=ln)
    raise DataFormatError(path, f"attribute {name!r}: unsupported type {rest!r}", line=ln)


def _label_attributes(path: Path, attrs: list[_Attribute], relation: str, label_names, labels_xml):
    """Which attributes are labels: the names given (the XML's, kept in the ARFF's
    declaration order) or MEKA's ``-C n``; each must be a 0/1 attribute.  Returns
    ``(label attribute indices, label names)``."""
    names = [a.name for a in attrs]
    if label_names is not None:
        index = {n: i for i, n in enumerate(names)}
        missing = [n for n in label_names if n not in index]
        if missing:
            src = labels_xml if labels_xml is not None else path
            raise DataFormatError(src, f"{len(missing)} label(s) not declared in {path.name}: "
                                       f"{', '.join(map(repr, missing[:5]))}")
        # the XML identifies the label attributes; their order is the ARFF's (Mulan's yeast.xml
        # lists Class4..Class11 in another order than the ARFF declares them)
        label_idx = sorted(index[n] for n in label_names)
        label_names = [names[i] for i in label_idx]
    else:
        c = _meka_label_count(relation)
        if c is None:
            raise DataFormatError(path, "cannot tell which attributes are labels: give the Mulan label XML "
                                        "(labels_xml / --labels-xml) or use a MEKA '-C n' @relation")
        if c == 0 or abs(c) >= len(attrs):
            raise DataFormatError(path, f"MEKA header -C {c} is not compatible with {len(attrs)} attributes")
        label_idx = list(range(c)) if c > 0 else list(range(len(attrs) + c, len(attrs)))
        label_names = [names[i] for i in label_idx]
    for i in label_idx:
        a = attrs[i]
        if a.kind == "nominal" and not set(a.values) <= {"0", "1"}:
            raise DataFormatError(path, f"label attribute {a.name!r} must be {{0,1}}, declared as {{{','.join(a.values)}}}",
                                  line=a.line)
        if a.kind not in ("nominal", "numeric"):
            raise DataFormatError(path, f"label attribute {a.name!r} has type {a.kind}; expected {{0,1}}", line=a.line)
    return label_idx, label_names


def _feature_columns(path: Path, attrs: list[_Attribute], label_set: set, max_categories: int) -> _FeatureColumns:
    """The feature columns of the attributes that are not labels: numeric ones and nominal
    ones of numbers as numbers, other nominal ones one-hot; identifier-like nominal ones
    (more than ``max_categories`` values), strings and dates dropped.  No feature left is an error."""
    dropped: list[str] = []
    feature_cols: list[tuple[int, str, dict[str, int] | None]] = []  # (attr index, kind, category->offset)
    allowed_numbers: dict[int, set[float]] = {}  # nominal attributes read as numbers: their declared values
    feature_names: list[str] = []
    for i, a in enumerate(attrs):
        if i in label_set:
            continue
        if a.kind == "numeric":
            feature_cols.append((i, "num", None))
            feature_names.append(a.name)
        elif a.kind == "nominal":
            if all(_is_number(v) for v in a.values):
                feature_cols.append((i, "num", None))
                feature_names.append(a.name)
                allowed_numbers[i] = {float(v) for v in a.values}
            elif len(a.values) > max_categories:
                dropped.append(a.name)
            else:
                feature_cols.append((i, "onehot", {v: k for k, v in enumerate(a.values)}))
                feature_names.extend(f"{a.name}={v}" for v in a.values)
        else:
            dropped.append(a.name)
    col_offset = {}
    off = 0
    for i, kind, cats in feature_cols:
        col_offset[i] = off
        off += 1 if kind == "num" else len(cats)
    if off == 0:
        raise DataFormatError(path, "no feature attributes: every attribute is a label"
                                    + (f" or was dropped ({', '.join(dropped[:5])})" if dropped else "")
                                    + "; expected at least one numeric or nominal feature")
    return _FeatureColumns({i: (kind, cats) for i, kind, cats in feature_cols}, col_offset, allowed_numbers,
                           feature_names, dropped, off)


def _row_items(path: Path, s: str, ln: int, feats: _FeatureColumns, x: np.ndarray, n_attr: int):
    """A data row's ``(attribute index, value)`` items: every value of a dense row, the
    entries of a sparse ``{index value, ...}`` row (whose absent one-hot features with a
    ``'0'`` category are set in ``x``)."""
    if s.startswith("{"):
        if not s.endswith("}"):
            raise DataFormatError(path, "sparse row without closing '}'", line=ln)
        body = s[1:-1].strip()
        pairs = []
        if body:
            for item in _split_values(body):
                parts = item.split(None, 1)
                if len(parts) != 2 or not parts[0].isdigit():
                    raise DataFormatError(path, f"sparse entry {item!r}; expected '<index> <value>'", line=ln)
                pairs.append((int(parts[0]), parts[1].strip().strip("'\"")))
        # absent sparse entries are 0: one-hot nominal features with a '0' category need it set
        present = {k for k, _ in pairs}
        for i, (kind, cats) in feats.kind.items():
            if kind == "onehot" and i not in present and "0" in cats:
                x[feats.offset[i] + cats["0"]] = 1.0
        return pairs
    vals = _split_values(s)
    if len(vals) != n_attr:
        raise DataFormatError(path, f"row has {len(vals)} values; expected {n_attr} (one per @attribute)", line=ln)
    return list(enumerate(vals))


def _parse_row(path: Path, s: str, ln: int, attrs: list[_Attribute], feats: _FeatureColumns, label_pos: dict,
               n_labels: int):
    """One data row (dense or sparse) as ``(features float64, labels bool)``; a label not
    0/1, a missing or undeclared feature value and a non-finite one are errors naming the line."""
    n_attr = len(attrs)
    x = np.zeros(feats.width, dtype=np.float64)
    y = np.zeros(n_labels, dtype=bool)
    for k, v in _row_items(path, s, ln, feats, x, n_attr):
        if k >= n_attr:
            raise DataFormatError(path, f"attribute index {k} out of range (0..{n_attr - 1})", line=ln)
        if k in label_pos:
            if v not in ("0", "1", "0.0", "1.0"):
                raise DataFormatError(path, f"label {attrs[k].name!r} has value {v!r}; expected 0 or 1", line=ln)
            y[label_pos[k]] = v.startswith("1")
        elif k in feats.kind:
            kind, cats = feats.kind[k]
            if v == "?":
                raise DataFormatError(path, f"missing value '?' for feature {attrs[k].name!r}; "
                                            "impute it before training", line=ln)
            col = feats.offset[k]
            if kind == "num":
                try:
                    x[col] = float(v)
                except ValueError:
                    raise DataFormatError(path, f"feature {attrs[k].name!r} has value {v!r}; expected a number",
                                          line=ln) from None
                if k in feats.numbers and x[col] not in feats.numbers[k]:
                    raise DataFormatError(path, f"nominal feature {attrs[k].name!r} has value {v!r}; expected one "
                                                f"of its declared values {{{','.join(attrs[k].values)}}}", line=ln)
            else:
                if v not in cats:
                    raise DataFormatError(path, f"feature {attrs[k].name!r} has value {v!r}; expected one of "
                                                f"{{{','.join(cats)}}}", line=ln)
                if "0" in cats:
                    x[col + cats["0"]] = 0.0
                x[col + cats[v]] = 1.0
    if not np.isfinite(x).all():
        raise DataFormatError(path, "non-finite feature value (NaN or inf)", line=ln)
    return x, y


def _features_float32(path: Path, X_rows: list[np.ndarray], feature_names: list[str], row_lines: list[int]):
    """The rows' features as one float32 matrix; a value beyond float32's range is an error
    naming its feature and line (without a RuntimeWarning first)."""
    X64 = np.asarray(X_rows, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, without a RuntimeWarning
        X = X64.astype(np.float32)
    if not np.isfinite(X).all():
        r, c = (int(i) for i in np.argwhere(~np.isfinite(X))[0])
        raise DataFormatError(path, f"feature {feature_names[c]!r} has value {float(X64[r, c])!r}, which overflows "
                                    f"float32 (largest magnitude {float(np.finfo(np.float32).max):.4g}); rescale it",
                              line=row_lines[r])
    return X


def _read_lines(path: Path) -> list[str]:
    """The file's lines, decoded as UTF-8 (a byte that is not UTF-8 is an error naming its line)."""
    raw = read_bytes(path)  # (the reader rule: a regular file within the read budget)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise not_utf8_error(path, raw, exc) from None
    return text.splitlines()


def not_utf8_error(path: Path, raw: bytes, exc: UnicodeDecodeError) -> DataFormatError:
    """The one-line error for a file that is not valid UTF-8 (``exc`` from decoding all of ``raw``)."""
    line = len(re.findall(rb"\r\n|\r|\n", raw[:exc.start])) + 1
    return DataFormatError(path, f"byte 0x{raw[exc.start]:02x} is not valid UTF-8 text; expected a UTF-8 encoded "
                                 "file (re-save it as UTF-8, e.g. iconv -f latin1 -t utf-8)", line=line)


def _is_number(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False
