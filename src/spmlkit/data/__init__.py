"""Data: formats, built-in datasets, splits and prepared bundles."""
from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError, DataFormatError
from .bundle import Bundle, prepare_bundle, split_indices
from .dataset import MultiLabelDataset, Split
from .registry import (DATASETS, find_mulan_folder, load_dataset, load_mulan_folder, register_dataset,
                       unknown_dataset_error)

__all__ = ["Bundle", "prepare_bundle", "split_indices", "MultiLabelDataset", "Split", "DATASETS", "load_dataset",
           "load_mulan_folder", "register_dataset", "load_any", "FORMATS"]

FORMATS = ("arff", "csv", "tsv", "npz", "mulan", "voc", "coco", "nuswide", "cub", "presence-only")


def _detect_format(path: Path) -> str:
    if path.is_dir():
        if (path / "ImageSets" / "Main").is_dir() or (path / "Annotations").is_dir() or \
                any((path / c / "ImageSets").is_dir() for c in ("VOC2012", "VOC2007")) or (path / "VOCdevkit").is_dir():
            return "voc"
        if (path / "annotations").is_dir():
            return "coco"
        if (path / "Groundtruth").is_dir():
            return "nuswide"
        if (path / "images.txt").exists() or (path / "CUB_200_2011").is_dir():
            return "cub"
        if any(path.glob("*.xml")) and any(path.glob("*.arff")):
            return "mulan"
        if any(path.glob("*train_po.csv")):  # <R>train_po.csv, ... (spmlkit.data.formats.presence_only)
            return "presence-only"
        raise ConfigError(f"cannot tell the format of folder {path}; pass --format ({', '.join(FORMATS)})")
    suffix = path.suffix.lower()
    if suffix == ".gz":
        suffix = Path(path.stem).suffix.lower()
    mapping = {".arff": "arff", ".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".txt": "csv", ".npz": "npz",
               ".json": "coco"}
    if suffix not in mapping:
        raise ConfigError(f"cannot tell the format of {path} from its extension; pass --format ({', '.join(FORMATS)})")
    return mapping[suffix]


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
    ds = _load_any(source, data_root=data_root, format=format, test=test, labels_xml=labels_xml, images=images,
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


def _load_presence_only(path: Path, *, test=None, name=None, region=None, background=None, view="records",
                        categorical=None, label_column=None, val_blocks=None, **_ignored) -> MultiLabelDataset:
    """``spml prepare`` of presence-only data (issue 24): a folder and ``region``, or a
    records CSV with ``background`` and ``test`` = ``ENV.csv:PA.csv[,ENV2.csv:PA2.csv]``."""
    from .formats import presence_only as PO

    opts = {"categorical": categorical} if categorical is not None else {}
    if val_blocks:
        opts["val_blocks"] = int(val_blocks)
    if label_column:
        opts["label_column"] = label_column
    if path.is_dir():
        if not region:
            found = sorted(p.name[:-len("train_po.csv")] for p in path.glob("*train_po.csv"))
            raise ConfigError(f"{path}: presence-only folder: name the region with --region ({', '.join(found)})")
        return PO.load_presence_only_folder(path, region, view=view, name=name, **opts)
    if not test:
        raise ConfigError("presence-only records need surveyed test tables: --test ENV.csv:PA.csv[,ENV2.csv:PA2.csv]")
    tests = []
    for item in str(test).split(","):
        env, _, pa = item.partition(":")
        tests.append((Path(env), Path(pa or env)))
    return PO.load_presence_only(path, background=background, tests=tests, view=view, name=name, **opts)


def _load_any(source: str, *, data_root=None, format: str | None = None, test: str | None = None,
              labels_xml: str | None = None, images: str | None = None, test_images: str | None = None,
              observed: bool | None = False, name: str | None = None, log=None,
              **table_options) -> MultiLabelDataset:
    if format is None and source in DATASETS:
        return load_dataset(source, data_root=data_root)
    path = Path(source)
    if not path.exists():
        if format is None:
            folder = find_mulan_folder(source, data_root)
            if folder is not None:  # any Mulan folder <data root>/NAME/ is found by its name
                return load_mulan_folder(folder, name=name or source, stem=source)
        if format is None and "/" not in source and "." not in source:
            raise unknown_dataset_error(source, data_root)
        raise DataFormatError(path, "file or folder not found")
    fmt = format or ("presence-only" if {"region", "background"} & set(table_options) else _detect_format(path))
    if fmt not in ("csv", "tsv"):
        observed = bool(observed)
    from . import formats as F

    if fmt == "arff":
        a = F.read_arff(path, labels_xml=labels_xml)
        splits = {"train": Split(X=a.X, Y=None if observed else a.Y, Z=a.Y.astype("int8") if observed else None)}
        if test:
            b = F.read_arff(test, labels_xml=labels_xml)
            if b.label_names != a.label_names or b.feature_names != a.feature_names:
                raise DataFormatError(test, "attributes differ from the training file's")
            splits["test"] = Split(X=b.X, Y=b.Y)
        notes = [f"dropped identifier-like attributes: {', '.join(a.dropped_attributes)}"] if a.dropped_attributes else []
        return MultiLabelDataset(name=name or path.stem.replace("-train", ""), label_names=a.label_names,
                                 splits=splits, source=str(path), feature_names=a.feature_names, notes=notes)
    if fmt == "mulan":
        return load_mulan_folder(path, name=name)
    if fmt in ("csv", "tsv"):
        if fmt == "tsv":
            table_options.setdefault("delimiter", "\t")
        return F.load_table_dataset(path, test=test, name=name, observed=observed, log=log, **table_options)
    if fmt == "npz":
        ds = F.load_npz(path, name=name, observed=observed)
        if test:
            t = F.load_npz(test)
            ds.splits["test"] = t.splits["train"]
            ds.__post_init__()
        return ds
    if fmt == "voc":
        return F.load_voc(path, name=name or "voc")
    if fmt == "coco":
        if path.is_dir():
            return F.load_coco_folder(path, name=name)
        return F.load_coco(path, images or path.parent, test_json=test, test_images=test_images,
                           name=name or path.stem)
    if fmt == "nuswide":
        return F.load_nuswide(path, image_root=images, name=name or "nuswide")
    if fmt == "cub":
        return F.load_cub(path, name=name or "cub")
    if fmt == "presence-only":
        return _load_presence_only(path, test=test, name=name, **table_options)
    raise ConfigError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
