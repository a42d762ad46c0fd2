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

Outputs (written atomically)
----------------------------
* probabilities: ``id,<label 1>,<label 2>,...`` — one row per example;
* label sets: ``id,labels`` with the labels of the set joined by ``;``.

An existing output file is replaced only when it is such a file (or with ``--overwrite``),
never when it is the input: :func:`check_prediction_output`.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ConfigError, DataFormatError, SpmlError
from ..io import atomic_path

from ..features.transforms import IMAGE_SUFFIXES as IMAGE_EXTENSIONS  # noqa: E402  (one list of suffixes)
PATH_COLUMN = "path"


# ------------------------------------------------------------------- extraction
EXTRACTOR = "extract_image_features"


def feature_extractor() -> Callable:
    """``spmlkit.features.extract_image_features`` (provided by the images extension)."""
    try:
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
    from ..data.dataset import check_features
    from ..data.formats.tabular import read_feature_table

    p = Path(path)
    if not p.exists():
        raise DataFormatError(p, "file not found")
    from ..io import load_numpy, npz_array

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
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        first = fh.readline()
    delim = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    return [h.strip() for h in next(csv.reader([first], delimiter=delim), [])]


def read_prediction_input(model, source: str | Path, *, split: str = "test", path_column: str | None = None,
                          id_column: str | None = None, backbone: str | None = None, image_size: int | None = None,
                          batch_size: int | None = None, extractor: Callable | None = None,
                          log: Callable[[str], None] | None = None) -> tuple[np.ndarray, list[str]]:
    """``(X, ids)`` for ``model`` from any accepted input (see module docstring).

    A CSV/TSV of features is matched to the model **by column name** when the model
    records its feature names (``model.json["input"]["feature_names"]``: bundles prepared
    from named columns, estimators fitted on a DataFrame); a model saved without them
    (older models, or trained on unnamed arrays) takes the columns by position, and
    ``log`` hears a note saying so."""
    from ..data import Bundle

    names = (getattr(model, "input", None) or {}).get("feature_names")

    source = Path(source)
    images = False
    fine_tuned = getattr(model, "image", None) is not None  # the whole network: it takes image files
    if (source / "meta.json").exists():
        bundle = Bundle(source)
        if fine_tuned:
            return bundle.paths(split), [str(i) for i in bundle.index(split)]
        fs = (model.input or {}).get("feature_set") or model.info.get("feature_set")
        theirs = bundle.meta.get("feature_names")
        if names is not None and fs is None and isinstance(theirs, list) and list(theirs) != list(names):
            raise DataFormatError(source / "meta.json", "the bundle's feature columns differ from the model's "
                                  "(names or order); predict from a bundle prepared like the training one")
        X = bundle.features(split, fs)
        return X, [str(i) for i in bundle.index(split)]
    if source.is_dir():
        images = True
    elif source.suffix.lower() == ".txt":
        images = True
    elif source.suffix.lower() in (".csv", ".tsv", ".tab") and source.exists():
        header = _csv_header(source)
        images = path_column is not None or ((model.input or {}).get("kind") == "images" and PATH_COLUMN in header)
    if images or fine_tuned:
        paths, ids = list_images(source, path_column=path_column, id_column=id_column)
        if fine_tuned:
            return paths, ids
        X = image_features(model, paths, backbone=backbone, image_size=image_size, batch_size=batch_size,
                           extractor=extractor)
        return X, ids
    if names is None and source.suffix.lower() not in (".npy", ".npz") and log is not None:
        log(f"note: the model records no feature names (saved before feature names were stored, or trained on "
            f"unnamed arrays): the columns of {source} are taken by position")
    X, ids = read_features(source, columns=names, id_column=id_column)
    want = getattr(model, "n_features", None)
    if isinstance(want, int) and X.shape[1] != want:  # named here: the model's own check has no file name
        raise DataFormatError(source, f"features have shape {X.shape}; this model expects (N, {want}) (the "
                                      f"{want} features it was trained on)")
    return X, ids or [str(i) for i in range(len(X))]


# ---------------------------------------------------------------------- outputs
def check_prediction_output(out: str | Path, *, label_names: list[str], source: str | Path | None = None,
                            overwrite: bool = False, option: str = "-o/--out") -> Path:
    """``out`` as the CSV file ``spml predict`` writes: refused (one-line
    :class:`~spmlkit.errors.ConfigError`, before anything is read or written) when it is a
    folder, when it is the input file itself (even with ``overwrite``), or when it is an
    existing file that is not a prediction file spmlkit wrote — one whose first line is
    ``id,labels`` or ``id,<the model's labels>`` — unless ``overwrite``.  Re-running a
    prediction into the same file therefore works, and a user's data file is never replaced
    by accident."""
    from ..errors import ConfigError

    out = Path(out)
    if out.is_dir():
        raise ConfigError(f"-o {out} is a folder; expected the path of the CSV file to write")
    if not out.exists():
        return out
    if source is not None and Path(source).is_file():
        try:
            same = out.samefile(source)
        except OSError:
            same = False
        if same:
            raise ConfigError(f"{option} {out} is the input file; choose another file for the predictions")
    if overwrite:
        return out
    try:
        with open(out, encoding="utf-8", newline="") as fh:
            first = fh.readline(1 << 20)
        header = next(csv.reader([first.rstrip("\r\n")]), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        header = None
    if header in (["id", "labels"], ["id", *label_names]):
        return out
    raise ConfigError(f"refusing to replace {out}: it is not a prediction file spmlkit wrote (its first line is "
                      f"neither 'id,labels' nor 'id,' and the model's labels); choose a new file with {option} "
                      "or pass --overwrite")


def predicted_label_sets(model, P: np.ndarray, *, rule: str | None = None, threshold: float | None = None,
                         k: float | None = None, min_labels: int | None = None) -> tuple[np.ndarray, dict, str | None]:
    """Label sets of probabilities ``P`` by ``model``'s rule (``rule`` and the given
    ``threshold`` / ``k`` / ``min_labels`` override it): ``(S, used, warning)``, with
    ``used`` the rule's spec as applied (the model's, updated by the overrides) and
    ``warning`` a one-line warning when the sets look wrong for the expected number of
    labels (:func:`spmlkit.practitioner.labelsets.label_set_warning`: the ``k`` given
    for ``expected_k``, else the model's estimate), or None."""
    from .labelsets import label_set_warning, rule_k_estimate

    S = model.label_sets_from_proba(P, rule=rule, threshold=threshold, k=k, min_labels=min_labels)
    used = {**model.label_sets, **({"rule": rule} if rule else {}),
            **{name: v for name, v in (("threshold", threshold), ("k", k), ("min_labels", min_labels))
               if v is not None}}
    warning = label_set_warning(S, rule_k_estimate(model.label_sets) if used["rule"] != "expected_k" or k is None
                                else k)
    return S, used, warning


def write_probabilities(out: str | Path, ids: list[str], label_names: list[str], P: np.ndarray) -> Path:
    out = Path(out)
    with atomic_path(out) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(["id", *label_names])
            for i, row in zip(ids, P):
                w.writerow([i, *(f"{v:.6g}" for v in row)])
    return out


def write_label_sets(out: str | Path, ids: list[str], label_names: list[str], S: np.ndarray, *,
                     separator: str = ";") -> Path:
    from .labelsets import format_label_sets

    out = Path(out)
    with atomic_path(out) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(["id", "labels"])
            for i, labels in zip(ids, format_label_sets(S, label_names, separator=separator)):
                w.writerow([i, labels])
    return out
