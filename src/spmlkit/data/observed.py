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
from pathlib import Path

import numpy as np

from ..errors import DataFormatError
from .dataset import MultiLabelDataset, Split
from .formats.base import detect_format
from .formats.label_rule import LAYOUT_OPTIONS, READ_DECLARED, single_positive_as_observed
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
    image folders of a COCO JSON; ``table_options`` go to :func:`formats.read_table`.
    ``log`` receives one-line notes (default: :func:`warnings.warn`).

    ``observed=True`` reads the labels as observations (+1/-1/0), ``observed=False`` as
    complete label sets.  ``observed=None`` (the default, ``spml prepare`` without
    ``--observed``/``--full-labels``): a user's table (any of :data:`TABLE_LAYOUTS`) is read
    by its reader's one rule (:mod:`spmlkit.data.formats.label_rule`: evidently partial rows
    are observed positives, with a note giving the evidence; anything else is refused,
    asking for one of the two options); any other source whose training rows have exactly
    one positive each is read as observed single positives, with a note
    (:func:`single_positive_as_observed`) — so nothing downstream reports a "test mAP" that
    counts every other label as a true negative.  What was decided is the dataset's
    ``label_reading`` (recorded in the bundle).
    ``val_file`` is a small **fully labelled** validation file in the same format and
    layout (see :func:`spmlkit.data.observed.read_validation_file`); it becomes the
    ``val`` split, so no validation data is held out of the training file.
    """
    ds = load_source(source, data_root=data_root, format=format, test=test, labels_xml=labels_xml, images=images,
                     test_images=test_images, observed=observed, name=name, log=log, **table_options)
    if observed is not None and ds.label_reading is None:
        ds = dataclasses.replace(ds, label_reading=READ_DECLARED[observed])
    elif observed is None and not any(table_options.get(k) is not None for k in TABLE_LAYOUTS):
        ds = single_positive_as_observed(ds, source, log=log)  # (a user's table: its reader's rule, applied)
    if val_file is not None:  # (a fully labelled file by definition: read as full labels)
        ds.splits["val"] = read_validation_file(val_file, ds, format=format, labels_xml=labels_xml,
                                                images=images, **table_options)
        ds.__post_init__()
    return ds


#: the table options that say where a user's labels are (a user's own table, not a named dataset)
TABLE_LAYOUTS = tuple(LAYOUT_OPTIONS)
