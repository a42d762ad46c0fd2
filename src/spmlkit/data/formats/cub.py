"""CUB-200-2011 attributes as labels (Cole et al. §6.1).

312 binary attributes from ``attributes/image_attribute_labels.txt`` (columns
``image_id attribute_id is_present certainty_id time``; certainty is ignored, as in the
authors' ``format_cub.py``), images from ``images.txt``, the official
``train_test_split.txt``.  Attribute names come from ``attributes.txt`` (root or
``attributes/``) when present.  A few lines of the official file carry extra fields;
only the first three are read.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ...errors import DataFormatError
from ...reading import read_text
from ..dataset import MultiLabelDataset, Split


def _find(root: Path) -> Path:
    for cand in (root, root / "CUB_200_2011", root / "CUB_200_2011" / "CUB_200_2011"):
        if (cand / "images.txt").exists():
            return cand
    raise DataFormatError(root, "not a CUB-200-2011 folder: images.txt not found")


def load_cub(root: str | Path, *, name: str = "cub") -> MultiLabelDataset:
    base = _find(Path(root))
    images = {}
    for ln, line in enumerate(read_text(base / "images.txt")[0].splitlines(), start=1):
        if line.strip():
            parts = line.split(None, 1)
            if len(parts) != 2 or not parts[0].isdigit():
                raise DataFormatError(base / "images.txt", f"expected '<id> <path>', got {line!r}", line=ln)
            images[int(parts[0])] = parts[1].strip()
    split_file = base / "train_test_split.txt"
    is_train = {}
    for ln, line in enumerate(read_text(split_file)[0].splitlines(), start=1):
        if line.strip():
            parts = line.split()
            if len(parts) != 2 or parts[1] not in ("0", "1"):
                raise DataFormatError(split_file, f"expected '<id> <0|1>', got {line!r}", line=ln)
            is_train[int(parts[0])] = parts[1] == "1"
    names_file = next((p for p in (base / "attributes.txt", base / "attributes" / "attributes.txt",
                                   base.parent / "attributes.txt") if p.exists()), None)
    lab_file = base / "attributes" / "image_attribute_labels.txt"
    if not lab_file.exists():
        raise DataFormatError(lab_file, "attribute label file not found")
    ids = sorted(images)
    row = {i: r for r, i in enumerate(ids)}
    entries = []
    n_attr = 0
    for ln, line in enumerate(read_text(lab_file)[0].splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 3 or not (parts[0].isdigit() and parts[1].isdigit()) or parts[2] not in ("0", "1"):
            raise DataFormatError(lab_file, f"expected '<image_id> <attribute_id> <0|1> ...', got {line!r}", line=ln)
        iid, aid = int(parts[0]), int(parts[1])
        if iid not in row:
            raise DataFormatError(lab_file, f"image_id {iid} is not in images.txt", line=ln)
        n_attr = max(n_attr, aid)
        if parts[2] == "1":
            entries.append((row[iid], aid - 1))
    Y = np.zeros((len(ids), n_attr), dtype=bool)
    if entries:
        r, c = np.array(entries).T
        Y[r, c] = True
    if names_file is not None:
        names = [ln.split(None, 1)[1].strip() for ln in read_text(names_file)[0].splitlines() if ln.strip()]
        if len(names) != n_attr:
            raise DataFormatError(names_file, f"{len(names)} attribute names but {n_attr} attributes in {lab_file.name}")
    else:
        names = [f"attribute_{k + 1}" for k in range(n_attr)]
    splits = {}
    for ours, flag in (("train", True), ("test", False)):
        sel = [i for i in ids if is_train.get(i) == flag]
        rows = np.array([row[i] for i in sel], dtype=int)
        splits[ours] = Split(paths=[str(base / "images" / images[i]) for i in sel], Y=Y[rows],
                             ids=[str(i) for i in sel])
    return MultiLabelDataset(name=name, label_names=names, splits=splits, source=str(base))
