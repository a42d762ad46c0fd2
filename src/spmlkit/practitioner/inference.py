"""Prediction inputs and outputs for ``spml predict``.

Inputs
------
* a prepared bundle folder: the features of one split (the model's feature set);
* feature vectors: ``.npy``, ``.npz`` (key ``X``) or a CSV/TSV whose columns are all
  features except an optional ``id`` column;
* **images** (for a model whose ``input.kind`` is ``"images"``): a folder (every image
  file below it, sorted), a ``.txt`` list of paths (one per line) or a CSV/TSV with a
  path column (``--path-column``, default ``path``).  Relative paths are read from the
  list's folder.  Features are extracted with the backbone recorded in the model.

Image feature extraction — the interface with the images extension
-------------------------------------------------------------------
``spmlkit.features.extract_image_features(paths, *, backbone, image_size, weights=None,
batch_size=32, **options)`` must return an ``(N, D)`` float32 array of pooled features,
row ``i`` for ``paths[i]``, computed exactly as ``spml features`` computed the bundle's
cache (same backbone, weights, resize and normalisation, eval mode).  (The bundle-level
``spmlkit.features.extract_features(bundle, ...)`` behind ``spml features`` writes the
cache; this is its per-file counterpart.)  Arguments come from the model's ``input``:
``backbone``, ``image_size``, ``weights`` (the backbone weights file the cache was made
with, recorded in ``features/<name>/meta.json``; for a fine-tuned backbone the file
``input["backbone_weights"]`` inside the model folder instead) and
``input["extractor_options"]``.  When the images extension is not installed,
predicting from images raises a clear :class:`~spmlkit.errors.SpmlError` (features can
still be given directly).

Outputs (written atomically, streamed: rows are scored in chunks, memory O(chunk x L))
--------------------------------------------------------------------------------------
* probabilities: ``id,<label 1>,<label 2>,...`` — one row per example; or, for large
  outputs, ``.npy``: a float32 ``(N, L)`` matrix written chunk by chunk (a CSV is
  refused above :data:`CSV_MAX_VALUES` probabilities with a message saying so);
* label sets: ``id,labels`` with the labels of the set joined by ``;`` (the model's rule
  applied chunk by chunk: every rule decides each row on its own);
* top k: ``id,labels,probabilities``, the k best labels of each row, best first, by
  partial selection (:func:`top_k_indices`).

Rows with places (a covariate table with ``x``, ``y`` columns, a bundle of located
records) have ``x,y`` after ``id``.

An existing output file is replaced only when it is such a file (or with ``--overwrite``),
never when it is the input: :func:`check_prediction_output`.
"""
from __future__ import annotations

import contextlib
import csv
import gzip
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
from scipy.special import expit

from .. import ownership
from ..data import Bundle
from ..data.dataset import check_features
from ..data.encoding import is_raw_layout, read_covariate_table
from ..data.formats.tabular import read_feature_table
from ..errors import ConfigError, DataFormatError, SpmlError
from ..io import load_numpy, npz_array
from ..reading import open_text
from ..ownership import is_checked_file, write_output_file

from ..features.transforms import IMAGE_SUFFIXES as IMAGE_EXTENSIONS  # noqa: E402  (one list of suffixes)
from ..progress import progress as progress_bar
from .labelsets import (apply_rule_to_logits, format_label_sets, label_set_stats_warning, label_set_warning,
                        model_rule_spec, rule_k_estimate, top_labels_from_logits)
from .report import describe_rule
PATH_COLUMN = "path"


# ------------------------------------------------------------------- extraction
EXTRACTOR = "extract_image_features"


def feature_extractor() -> Callable:
    """``spmlkit.features.extract_image_features`` (provided by the images extension)."""
    try:
        # lazy: optional dependency
        from .. import features  # noqa: WPS433 - optional extension
        fn = getattr(features, EXTRACTOR)
    except (ImportError, AttributeError) as exc:
        raise SpmlError(f"predicting from image files needs spmlkit.features.{EXTRACTOR} (the images extension "
                        f"that provides 'spml features'); it is not available here ({exc}). Extract features "
                        "yourself and pass them as .npy/.npz/CSV instead") from None
    return fn


def image_features(model, paths: list[str], *, backbone: str | None = None, image_size: int | None = None,
                   batch_size: int | None = None, extractor: Callable | None = None) -> np.ndarray:
    """Features of image files for ``model`` (whose ``input`` records how its training
    features were made); ``backbone`` / ``image_size`` override the recorded values."""
    inp = dict(getattr(model, "input", None) or {})
    if inp.get("kind") != "images" and backbone is None:
        raise ConfigError("this model was trained on feature vectors, not images: give features "
                          "(.npy / .npz / CSV), or pass --backbone to extract image features anyway")
    backbone = backbone or inp.get("backbone")
    image_size = image_size or inp.get("image_size")
    if backbone is None:
        raise ConfigError(f"the model does not record which backbone made its features (feature set "
                          f"{inp.get('feature_set')!r}); pass --backbone (and --image-size)")
    options = dict(inp.get("extractor_options") or {})
    if inp.get("weights"):  # the backbone weights file the training features were made with
        options["weights"] = inp["weights"]
    if inp.get("backbone_weights"):
        if getattr(model, "path", None) is None:
            raise ConfigError("the model's fine-tuned backbone weights are stored next to it; load it from its folder")
        options["weights"] = str(Path(model.path) / inp["backbone_weights"])
    if batch_size is not None:
        options["batch_size"] = batch_size
    if str(getattr(model, "device", "cpu")) != "cpu":  # spml predict --device
        options["device"] = getattr(model, "device")
    extract = extractor or feature_extractor()
    X = np.asarray(extract(list(paths), backbone=backbone, image_size=image_size, **options), dtype=np.float32)
    if X.ndim != 2 or len(X) != len(paths):
        raise SpmlError(f"the feature extractor returned shape {X.shape} for {len(paths)} image(s)")
    return X


# ----------------------------------------------------------------------- inputs
def list_images(source: str | Path, *, path_column: str | None = None, id_column: str | None = None,
                check_files: bool = True) -> tuple[list[str], list[str]]:
    """Image paths and ids from a folder, a ``.txt`` list or a CSV/TSV with a path column."""
    source = Path(source)
    if source.is_dir():
        paths = sorted(p for p in source.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS)
        if not paths:
            raise DataFormatError(source, f"no image files ({', '.join(IMAGE_EXTENSIONS)}) in this folder")
        return [str(p.resolve()) for p in paths], [str(p.relative_to(source)) for p in paths]
    if not source.exists():
        raise DataFormatError(source, "file or folder not found")
    root = source.parent.resolve()
    text = source.read_text(encoding="utf-8-sig", errors="replace")
    if source.suffix.lower() == ".txt":
        rows = [(i + 1, line.strip()) for i, line in enumerate(text.splitlines()) if line.strip()]
        ids = [p for _, p in rows]
        lines = [i for i, _ in rows]
    else:
        delim = "\t" if source.suffix.lower() in (".tsv", ".tab") else ","
        table = list(csv.reader(text.splitlines(), delimiter=delim))
        if not table:
            raise DataFormatError(source, "empty file; expected a header row")
        header = [h.strip() for h in table[0]]
        col_name = path_column or PATH_COLUMN
        if col_name not in header:
            raise DataFormatError(source, f"no image path column {col_name!r} in the header {header[:8]}; "
                                          "name it with --path-column", line=1)
        col = header.index(col_name)
        id_col = header.index(id_column) if id_column and id_column in header else None
        if id_column and id_col is None:
            raise DataFormatError(source, f"id column {id_column!r} is not in the header", line=1)
        body = [(i + 2, r) for i, r in enumerate(table[1:]) if any(c.strip() for c in r)]
        for line, r in body:
            if len(r) <= col or not r[col].strip():
                raise DataFormatError(source, f"empty image path in column {col_name!r}", line=line)
        ids = [r[id_col].strip() if id_col is not None else r[col].strip() for _, r in body]
        rows = [(line, r[col].strip()) for line, r in body]
        lines = [line for line, _ in body]
    paths = []
    for line, (_, p) in zip(lines, rows):
        full = Path(p) if Path(p).is_absolute() else root / p
        if check_files and not full.is_file():
            raise DataFormatError(source, f"image file {p!r} not found (looked for {full})", line=line)
        paths.append(str(full))
    if not paths:
        raise DataFormatError(source, "no image paths listed")
    return paths, ids


def read_features(path: str | Path, *, columns: list[str] | None = None,
                  id_column: str | None = None) -> tuple[np.ndarray, list[str] | None]:
    """Features for prediction from .npy, .npz (key X) or a CSV/TSV whose columns are all
    features except an identifier column (``id_column``, default an optional 'id'; with
    ``columns``, the model's feature names, matched by name; see
    :func:`spmlkit.data.formats.tabular.read_feature_table`)."""
    p = Path(path)
    if not p.exists():
        raise DataFormatError(p, "file not found")

    if p.suffix == ".npy":
        return check_features(load_numpy(p), p), None
    if p.suffix == ".npz":
        arc = load_numpy(p)
        key = next((k for k in ("X", "features", "X_test") if k in arc.files), None)
        if key is None:
            raise DataFormatError(p, f"no 'X' array; found {arc.files}")
        return check_features(npz_array(arc, key, p), p), None
    if id_column:
        return read_feature_table(p, columns=columns, id_column=id_column, require_id=True)
    return read_feature_table(p, columns=columns)


def _csv_header(path: Path) -> list[str]:
    with open_text(path, errors="replace") as fh:  # a regular file only (a FIFO is refused, not waited on)
        first = fh.readline()
    delim = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    return [h.strip() for h in next(csv.reader([first], delimiter=delim), [])]


@dataclass
class PredictionInput:
    """What to predict: features ``X`` (or image paths for a fine-tuned model), one id per
    row, and the rows' places ``xy`` ``(N, 2)`` when the input has them (``x``/``y``
    columns of a covariate table, a bundle prepared from located records) — the ids and
    places are written beside the predictions."""

    X: object
    ids: list[str]
    xy: np.ndarray | None = None


def read_prediction_input(model, source: str | Path, **options) -> tuple[np.ndarray, list[str]]:
    """``(X, ids)`` for ``model`` from any accepted input (see :func:`prediction_input`)."""
    inp = prediction_input(model, source, **options)
    return inp.X, inp.ids


def prediction_input(model, source: str | Path, *, split: str = "test", path_column: str | None = None,
                     id_column: str | None = None, backbone: str | None = None, image_size: int | None = None,
                     batch_size: int | None = None, extractor: Callable | None = None,
                     log: Callable[[str], None] | None = None) -> PredictionInput:
    """:class:`PredictionInput` for ``model`` from any accepted input (module docstring).

    A CSV/TSV of features is matched to the model **by column name** when the model
    records its feature names (``model.json["input"]["feature_names"]``: bundles prepared
    from named columns, estimators fitted on a DataFrame); a model saved without them
    (older models, or trained on unnamed arrays) takes the columns by position, and
    ``log`` hears a note saying so.  A model that records its **covariate encoding**
    (trained on a presence-only table or on rasters) also takes the table in
    its raw training layout — covariates by name, categorical ones as their levels
    (:func:`spmlkit.data.encoding.read_covariate_table`); ``siteid`` (or ``id``, or
    ``id_column``) and ``x``, ``y`` pass through.  A bundle's ids and places (stored by
    ``spml prepare`` when its source had them) pass through too."""
    names = (getattr(model, "input", None) or {}).get("feature_names")

    source = Path(source)
    images = False
    fine_tuned = getattr(model, "image", None) is not None  # the whole network: it takes image files
    if (source / "meta.json").exists():
        bundle = Bundle(source)
        ids = bundle.ids(split) or [str(i) for i in bundle.index(split)]
        if fine_tuned:
            return PredictionInput(bundle.paths(split), ids)
        fs = (model.input or {}).get("feature_set") or model.info.get("feature_set")
        theirs = bundle.meta.get("feature_names")
        if names is not None and fs is None and isinstance(theirs, list) and list(theirs) != list(names):
            raise DataFormatError(source / "meta.json", "the bundle's feature columns differ from the model's "
                                  "(names or order); predict from a bundle prepared like the training one")
        X = bundle.features(split, fs)
        return PredictionInput(X, ids, bundle.xy(split))
    if source.is_dir():
        images = True
    elif source.suffix.lower() == ".txt":
        images = True
    elif source.suffix.lower() in (".csv", ".tsv", ".tab") and source.exists():
        header = _csv_header(source)
        images = path_column is not None or ((model.input or {}).get("kind") == "images" and PATH_COLUMN in header)
        enc = None if images else model.encoding if hasattr(model, "encoding") else None
        if enc is not None:
            if is_raw_layout(header, enc):
                table = read_covariate_table(source, enc, id_column=id_column)
                X = enc.transform(table.X, unseen="raise", source=source, lines=table.lines)
                return PredictionInput(X, table.ids or [str(i) for i in range(len(X))], table.xy)
    if images or fine_tuned:
        paths, ids = list_images(source, path_column=path_column, id_column=id_column)
        if fine_tuned:
            return PredictionInput(paths, ids)
        X = image_features(model, paths, backbone=backbone, image_size=image_size, batch_size=batch_size,
                           extractor=extractor)
        return PredictionInput(X, ids)
    if names is None and source.suffix.lower() not in (".npy", ".npz") and log is not None:
        log(f"note: the model records no feature names (saved before feature names were stored, or trained on "
            f"unnamed arrays): the columns of {source} are taken by position")
    X, ids = read_features(source, columns=names, id_column=id_column)
    want = getattr(model, "n_features", None)
    if isinstance(want, int) and X.shape[1] != want:  # named here: the model's own check has no file name
        raise DataFormatError(source, f"features have shape {X.shape}; this model expects (N, {want}) (the "
                                      f"{want} features it was trained on)")
    return PredictionInput(X, ids or [str(i) for i in range(len(X))])


# ---------------------------------------------------------------------- outputs
#: ``spml predict --proba`` writes a CSV only up to this many probabilities (rows x
#: labels, about 9 bytes of text each: ~450 MB); above it, ``-o FILE.npy`` (a binary
#: float32 matrix written chunk by chunk)
CSV_MAX_VALUES = 50_000_000
#: rows x labels of one prediction chunk (memory: 8 bytes each while scored in float64)
CHUNK_VALUES = 1 << 22
#: rows per chunk at most (the block size of :meth:`SavedModel.decision_function`, so a
#: chunked prediction computes exactly the blocks a whole one did)
CHUNK_ROWS = 8192


def chunk_rows(n_labels: int, *, values: int = CHUNK_VALUES) -> int:
    """Rows per prediction chunk for ``n_labels`` labels: memory O(chunk x L), never N x L.

    >>> chunk_rows(20), chunk_rows(50_000)
    (8192, 83)
    """
    return int(max(1, min(CHUNK_ROWS, values // max(int(n_labels), 1))))


def check_prediction_output(out: str | Path, *, label_names: list[str], source: str | Path | None = None,
                            overwrite: bool = False, option: str = "-o/--out", model: str | Path | None = None) -> Path:
    """``out`` as the file ``spml predict`` writes (:func:`spmlkit.ownership.output_file`):
    refused (one-line :class:`~spmlkit.errors.ConfigError`, before anything is read or
    written) when it is a folder or a symbolic link; when it is, or lies inside, an input —
    the input data (``source``) or the model folder read (``model``), compared by device and
    inode — even with ``overwrite``; or when it is an existing file that spmlkit's record
    beside it (``.NAME.spml-file``) does not name as one it wrote — whatever its content
    looks like — unless ``overwrite``.  Re-running a prediction into the same file therefore
    works, and a user's data file is never replaced by accident.  (``label_names`` is kept
    for callers; the check no longer reads the file.)"""
    return ownership.output_file(out, inputs=[source, model], overwrite=overwrite, option=option,
                                 what="prediction file")


def used_rule(model, *, rule: str | None = None, threshold: float | None = None, k: float | None = None,
              min_labels: int | None = None) -> dict:
    """The label-set rule ``model`` applies with these overrides: its stored spec updated
    by the given ``rule`` / ``threshold`` / ``k`` / ``min_labels``."""
    return {**model.label_sets, **({"rule": rule} if rule else {}),
            **{name: v for name, v in (("threshold", threshold), ("k", k), ("min_labels", min_labels))
               if v is not None}}


def rule_warning_k(model, used: dict, k: float | None) -> float | None:
    """The expected number of labels a label-set warning compares with: the ``k`` given
    for ``expected_k``, else the model's estimate."""
    return rule_k_estimate(model.label_sets) if used["rule"] != "expected_k" or k is None else k


def predicted_label_sets(model, P: np.ndarray, *, rule: str | None = None, threshold: float | None = None,
                         k: float | None = None, min_labels: int | None = None) -> tuple[np.ndarray, dict, str | None]:
    """Label sets of probabilities ``P`` by ``model``'s rule (``rule`` and the given
    ``threshold`` / ``k`` / ``min_labels`` override it): ``(S, used, warning)``, with
    ``used`` the rule's spec as applied (the model's, updated by the overrides) and
    ``warning`` a one-line warning when the sets look wrong for the expected number of
    labels (:func:`spmlkit.practitioner.labelsets.label_set_warning`: the ``k`` given
    for ``expected_k``, else the model's estimate), or None."""
    S = model.label_sets_from_proba(P, rule=rule, threshold=threshold, k=k, min_labels=min_labels)
    used = used_rule(model, rule=rule, threshold=threshold, k=k, min_labels=min_labels)
    return S, used, label_set_warning(S, rule_warning_k(model, used, k))


def iter_probabilities(model, X, *, rows: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """``(start, P)`` for consecutive chunks of ``rows`` rows of ``X`` (default
    :func:`chunk_rows`): per-label probabilities in float64, the values
    :meth:`SavedModel.predict_proba` gives, without ever holding all N x L of them.
    Image paths (a fine-tuned model) are scored in one piece."""
    if isinstance(X, (list, tuple)):
        yield 0, model.predict_proba(X)
        return
    rows = rows or chunk_rows(len(model.label_names))
    for s, logits in model.iter_decision_function(X, rows):
        yield s, expit(logits.astype(np.float64))


def iter_logits(model, X, *, rows: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """``(start, logits)``: the float32 logits behind :func:`iter_probabilities`' chunks
    (the label-set and top-k outputs work on them: no float64 block).  Image paths (a
    fine-tuned model) are scored in one piece."""
    if isinstance(X, (list, tuple)):
        yield 0, np.asarray(model.decision_function(X), dtype=np.float32)
        return
    rows = rows or chunk_rows(len(model.label_names))
    yield from model.iter_decision_function(X, rows)


def top_k_indices(P: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` highest-scoring labels of each row of ``P`` ``(n, L)``, best first
    (ties: the lower label index first, as a stable sort would give), by partial
    selection — O(L) per row, not a full sort.

    >>> top_k_indices(np.array([[0.1, 0.9, 0.5, 0.9]], np.float32), 3).tolist()
    [[1, 3, 2]]
    """
    n, L = P.shape
    k = int(min(max(k, 0), L))
    if k == 0 or n == 0:
        return np.zeros((n, k), dtype=np.int64)
    idx = np.argpartition(-P, k - 1, axis=1)[:, :k] if k < L else np.tile(np.arange(L), (n, 1))
    vals = np.take_along_axis(P, idx, 1)
    kth = vals.min(1)
    # rows whose k-th score is tied with a label left out: which tied label argpartition
    # kept is arbitrary, so those (rare) rows take the stable rule exactly
    tied = np.flatnonzero((P >= kth[:, None]).sum(1) > k)
    for r in tied:
        idx[r] = np.argsort(-P[r], kind="stable")[:k]
    vals = np.take_along_axis(P, idx, 1)
    order = np.lexsort((idx, -vals), axis=1)
    return np.take_along_axis(idx, order, 1)


def _csv_field(v: str) -> str:
    """``v`` as one CSV field (quoted as :mod:`csv` does by default: when it holds a comma,
    a quote or a line break)."""
    v = str(v)
    if any(c in v for c in ',"\r\n'):
        return '"' + v.replace('"', '""') + '"'
    return v


def _prefixes(ids, xy, start: int, n: int) -> list[str]:
    """The leading fields of rows ``start .. start + n``: the id, and ``x,y`` when known."""
    pre = [_csv_field(i) for i in ids[start:start + n]]
    if xy is not None:
        pre = [f"{p},{x:.12g},{y:.12g}" for p, (x, y) in zip(pre, xy[start:start + n].tolist())]
    return pre


def _lead(xy) -> list[str]:
    return ["id"] if xy is None else ["id", "x", "y"]


@contextlib.contextmanager
def _text_output(tmp, out: Path):
    """The temporary file ``tmp`` of the output ``out``, opened for UTF-8 text: gzip-compressed
    when ``out``'s name ends in ``.gz`` (no name and no time stamp in the gzip header, so the
    same predictions give the same bytes), plain otherwise."""
    if out.suffix.lower() != ".gz":
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            yield fh
        return
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
            io.TextIOWrapper(gz, encoding="utf-8", newline="") as fh:
        yield fh


def write_probability_chunks(out: str | Path, ids: list[str], label_names: list[str], chunks, *,
                             n_rows: int | None = None, xy: np.ndarray | None = None, progress=None) -> Path:
    """Write the probabilities of ``chunks`` (``(start, P)`` pairs, as
    :func:`iter_probabilities` yields them) to ``out``, atomically: a ``.npy`` file is a
    float32 ``(N, L)`` matrix written chunk by chunk (its header, then the rows appended;
    rows in the input's order, columns in the model's label order); anything else is a CSV
    ``id[,x,y],<label 1>,...`` with each value as ``%.6g``, formatted one row per call
    (not one call per value)."""
    out = Path(out)
    L = len(label_names)
    n_rows = len(ids) if n_rows is None else n_rows
    if not is_checked_file(out):  # (spml predict checks it before reading anything)
        check_prediction_output(out, label_names=label_names)
    with write_output_file(out) as tmp:
        if out.suffix.lower() == ".npy":
            # the .npy header, then each chunk's rows appended in order (C order): the file is
            # written incrementally, and nothing N x L is held — not even as mapped pages, which
            # a memory map would count in the process's resident memory until written back
            with open(tmp, "wb") as fh:
                np.lib.format.write_array_header_1_0(fh, {"descr": np.lib.format.dtype_to_descr(np.dtype("<f4")),
                                                          "fortran_order": False, "shape": (n_rows, L)})
                written = 0
                for s, P in chunks:
                    if s != written:
                        raise ValueError(f"chunks out of order: row {s} after {written} rows")
                    fh.write(np.ascontiguousarray(P, dtype="<f4").tobytes())
                    written += len(P)
                    if progress is not None:
                        progress.update(len(P))
                if written != n_rows:
                    raise ValueError(f"{written} rows predicted, {n_rows} expected")
            return out
        fmt = "%s" + ",%.6g" * L + "\n"
        with _text_output(tmp, out) as fh:
            fh.write(",".join(_csv_field(h) for h in [*_lead(xy), *label_names]) + "\n")
            for s, P in chunks:
                pre = _prefixes(ids, xy, s, len(P))
                for p, row in zip(pre, P):  # one format call per row; no chunk-sized list of Python floats
                    fh.write(fmt % (p, *row.tolist()))
                if progress is not None:
                    progress.update(len(P))
    return out


def write_probabilities(out: str | Path, ids: list[str], label_names: list[str], P: np.ndarray, *,
                        xy: np.ndarray | None = None) -> Path:
    """:func:`write_probability_chunks` of one matrix ``P`` ``(N, L)``."""
    return write_probability_chunks(out, ids, label_names, [(0, np.asarray(P))], n_rows=len(P), xy=xy)


def write_label_set_chunks(out: str | Path, ids: list[str], label_names: list[str], chunks, *,
                           xy: np.ndarray | None = None, separator: str = ";", progress=None) -> Path:
    """Write label sets of ``chunks`` (``(start, S)`` pairs, ``S`` ``(n, L)`` bool) as a
    CSV ``id[,x,y],labels`` (the labels of each set joined by ``separator``)."""
    out = Path(out)
    if not is_checked_file(out):  # (spml predict checks it before reading anything)
        check_prediction_output(out, label_names=label_names)
    with write_output_file(out) as tmp:
        with _text_output(tmp, out) as fh:
            fh.write(",".join([*_lead(xy), "labels"]) + "\n")
            for s, S in chunks:
                pre = _prefixes(ids, xy, s, len(S))
                sets = format_label_sets(S, label_names, separator=separator)
                fh.write("".join(f"{p},{_csv_field(t)}\n" for p, t in zip(pre, sets)))
                if progress is not None:
                    progress.update(len(S))
    return out


def write_label_sets(out: str | Path, ids: list[str], label_names: list[str], S: np.ndarray, *,
                     separator: str = ";", xy: np.ndarray | None = None) -> Path:
    """:func:`write_label_set_chunks` of one matrix ``S``."""
    return write_label_set_chunks(out, ids, label_names, [(0, np.asarray(S, dtype=bool))], xy=xy,
                                  separator=separator)


def write_top_k_chunks(out: str | Path, ids: list[str], label_names: list[str], chunks, k: int, *,
                       xy: np.ndarray | None = None, separator: str = ";", progress=None,
                       logits: bool = False) -> Path:
    """The ``k`` highest-scoring labels of each row, best first, and their probabilities
    (:func:`top_k_indices` on float32 scores), as a CSV ``id[,x,y],labels,probabilities``
    — O(L) per row by partial selection, no full sort.  ``logits``: the chunks hold float32
    logits; the same labels and values are found on them
    (:func:`~spmlkit.practitioner.labelsets.top_labels_from_logits`, then the k
    probabilities alone), without a float64 block."""
    out = Path(out)
    names = np.asarray(label_names, dtype=object)
    if not is_checked_file(out):  # (spml predict checks it before reading anything)
        check_prediction_output(out, label_names=label_names)
    with write_output_file(out) as tmp:
        with _text_output(tmp, out) as fh:
            fh.write(",".join([*_lead(xy), "labels", "probabilities"]) + "\n")
            for s, P in chunks:
                if logits:
                    idx = top_labels_from_logits(P, k)
                    vals = expit(np.take_along_axis(P, idx, 1).astype(np.float64))
                else:
                    idx = top_k_indices(np.asarray(P, dtype=np.float32), k)
                    vals = np.take_along_axis(P, idx, 1)
                pre = _prefixes(ids, xy, s, len(P))
                fmt = separator.join(["%.6g"] * idx.shape[1])
                fh.write("".join(f"{p},{_csv_field(separator.join(names[i]))},{fmt % tuple(v)}\n"
                                 for p, i, v in zip(pre, idx, vals.tolist())))
                if progress is not None:
                    progress.update(len(P))
    return out


def predict_to_file(model, inp: PredictionInput, out: str | Path, *, kind: str = "proba", rule: str | None = None,
                    threshold: float | None = None, k: float | None = None, min_labels: int | None = None,
                    top_k: int | None = None, rows: int | None = None) -> dict:
    """``spml predict``: score ``inp`` with ``model`` chunk by chunk and write ``kind``
    (``"proba"``, ``"labels"`` or ``"top_k"``) to ``out``.  Memory is O(chunk x L): no
    N x L array is ever held (a ``.npy`` output is appended chunk by chunk).  Returns
    ``{"message", "warning", ...}`` (``warning``: the label-set warning of
    :func:`spmlkit.practitioner.labelsets.label_set_stats_warning`, or None)."""
    out = Path(out)
    N, L = len(inp.X), len(model.label_names)
    npy = out.suffix.lower() == ".npy"
    if kind != "proba" and npy:
        raise ConfigError(f"-o {out}: label sets and top-k labels are written as CSV; .npy is for --proba")
    if kind == "proba" and not npy and N * L > CSV_MAX_VALUES:
        raise ConfigError(f"{N} rows x {L} labels = {N * L:,} probabilities is too many for a CSV (the limit is "
                          f"{CSV_MAX_VALUES:,}, about {CSV_MAX_VALUES * 9 // 10**6} MB of text); write them as a binary "
                          f"matrix with -o {out.with_suffix('.npy')} (float32, rows in the input's order), or ask "
                          "for --labels or --top-k")
    used = used_rule(model, rule=rule, threshold=threshold, k=k, min_labels=min_labels)
    if kind == "labels" and used.get("per") == "batch":  # a rule over the whole collection: one piece
        rows = max(N, 1)
    chunks = iter_probabilities(model, inp.X, rows=rows) if kind == "proba" else iter_logits(model, inp.X, rows=rows)
    big = N * L >= 10_000_000
    bar = progress_bar(N, f"predict {N} rows x {L} labels", "row", disable=None if big else True)
    try:
        if kind == "proba":
            write_probability_chunks(out, inp.ids, model.label_names, chunks, n_rows=N, xy=inp.xy, progress=bar)
            what = "probabilities" + (" (float32 .npy, rows in the input's order, columns in model.json's "
                                      "label_names order)" if npy else "")
            return {"message": f"wrote {what} for {N} example(s) x {L} labels to {out}", "warning": None}
        if kind == "top_k":
            write_top_k_chunks(out, inp.ids, model.label_names, chunks, int(top_k), xy=inp.xy, progress=bar,
                               logits=True)
            return {"message": f"wrote the top {min(int(top_k), L)} labels of {N} example(s) to {out}",
                    "warning": None}
        stats = {"size": 0, "empty": 0}

        spec = model_rule_spec(model, rule)

        def sets():  # on the logits: the sets of their probabilities, without a float64 block
            for s, X in chunks:
                S = apply_rule_to_logits(X, spec, rule=rule, threshold=threshold, k=k, min_labels=min_labels)
                n = S.sum(axis=1)
                stats["size"] += int(n.sum())
                stats["empty"] += int((n == 0).sum())
                yield s, S

        write_label_set_chunks(out, inp.ids, model.label_names, sets(), xy=inp.xy, progress=bar)
    finally:
        bar.close()
    mean = stats["size"] / N if N else 0.0
    warning = label_set_stats_warning(mean, stats["empty"] / N, rule_warning_k(model, used, k)) if N else None
    return {"message": f"wrote label sets for {N} example(s) to {out} (rule: {describe_rule(used['rule'], used)}; "
                       f"{mean:.2f} labels per example)", "warning": warning, "used": used}
