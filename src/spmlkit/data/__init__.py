"""Data: formats, built-in datasets, splits and prepared bundles."""
from __future__ import annotations


from .bundle import Bundle, prepare_bundle, split_indices
from .dataset import MultiLabelDataset, Split
from .formats.base import FILE_FORMATS, detect_format, register_format
from .registry import DATASETS, load_dataset, load_mulan_folder, load_source, register_dataset

__all__ = ["Bundle", "prepare_bundle", "split_indices", "MultiLabelDataset", "Split", "DATASETS", "load_dataset",
           "load_mulan_folder", "register_dataset", "load_any", "FORMATS", "FILE_FORMATS", "register_format",
           "detect_format"]

#: the file formats (:mod:`spmlkit.data.formats.base`): a registry; a format registers itself
#: with :func:`register_format` (detection and loader), ``spml prepare --format NAME`` uses it
FORMATS = FILE_FORMATS


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
    until the caller says otherwise** (issue 37): with ``observed=None`` (the default,
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
    if val_file is not None:  # (a fully labelled file by definition: read as full labels)
        from .observed import read_validation_file

        ds.splits["val"] = read_validation_file(val_file, ds, format=format, labels_xml=labels_xml,
                                                images=images, **table_options)
        ds.__post_init__()
    return ds


def is_single_positive(Y) -> bool:
    """True when every row of the full labels ``Y`` has exactly one positive (and there
    are at least two labels and one row): such "full labels" are most likely single
    positives read as complete label sets."""
    if Y is None:
        return False
    from ..labels import positives_per_row

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
    import dataclasses

    from ..labels import as_observations, positives_per_row
    from ..sparse_labels import as_sparse

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
        import warnings

        warnings.warn(msg, UserWarning, stacklevel=3)
    out = dataclasses.replace(ds, splits=splits, notes=[*ds.notes, "labels read as observed single positives "
                                                        "(every training row had exactly one positive)"])
    return out
