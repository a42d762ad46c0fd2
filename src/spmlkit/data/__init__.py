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
    ``log`` receives one-line notes (default: a full-label dataset in which every example
    has exactly one positive is reported with :func:`warnings.warn`, since it looks like
    single-positive data read without ``observed``).
    ``val_file`` is a small **fully labelled** validation file in the same format and
    layout (see :func:`spmlkit.data.observed.read_validation_file`); it becomes the
    ``val`` split, so no validation data is held out of the training file.
    """
    ds = load_source(source, data_root=data_root, format=format, test=test, labels_xml=labels_xml, images=images,
                     test_images=test_images, observed=observed, name=name, log=log, **table_options)
    if val_file is not None:
        from .observed import read_validation_file

        ds.splits["val"] = read_validation_file(val_file, ds, format=format, labels_xml=labels_xml,
                                                images=images, **table_options)
        ds.__post_init__()
    _warn_if_single_positive(ds, source, log)
    return ds


def _warn_if_single_positive(ds: MultiLabelDataset, source: str, log) -> None:
    """Full labels in which every training example has exactly one positive (label
    cardinality 1.0) are most likely single-positive observations read without
    ``observed``: say so (through ``log``, else a warning)."""
    Y = ds.splits["train"].Y
    if Y is None or ds.n_labels < 2 or len(Y) == 0 or not (Y.sum(axis=1) == 1).all():
        return
    msg = (f"warning: {source}: every training example has exactly one positive label (label cardinality 1.00): "
           "this looks like single-positive data, not complete label sets; if each row holds one confirmed label "
           "among possibly several, pass --observed (observed=True), or the 'full-label' scores will count every "
           "other label as a true negative")
    if log is not None:
        log(msg)
    else:
        import warnings

        warnings.warn(msg, UserWarning, stacklevel=3)
