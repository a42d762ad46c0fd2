"""How the labels of a user's own table are read when the user said neither ``--observed``
nor ``--full-labels`` (``observed=None``): one rule for every layout — a label-set column,
a single-label column (one name per row, or a long ``(id, label)`` table) and wide 0/1
columns.

* rows that are **evidently partial** are read as observed positives (the labels seen, the
  others unknown, not negative), said in one line with the evidence:

  - every training row (example) has **exactly one** positive, of at least two labels:
    single positives (:func:`is_single_positive`);
  - every training row names **one or two** labels (:data:`PARTIAL_MAX_PER_ROW`) of at
    least :data:`PARTIAL_MIN_LABELS`;

* otherwise the reader **refuses**, in one line giving the evidence (labels per row) and
  asking for ``--observed`` or ``--full-labels`` — nothing downstream then computes a
  "test mAP" or a "label recovery" against labels nobody said were complete.

A split whose rows have more positives than the rule allows (a fully labelled ``--test``
file beside single-positive training rows) keeps its full labels, and the note says so.
What was decided is kept as the dataset's :attr:`~spmlkit.data.dataset.MultiLabelDataset.label_reading`
(``meta.json["label_reading"]`` of the bundle).
"""
from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

from ...errors import ConfigError
from ...labels import as_observations, positives_per_row
from ...sparse_labels import as_sparse
from ..dataset import MultiLabelDataset

#: the table options that say where a user's labels are, with their command-line names
LAYOUT_OPTIONS = {"label_set_column": "--label-set-column", "label_column": "--label-column",
                  "label_columns": "--label-columns", "labels_last": "--labels-last"}
#: "one or two names per row against many labels": rows naming at most this many labels ...
PARTIAL_MAX_PER_ROW = 2
#: ... out of at least this many are evidently partial
PARTIAL_MIN_LABELS = 5

#: the label-reading records (``label_reading``) of a table read by the rule
READ_OBSERVED_SINGLE = "observed: every training row had exactly one positive"
READ_DECLARED = {True: "observed: declared (--observed)", False: "full labels: declared (--full-labels)"}

SINGLE_LABEL_NOTE = ("{file}: one label per row (column {column!r}) is read as observed single positives, as with "
                     "--observed; if each row's label is its complete label set (multi-class data), pass "
                     "--full-labels (observed=False)")


def is_single_positive(Y) -> bool:
    """True when every row of the full labels ``Y`` has exactly one positive (and there
    are at least two labels and one row): such "full labels" are most likely single
    positives read as complete label sets."""
    if Y is None:
        return False
    return len(Y.shape) == 2 and Y.shape[1] >= 2 and len(Y) > 0 and bool((positives_per_row(Y) == 1).all())


def is_evidently_partial(Y) -> bool:
    """Every row of ``Y`` names one or two labels, of at least :data:`PARTIAL_MIN_LABELS`."""
    if Y is None or not len(Y) or Y.shape[1] < PARTIAL_MIN_LABELS:
        return False
    counts = positives_per_row(Y)
    return int(counts.min()) >= 1 and int(counts.max()) <= PARTIAL_MAX_PER_ROW


def per_row_evidence(Y, rows: str = "rows") -> str:
    """``training rows name 1-5 labels each (mean 2.31) of 8``: the evidence a note or a
    refusal gives."""
    counts = positives_per_row(Y)
    return (f"training {rows} name {int(counts.min())}-{int(counts.max())} labels each (mean "
            f"{float(counts.mean()):.2f}) of {Y.shape[1]}")


def as_observed(ds: MultiLabelDataset, most_per_row: int) -> tuple[dict, list[str]]:
    """``ds``'s splits with their full labels turned into observed positives (+1 for each
    positive, 0 = unobserved elsewhere), except a split with a row of more than
    ``most_per_row`` positives, which keeps its full labels.  Returns ``(splits, kept)``."""
    splits, kept = {}, []
    for name, split in ds.splits.items():
        Y = split.Y
        if Y is not None and len(Y) and int(positives_per_row(Y).max()) > most_per_row:
            splits[name] = split
            kept.append(name)
            continue
        Z = None if Y is None else as_observations(as_sparse(Y, dtype=bool))  # the same entries, as +1
        splits[name] = split if Y is None else dataclasses.replace(split, Y=None, Z=Z, mask=None)
    return splits, kept


def _kept(kept: list[str], why: str = "") -> str:
    if not kept:
        return ""
    return (f"; the {' and '.join(kept)} split{'s' if len(kept) > 1 else ''} keep{'' if len(kept) > 1 else 's'} "
            f"full labels{why}")


def _say(msg: str, log) -> None:
    if log is not None:
        log(msg)
    else:
        warnings.warn(msg, UserWarning, stacklevel=4)


def single_positive_as_observed(ds: MultiLabelDataset, source: str, *, log=None, note: str | None = None):
    """``ds`` with its labels read as observations when every training row has exactly
    one positive (:func:`is_single_positive`); ``ds`` unchanged otherwise.

    Each split in which no row has more than one positive becomes observed (+1 for its
    positive, 0 = unobserved for every other label); a split with rows of several
    positives (e.g. a separate, fully labelled test file) keeps its full labels.  One
    note (``note``, else a general one; through ``log``, else :func:`warnings.warn`) says
    what was done and names the two options: ``--observed`` (says the same, silently) and
    ``--full-labels``."""
    if not is_single_positive(ds.splits["train"].Y):
        return ds
    splits, kept = as_observed(ds, 1)
    msg = note or (f"{source}: every training row has exactly one positive label, so the labels are read as "
                   "observed single positives (one confirmed label per row; the others unknown, not negative) and "
                   "every score says 'observed labels only'" + _kept(kept, " (rows with several positives)")
                   + ". Pass --observed to say so, or --full-labels (observed=False) if each row's one label is "
                   "its complete label set (multi-class data)")
    _say(msg, log)
    kept_note = note or ("labels read as observed single positives (every training row had exactly one "
                         "positive)")  # (a note of its own is said once: the summary leaves out what was logged)
    return dataclasses.replace(ds, splits=splits, label_reading=READ_OBSERVED_SINGLE, notes=[*ds.notes, kept_note])


def read_by_the_rule(ds: MultiLabelDataset, source: str, table_options: dict, *, log=None) -> MultiLabelDataset:
    """``ds`` (a user's table read as full labels) read by the module's rule: observed
    positives when its training rows are evidently partial (one line through ``log``, else
    :func:`warnings.warn`), else a :class:`~spmlkit.errors.ConfigError` asking for
    ``--observed`` or ``--full-labels``."""
    Y = ds.splits["train"].Y
    if Y is None or not len(Y):
        return ds
    single = table_options.get("label_column") is not None
    if is_single_positive(Y):
        note = None
        if single:
            _, kept = as_observed(ds, 1)
            note = SINGLE_LABEL_NOTE.format(file=Path(source).name, column=table_options["label_column"]) + _kept(kept)
        return single_positive_as_observed(ds, source, log=log, note=note)
    evidence = per_row_evidence(Y, "examples" if single else "rows")
    if is_evidently_partial(Y):
        splits, kept = as_observed(ds, PARTIAL_MAX_PER_ROW)
        _say(f"{source}: {evidence}, so they are read as observed positives (the labels seen, the others unknown, "
             "not negative) and every score says 'observed labels only'" + _kept(kept)
             + ". Pass --observed to say so, or --full-labels (observed=False) if they are complete label sets", log)
        return dataclasses.replace(ds, splits=splits, label_reading=f"observed: evidently partial ({evidence})",
                                   notes=[*ds.notes, f"labels read as observed ({evidence})"])
    key = next(k for k in LAYOUT_OPTIONS if table_options.get(k) is not None)
    given = table_options[key]
    shown = ",".join(given) if isinstance(given, (list, tuple)) else given
    what = "the 1s in" if key in ("label_columns", "labels_last") else "the names in"
    raise ConfigError(f"{source}: are {what} {LAYOUT_OPTIONS[key]} {shown!r} complete label sets or only the labels "
                      f"observed? ({evidence}); pass --full-labels (observed=False) or --observed (observed=True)")
