"""PASCAL VOC (2007/2012 layout).

Reads ``ImageSets/Main/<class>_<split>.txt`` (lines ``<image id> <flag>``) the way the
SPML papers' code does (the authors' data preparation, elijahcole/single-positive-multi-label `preproc/`): only flag ``1`` is positive;
``0`` ("difficult") and ``-1`` are negative; classes in alphabetical order; images
sorted by id.  When no per-class lists exist, ``Annotations/<id>.xml`` is read instead
(an object makes its class positive unless it is marked ``difficult``).  The official
``train`` split is the training set and ``val`` the test set (Cole et al. §6.1).

Real-layout checks (each a one-line :class:`DataFormatError` naming the file and line):
when ``ImageSets/Main/<split>.txt`` exists, every per-class list must name exactly its
images (a list naming an image the split does not have, or leaving one out, is refused);
when ``JPEGImages/`` exists, every listed image must be there as ``<id>.jpg``.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ...errors import DataFormatError
from ...reading import read_text
from ..dataset import MultiLabelDataset, Split
from .base import read_xml

VOC_CLASSES = ["aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
               "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa",
               "train", "tvmonitor"]


def _find_root(root: Path) -> Path:
    for cand in (root, root / "VOC2012", root / "VOCdevkit" / "VOC2012", root / "VOC2007",
                 root / "VOCdevkit" / "VOC2007"):
        if (cand / "ImageSets" / "Main").is_dir() or (cand / "Annotations").is_dir():
            return cand
    raise DataFormatError(root, "not a VOC folder: expected ImageSets/Main/ or Annotations/ inside")


def _read_ids(id_file: Path) -> list[str]:
    """Image ids of ``ImageSets/Main/<split>.txt`` (first token per non-empty line)."""
    ids, seen = [], set()
    for ln, line in enumerate(read_text(id_file)[0].splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 1:
            raise DataFormatError(id_file, f"expected one image id per line, got {line!r}", line=ln)
        if parts[0] in seen:
            raise DataFormatError(id_file, f"image id {parts[0]!r} listed twice", line=ln)
        seen.add(parts[0])
        ids.append(parts[0])
    return ids


def _from_lists(main: Path, split: str) -> tuple[list[str], list[str], np.ndarray, dict[str, tuple[Path, int]]] | None:
    files = sorted(main.glob(f"*_{split}.txt"))
    if not files:
        return None
    classes = sorted(f.name[: -len(f"_{split}.txt")] for f in files)
    id_file = main / f"{split}.txt"
    known = set(_read_ids(id_file)) if id_file.is_file() else None
    flags: dict[str, dict[str, int]] = {}
    where: dict[str, tuple[Path, int]] = {}  # image id -> (list file, line) that first named it
    for c in classes:
        f = main / f"{c}_{split}.txt"
        for ln, line in enumerate(read_text(f)[0].splitlines(), start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 2 or not re.fullmatch(r"-?[01]", parts[1]):
                raise DataFormatError(f, f"expected '<image id> <1|0|-1>', got {line!r}", line=ln)
            if known is not None and parts[0] not in known:
                raise DataFormatError(f, f"image id {parts[0]!r} is not in {id_file.name} (unknown image)", line=ln)
            if c in flags.get(parts[0], {}):
                raise DataFormatError(f, f"image id {parts[0]!r} listed twice", line=ln)
            flags.setdefault(parts[0], {})[c] = int(parts[1])
            where.setdefault(parts[0], (f, ln))
    if known is not None:
        for c in classes:
            left_out = sorted(i for i in known if c not in flags.get(i, {}))
            if left_out:
                raise DataFormatError(main / f"{c}_{split}.txt",
                                      f"does not list {len(left_out)} image(s) of {id_file.name} "
                                      f"(e.g. {left_out[0]!r}); every class list must name every image of the split")
    ids = sorted(flags)
    Y = np.array([[flags[i].get(c, -1) == 1 for c in classes] for i in ids], dtype=bool).reshape(len(ids), len(classes))
    return ids, classes, Y, where


def _check_images(base: Path, ids: list[str], where: dict[str, tuple[Path, int]], fallback: Path) -> None:
    """Every listed image exists as ``JPEGImages/<id>.jpg`` (checked when that folder exists)."""
    img_dir = base / "JPEGImages"
    if not img_dir.is_dir():
        return
    present = {p.name for p in img_dir.iterdir()}
    for i in ids:
        if f"{i}.jpg" not in present:
            f, ln = where.get(i, (fallback, None))
            raise DataFormatError(f, f"image {i!r} is listed but {img_dir / (i + '.jpg')} does not exist", line=ln)


def _from_xml(ann: Path, ids: list[str] | None) -> tuple[list[str], list[str], np.ndarray]:
    files = sorted(ann.glob("*.xml")) if ids is None else [ann / f"{i}.xml" for i in ids]
    sets: dict[str, set[str]] = {}
    for f in files:
        root = read_xml(f, missing="annotation file listed in the split but missing")
        labels = set()
        for obj in root.iter("object"):
            name = obj.findtext("name")
            if name is None:
                raise DataFormatError(f, "<object> without <name>")
            if (obj.findtext("difficult") or "0").strip() == "1":
                continue
            labels.add(name.strip())
        sets[f.stem] = labels
    present = sorted({c for s in sets.values() for c in s})
    classes = VOC_CLASSES if set(present) <= set(VOC_CLASSES) else present
    ids = sorted(sets)
    Y = np.array([[c in sets[i] for c in classes] for i in ids], dtype=bool)
    return ids, classes, Y, {i: (ann / f"{i}.xml", None) for i in ids}


def load_voc(root: str | Path, *, splits: dict[str, str] | None = None, name: str = "voc") -> MultiLabelDataset:
    """Load a VOC folder; ``splits`` maps our split names to VOC's (default train→train, test→val)."""
    base = _find_root(Path(root))
    splits = splits or {"train": "train", "test": "val"}
    main = base / "ImageSets" / "Main"
    out: dict[str, Split] = {}
    classes_seen = None
    for ours, theirs in splits.items():
        got = _from_lists(main, theirs) if main.is_dir() else None
        if got is None:
            id_file = main / f"{theirs}.txt"
            ids = _read_ids(id_file) if id_file.exists() else None
            if ids is None and ours != "train":
                continue
            got = _from_xml(base / "Annotations", ids)
        ids, classes, Y, where = got
        _check_images(base, ids, where, main / f"{theirs}.txt")
        if classes_seen is not None and classes != classes_seen:
            raise DataFormatError(base, f"split {theirs!r} has classes {classes}, expected {classes_seen}")
        classes_seen = classes
        paths = [str(base / "JPEGImages" / f"{i}.jpg") for i in ids]
        out[ours] = Split(paths=paths, Y=Y, ids=ids)
    if "train" not in out:
        raise DataFormatError(base, f"no '{splits['train']}' split found")
    return MultiLabelDataset(name=name, label_names=classes_seen, splits=out, source=str(base))
