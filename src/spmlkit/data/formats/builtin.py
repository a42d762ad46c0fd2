"""The built-in file formats' registrations (:mod:`.base`): how each is detected and
which reader loads it.  The readers are the modules beside this one."""
from __future__ import annotations

from pathlib import Path

from ...errors import DataFormatError
from ..dataset import MultiLabelDataset, Split
from ..registry import load_mulan_folder
from .arff import read_arff
from .base import register_format
from .coco import load_coco, load_coco_folder
from .cub import load_cub
from .nuswide import load_nuswide
from .tabular import load_npz, load_table_dataset
from .voc import load_voc


def _is_voc(path: Path) -> bool:
    return (path / "ImageSets" / "Main").is_dir() or (path / "Annotations").is_dir() or \
        any((path / c / "ImageSets").is_dir() for c in ("VOC2012", "VOC2007")) or (path / "VOCdevkit").is_dir()


@register_format("voc", folder=_is_voc, order=10, description="PASCAL VOC folder (Annotations/, ImageSets/Main/)")
def _load_voc(path, *, name=None, **_):
    return load_voc(path, name=name or "voc")


@register_format("coco", suffixes=(".json",), folder=lambda p: (p / "annotations").is_dir(), order=20,
                 description="COCO instances JSON (with --images), or a COCO folder (annotations/)")
def _load_coco(path, *, name=None, test=None, images=None, test_images=None, **_):
    if Path(path).is_dir():
        return load_coco_folder(path, name=name)
    return load_coco(path, images or Path(path).parent, test_json=test, test_images=test_images,
                     name=name or Path(path).stem)


@register_format("nuswide", folder=lambda p: (p / "Groundtruth").is_dir(), order=30,
                 description="NUS-WIDE folder (Groundtruth/; images with --images)")
def _load_nuswide(path, *, name=None, images=None, **_):
    return load_nuswide(path, image_root=images, name=name or "nuswide")


@register_format("cub", folder=lambda p: (p / "images.txt").exists() or (p / "CUB_200_2011").is_dir(), order=40,
                 description="CUB-200-2011 folder (images.txt, attributes)")
def _load_cub(path, *, name=None, **_):
    return load_cub(path, name=name or "cub")


@register_format("mulan", folder=lambda p: any(p.glob("*.xml")) and any(p.glob("*.arff")), order=50,
                 description="Mulan folder: NAME.xml with NAME-train.arff / NAME-test.arff (or NAME.arff)")
def _load_mulan(path, *, name=None, **_):
    return load_mulan_folder(path, name=name)


@register_format("arff", suffixes=(".arff",), description="Mulan ARFF file (labels from --labels-xml or the header)")
def _load_arff(path, *, name=None, test=None, observed=False, labels_xml=None, **_):
    a = read_arff(path, labels_xml=labels_xml)
    splits = {"train": Split(X=a.X, Y=None if observed else a.Y, Z=a.Y.astype("int8") if observed else None)}
    if test:
        b = read_arff(test, labels_xml=labels_xml)
        if b.label_names != a.label_names or b.feature_names != a.feature_names:
            raise DataFormatError(test, "attributes differ from the training file's")
        splits["test"] = Split(X=b.X, Y=b.Y)
    notes = [f"dropped identifier-like attributes: {', '.join(a.dropped_attributes)}"] if a.dropped_attributes else []
    return MultiLabelDataset(name=name or Path(path).stem.replace("-train", ""), label_names=a.label_names,
                             splits=splits, source=str(path), feature_names=a.feature_names, notes=notes)


@register_format("csv", suffixes=(".csv", ".txt"), observed_auto=True,
                 description="comma-separated table: features and label columns, or one label per row")
def _load_csv(path, *, name=None, test=None, observed=None, log=None, images=None, test_images=None,
              labels_xml=None, **table_options):
    return load_table_dataset(path, test=test, name=name, observed=observed, log=log, **table_options)


@register_format("tsv", suffixes=(".tsv", ".tab"), observed_auto=True, description="tab-separated table (as csv)")
def _load_tsv(path, **options):
    options.setdefault("delimiter", "\t")
    return _load_csv(path, **options)


@register_format("npz", suffixes=(".npz",), description="numpy archive with X and Y (or Z)")
def _load_npz(path, *, name=None, test=None, observed=False, **_):
    ds = load_npz(path, name=name, observed=observed)
    if test:
        t = load_npz(test)
        ds.splits["test"] = t.splits["train"]
        ds.__post_init__()
    return ds
