"""A practitioner's own data: helpers around observed-only datasets.

A dataset read with ``observed=True`` (``spml prepare --observed``) has observations
``Z`` and no full labels.  The only full labels such a user may have is a small
fully labelled **validation file**; :func:`read_validation_file` reads it in the
training file's format and layout, with the training file's label vocabulary, and
returns it as the ``val`` split (model selection by mAP, per-label thresholds and k
by Cole et al. Eq. A1 then use it).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import DataFormatError
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
