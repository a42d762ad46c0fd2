"""MS-COCO instances JSON.

Labels of an image = the set of ``category_id`` of its annotations; classes in the
order of the JSON's ``categories`` list (as the authors' ``format_coco.py``), named by
category name.  Images without annotations are dropped by default, as the SPML papers'
preprocessing does (the authors' data preparation, elijahcole/single-positive-multi-label `preproc/`); pass ``keep_unannotated=True``
to keep them as all-negative rows.  Images are sorted by id.

Each split also records, per image and label, the area of the label's largest
instance (``Split.areas``: the annotation's ``area`` field, else its bounding box
``w·h``; 0 where the label is absent) — what the ``single_positive_largest``
observation regime reads (:mod:`spmlkit.labels`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ...errors import DataFormatError
from ...reading import read_json
from ..dataset import MultiLabelDataset, Split


def read_coco_instances(json_path: str | Path, image_dir: str | Path | None = None, *,
                        keep_unannotated: bool = False,
                        counts: dict | None = None) -> tuple[Split, list[str], list[int]]:
    """One instances file as a split; ``counts``, when given, receives the number of
    images the file lists (``"images"``) and of those dropped for having no annotation
    (``"dropped"``)."""
    json_path = Path(json_path)
    try:
        data = read_json(json_path)  # (the reader rule: a regular file, its size, its depth)
    except FileNotFoundError:
        raise DataFormatError(json_path, "file not found") from None
    if not isinstance(data, dict):
        raise DataFormatError(json_path, "expected a JSON object (a COCO instances file)")
    for key in ("images", "annotations", "categories"):
        if key not in data:
            raise DataFormatError(json_path, f"missing key {key!r}; expected a COCO instances file")
    cats = data["categories"]
    cat_ids = [int(c["id"]) for c in cats]
    col = {cid: j for j, cid in enumerate(cat_ids)}
    images = {int(im["id"]): im for im in data["images"]}
    labels: dict[int, set[int]] = {}
    largest: dict[tuple[int, int], float] = {}  # (image id, category id) -> area of the largest instance
    for k, ann in enumerate(data["annotations"]):
        try:
            iid, cid = int(ann["image_id"]), int(ann["category_id"])
        except (KeyError, TypeError, ValueError):
            raise DataFormatError(json_path, f"annotation #{k} lacks an integer image_id/category_id") from None
        if cid not in col:
            raise DataFormatError(json_path, f"annotation #{k} has category_id {cid}, not in 'categories'")
        if iid not in images:
            raise DataFormatError(json_path, f"annotation #{k} refers to unknown image_id {iid}")
        labels.setdefault(iid, set()).add(cid)
        area = _instance_area(ann, json_path, k)
        largest[iid, cid] = max(largest.get((iid, cid), 0.0), area)
    ids = sorted(images if keep_unannotated else labels)
    if counts is not None:
        counts.update(images=len(images), dropped=len(images) - len(ids))
    Y = np.zeros((len(ids), len(cat_ids)), dtype=bool)
    A = np.zeros((len(ids), len(cat_ids)), dtype=np.float64)
    for r, iid in enumerate(ids):
        for cid in labels.get(iid, ()):
            Y[r, col[cid]] = True
            A[r, col[cid]] = largest[iid, cid]
    img_dir = Path(image_dir) if image_dir is not None else json_path.parent
    paths = [str(img_dir / images[i]["file_name"]) for i in ids]
    names = [str(c.get("name", c["id"])) for c in cats]
    return Split(paths=paths, Y=Y, ids=[str(i) for i in ids], areas=A), names, cat_ids


def _instance_area(ann: dict, json_path: Path, k: int) -> float:
    """The instance's ``area`` (segmentation area in COCO), else its bounding box ``w·h``,
    else 0; a present but malformed or negative value is an error naming the annotation."""
    try:
        if ann.get("area") is not None:
            area = float(ann["area"])
        elif ann.get("bbox") is not None:
            area = float(ann["bbox"][2]) * float(ann["bbox"][3])
        else:
            return 0.0
    except (TypeError, ValueError, IndexError, KeyError):
        raise DataFormatError(json_path, f"annotation #{k} has a malformed area/bbox") from None
    if not np.isfinite(area) or area < 0:
        raise DataFormatError(json_path, f"annotation #{k} has area {area}; expected a finite value >= 0")
    return area


def load_coco(train_json: str | Path, train_images: str | Path, *, test_json: str | Path | None = None,
              test_images: str | Path | None = None, name: str = "coco",
              keep_unannotated: bool = False) -> MultiLabelDataset:
    """COCO train (and optionally val-as-test) instances files with their image folders."""
    counts = {"train": {}, "test": {}}
    tr, names, ids = read_coco_instances(train_json, train_images, keep_unannotated=keep_unannotated,
                                         counts=counts["train"])
    splits = {"train": tr}
    if test_json is not None:
        te, names_te, ids_te = read_coco_instances(test_json, test_images, keep_unannotated=keep_unannotated,
                                                   counts=counts["test"])
        if ids_te != ids:
            raise DataFormatError(test_json, "categories differ from the training file's")
        splits["test"] = te
    notes = [f"dropped {c['dropped']} of the {c['images']} {split} images without annotations (as the SPML "
             "papers' preprocessing)" for split, c in counts.items() if c.get("dropped")]
    return MultiLabelDataset(name=name, label_names=names, splits=splits, source=str(train_json), notes=notes)


def load_coco_folder(root: str | Path, *, name: str | None = None, year: str = "2017",
                     keep_unannotated: bool = False) -> MultiLabelDataset:
    """A folder with ``annotations/instances_{train,val}<year>.json`` and image folders
    ``train<year>/``, ``val<year>/`` (or ``images/train<year>/`` ...); val becomes the test split."""
    root = Path(root)
    ann = root / "annotations"
    tr_json, va_json = ann / f"instances_train{year}.json", ann / f"instances_val{year}.json"
    if not tr_json.exists():
        raise DataFormatError(root, f"expected annotations/instances_train{year}.json inside")

    def img_dir(split):
        for c in (root / f"{split}{year}", root / "images" / f"{split}{year}"):
            if c.is_dir():
                return c
        raise DataFormatError(root, f"no image folder {split}{year}/ or images/{split}{year}/")

    return load_coco(tr_json, img_dir("train"), test_json=va_json if va_json.exists() else None,
                     test_images=img_dir("val") if va_json.exists() else None, name=name or root.name,
                     keep_unannotated=keep_unannotated)
