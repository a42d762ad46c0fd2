"""A practitioner's own data: loading any source (:func:`load_any`), single positives read
as observations, and helpers around observed-only datasets.

A dataset read with ``observed=True`` (``spml prepare --observed``) has observations
``Z`` and no full labels.  The only full labels such a user may have is a small
fully labelled **validation file**; :func:`read_validation_file` reads it in the
training file's format and layout, with the training file's label vocabulary, and
returns it as the ``val`` split (model selection by mAP, per-label thresholds and k
by Cole et al. Eq. A1 then use it).
"""
from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np

from ..errors import ConfigError, DataFormatError
from ..labels import as_observations, positives_per_row
from ..sparse_labels import as_sparse
from .dataset import MultiLabelDataset, Split
from .formats.base import detect_format
from .registry import load_source


def read_validation_file(path: str | Path, train: MultiLabelDataset, *, format: str | None = None,
                         labels_xml: str | None = None, images: str | None = None, **table_options) -> Split:
    """The fully labelled validation file ``path`` as a :class:`Split` whose label
    columns are ``train``'s.

    Tables use the training table's layout.  With a single-label column
    (``label_column``) the same column may hold several names separated by
    ``separator``, and an image may also be listed once per label (rows naming the same
    image are merged); every name must be a training label.  Wide tables and other
    formats may order their label columns differently (they are matched by name) but
    must have the same labels.
    """
    path = Path(path)
    if not path.exists():
        raise DataFormatError(path, "validation file not found")
    fmt = format or detect_format(path)
    opts = dict(table_options)
    if fmt in ("csv", "tsv"):
        if opts.get("label_column") is not None:
            opts["label_set_column"] = opts.pop("label_column")
        if opts.get("label_set_column") is not None:
            opts["label_names"] = list(train.label_names)
    ds = load_source(str(path), format=fmt, labels_xml=labels_xml, images=images, observed=False, **opts)
    split = ds.splits["train"]
    if split.Y is None:
        raise DataFormatError(path, "the validation file must have full labels")
    if ds.label_names != train.label_names:
        missing = [n for n in train.label_names if n not in ds.label_names]
        extra = [n for n in ds.label_names if n not in train.label_names]
        if missing or extra:
            raise DataFormatError(path, f"labels differ from the training file's (missing: {missing[:5]}, "
                                        f"unknown: {extra[:5]})")
        order = np.array([ds.label_names.index(n) for n in train.label_names])
        split = Split(X=split.X, paths=split.paths, Y=split.Y[:, order], ids=split.ids)
    return split


def load_any(source: str, *, data_root=None, format: str | None = None, test: str | None = None,
             labels_xml: str | None = None, images: str | None = None, test_images: str | None = None,
             observed: bool | None = None, name: str | None = None, val_file: str | None = None, log=None,
             **table_options) -> MultiLabelDataset:
    """Load ``source``: a dataset name (see ``spml datasets``) or a file/folder path.

    ``format`` overrides detection; ``test`` names a separate test file (same format);
    ``labels_xml`` is the Mulan label file for ARFF; ``images``/``test_images`` are the
    image folders of a COCO JSON; ``observed`` reads labels as observations (+1/-1/0)
    rather than full labels; ``observed=None`` (default) reads a one-label-per-row table
    (``label_column``) as observations and everything else as full labels (see
    :func:`formats.load_table_dataset`); ``table_options`` go to :func:`formats.read_table`.
    ``log`` receives one-line notes (default: :func:`warnings.warn`).

    **A table whose training rows have exactly one positive each is single-positive data
    until the caller says otherwise**: with ``observed=None`` (the default,
    ``spml prepare`` without ``--observed``/``--full-labels``) its labels are read as
    observed positives — no full labels, so nothing downstream reports a "test mAP" that
    counts every other label as a true negative — and a note says so, naming
    ``--full-labels`` (``observed=False``), which keeps them as complete label sets
    (multi-class data).  See :func:`single_positive_as_observed`.
    ``val_file`` is a small **fully labelled** validation file in the same format and
    layout (see :func:`spmlkit.data.observed.read_validation_file`); it becomes the
    ``val`` split, so no validation data is held out of the training file.
    """
    ds = load_source(source, data_root=data_root, format=format, test=test, labels_xml=labels_xml, images=images,
                     test_images=test_images, observed=observed, name=name, log=log, **table_options)
    if observed is None:  # the caller did not say: one positive per row is single-positive data
        ds = single_positive_as_observed(ds, source, log=log)
        if ds.has_full_labels and any(table_options.get(k) is not None for k in TABLE_LAYOUTS):
            ds = partial_rows_as_observed(ds, source, table_options, log=log)
    if val_file is not None:  # (a fully labelled file by definition: read as full labels)
        ds.splits["val"] = read_validation_file(val_file, ds, format=format, labels_xml=labels_xml,
                                                images=images, **table_options)
        ds.__post_init__()
    return ds


#: the table options that say where a user's labels are (a user's own table, not a named dataset)
TABLE_LAYOUTS = ("label_set_column", "label_columns", "labels_last", "label_column")
#: "one or two names per row against many labels": rows naming at most this many labels ...
PARTIAL_MAX_PER_ROW = 2
#: ... out of at least this many are evidently partial
PARTIAL_MIN_LABELS = 5


def _per_row_evidence(Y) -> tuple[int, int, float]:
    counts = positives_per_row(Y)
    return int(counts.min()), int(counts.max()), float(counts.mean())


def partial_rows_as_observed(ds: MultiLabelDataset, source: str, table_options: dict, *,
                             log=None) -> MultiLabelDataset:
    """The rule every label reader of a user's table follows when the user said neither
    ``--observed`` nor ``--full-labels`` (issue: a label-set column of observed names
    was read as complete label sets, and 'test mAP' was printed against them):

    * rows that are **evidently partial** — every training row names one or two labels
      (:data:`PARTIAL_MAX_PER_ROW`) out of at least :data:`PARTIAL_MIN_LABELS` — are read as
      observed positives, with a one-line note giving the evidence (labels per row);
    * otherwise a **label-set column** (the layout the docs list with the observed
      formats) is refused, asking for ``--observed`` or ``--full-labels``; wide 0/1 columns
      (whose 0s state negatives) and long tables keep their reading.

    (Exactly one positive per row is :func:`single_positive_as_observed`'s, applied first.)"""
    Y = ds.splits["train"].Y
    if Y is None or not len(Y):
        return ds
    lo, hi, mean = _per_row_evidence(Y)
    L = Y.shape[1]
    evidence = f"training rows name {lo}-{hi} labels each (mean {mean:.2f}) of {L}"
    if lo >= 1 and hi <= PARTIAL_MAX_PER_ROW and L >= PARTIAL_MIN_LABELS:
        splits = {}
        kept = []
        for name, split in ds.splits.items():
            if split.Y is not None and len(split.Y) and positives_per_row(split.Y).max() > PARTIAL_MAX_PER_ROW:
                splits[name] = split
                kept.append(name)
                continue
            Z = None if split.Y is None else as_observations(as_sparse(split.Y, dtype=bool))
            splits[name] = split if split.Y is None else dataclasses.replace(split, Y=None, Z=Z, mask=None)
        msg = (f"{source}: {evidence}, so they are read as observed positives (the labels seen, the others unknown, "
               "not negative) and every score says 'observed labels only'"
               + (f"; the {' and '.join(kept)} split{'s' if len(kept) > 1 else ''} keep{'' if len(kept) > 1 else 's'}"
                  " full labels" if kept else "")
               + ". Pass --observed to say so, or --full-labels (observed=False) if they are complete label sets")
        if log is not None:
            log(msg)
        else:
            warnings.warn(msg, UserWarning, stacklevel=3)
        return dataclasses.replace(ds, splits=splits, notes=[*ds.notes, f"labels read as observed ({evidence})"])
    column = table_options.get("label_set_column")
    if column is not None:
        raise ConfigError(f"{source}: are the names in --label-set-column {column!r} complete label sets or only the "
                          f"labels observed? ({evidence}); pass --full-labels (observed=False) or --observed "
                          "(observed=True)")
    return ds


def is_single_positive(Y) -> bool:
    """True when every row of the full labels ``Y`` has exactly one positive (and there
    are at least two labels and one row): such "full labels" are most likely single
    positives read as complete label sets."""
    if Y is None:
        return False
    return len(Y.shape) == 2 and Y.shape[1] >= 2 and len(Y) > 0 and bool((positives_per_row(Y) == 1).all())


def single_positive_as_observed(ds: MultiLabelDataset, source: str, *, log=None) -> MultiLabelDataset:
    """``ds`` with its labels read as observations when every training row has exactly
    one positive (:func:`is_single_positive`); ``ds`` unchanged otherwise.

    Each split in which no row has more than one positive becomes observed (+1 for its
    positive, 0 = unobserved for every other label); a split with rows of several
    positives (e.g. a separate, fully labelled test file) keeps its full labels.  One
    note (through ``log``, else :func:`warnings.warn`) says what was done and names the
    two options: ``--observed`` (says the same, silently) and ``--full-labels``.
    """
    if not is_single_positive(ds.splits["train"].Y):
        return ds
    kept = []
    splits = {}
    for name, split in ds.splits.items():
        Y = split.Y
        if Y is not None and len(Y) and (positives_per_row(Y) > 1).any():
            splits[name] = split
            kept.append(name)
            continue
        Z = None if Y is None else as_observations(as_sparse(Y, dtype=bool))  # the same entries, as +1
        splits[name] = split if Y is None else dataclasses.replace(split, Y=None, Z=Z, mask=None)
    msg = (f"{source}: every training row has exactly one positive label, so the labels are read as observed "
           "single positives (one confirmed label per row; the others unknown, not negative) and every score says "
           "'observed labels only'" + (f"; the {' and '.join(kept)} split{'s' if len(kept) > 1 else ''} "
                                       f"keep{'' if len(kept) > 1 else 's'} full labels (rows with several "
                                       "positives)" if kept else "")
           + ". Pass --observed to say so, or --full-labels (observed=False) if each row's one label is its "
           "complete label set (multi-class data)")
    if log is not None:
        log(msg)
    else:
        warnings.warn(msg, UserWarning, stacklevel=3)
    out = dataclasses.replace(ds, splits=splits, notes=[*ds.notes, "labels read as observed single positives "
                                                        "(every training row had exactly one positive)"])
    return out
