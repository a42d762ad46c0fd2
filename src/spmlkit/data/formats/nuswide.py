"""NUS-WIDE per-concept label files.

Layout (the official release): ``Concepts81.txt`` (one concept per line; optional — else
the concepts are read off the label file names), ``ImageList/TrainImagelist.txt`` and
``ImageList/TestImagelist.txt`` (one relative image path per line, Windows ``\\``
separators allowed), and ``Groundtruth/TrainTestLabels/Labels_<concept>_{Train,Test}.txt``
(one 0/1 per line, aligned with the image list).  Image paths are resolved under
``image_root`` (default ``<root>/Flickr``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ...errors import DataFormatError
from ...reading import read_text
from ..dataset import MultiLabelDataset, Split


def load_nuswide(root: str | Path, *, image_root: str | Path | None = None, name: str = "nuswide") -> MultiLabelDataset:
    root = Path(root)
    gt = root / "Groundtruth" / "TrainTestLabels"
    if not gt.is_dir():
        raise DataFormatError(root, "expected Groundtruth/TrainTestLabels/ inside a NUS-WIDE folder")
    cfile = root / "Concepts81.txt"
    if cfile.exists():
        concepts = [c.strip() for c in read_text(cfile)[0].splitlines() if c.strip()]
    else:
        concepts = sorted(f.name[len("Labels_"):-len("_Train.txt")] for f in gt.glob("Labels_*_Train.txt"))
    if not concepts:
        raise DataFormatError(gt, "no Labels_<concept>_Train.txt files")
    img_root = Path(image_root) if image_root else root / "Flickr"
    splits = {}
    for ours, theirs in (("train", "Train"), ("test", "Test")):
        lst = root / "ImageList" / f"{theirs}Imagelist.txt"
        if not lst.exists():
            if ours == "train":
                raise DataFormatError(lst, "image list not found")
            continue
        rel = [s.strip().replace("\\", "/") for s in read_text(lst)[0].splitlines() if s.strip()]
        Y = np.zeros((len(rel), len(concepts)), dtype=bool)
        for j, c in enumerate(concepts):
            f = gt / f"Labels_{c}_{theirs}.txt"
            if not f.exists():
                raise DataFormatError(f, f"label file for concept {c!r} not found")
            vals = [s.strip() for s in read_text(f)[0].splitlines() if s.strip()]
            if len(vals) != len(rel):
                raise DataFormatError(f, f"{len(vals)} lines; the image list {lst.name} has {len(rel)}")
            for i, v in enumerate(vals):
                if v not in ("0", "1"):
                    raise DataFormatError(f, f"value {v!r}; expected 0 or 1", line=i + 1)
            Y[:, j] = np.array(vals) == "1"
        splits[ours] = Split(paths=[str(img_root / r) for r in rel], Y=Y, ids=rel)
    return MultiLabelDataset(name=name, label_names=concepts, splits=splits, source=str(root))
