"""Datasets by name.

Two kinds of names:

* **built-in** — embedded, no download: ``yeast`` (the Mulan Yeast set shipped inside
  the ``river`` package) and ``digits`` (multi-label images composed from
  scikit-learn's bundled handwritten digits).
* **data-root** — standard datasets found under a data root folder that the user
  points to with ``--data-root`` or the ``SPMLKIT_DATA`` environment variable: the
  Mulan ARFF sets (``scene``, ``emotions``, ``medical``, ``genbase``, ``birds``,
  ``flags``, ``foodtruck``, ``yeast-arff``) in ``<root>/mulan_multilabel_arff/<name>/``
  or ``<root>/<name>/``, and COCO-layout folders (``coco-tiny``, ``coco-mini``,
  ``tiny-coco``).
* **any Mulan folder** — another name ``NAME`` resolves to ``<root>/NAME/`` (or
  ``<root>/mulan_multilabel_arff/NAME/``) holding ``NAME-train.arff`` (and
  ``NAME-test.arff``) or ``NAME.arff``, with ``NAME.xml`` (e.g. ``enron``).

Anything else is a path: see :func:`spmlkit.data.load_any`.
"""
from __future__ import annotations

import gzip
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ConfigError, DataFormatError, SpmlError, UnknownNameError
from ..io import load_numpy, npz_array, sha256_file
from ..labels import label_stats
from ..registry import Registry
from .dataset import MultiLabelDataset, Split
from .digits import make_digits
from .formats.arff import read_arff
from .formats.base import FILE_FORMATS, detect_format
from .formats.coco import load_coco_folder
from .formats.voc import load_voc


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    loader: Callable[..., MultiLabelDataset]  # loader(data_root: Path | None) -> dataset
    kind: str  # "features" | "images"
    builtin: bool
    description: str
    citation: str = ""


#: the named datasets (:class:`spmlkit.registry.Registry`); registered in this module
DATASETS: Registry = Registry("dataset", package=None)


def register_dataset(name: str, *, kind: str, builtin: bool, description: str, citation: str = ""):
    """Register ``fn(data_root) -> MultiLabelDataset`` as dataset ``name`` (``kind``:
    ``features`` or ``images``; ``builtin``: loads without a data root)."""
    if kind not in ("features", "images"):
        raise ValueError(f"dataset {name!r}: kind must be 'features' or 'images', got {kind!r}")

    def deco(fn):
        DATASETS.add(name, DatasetSpec(name, fn, kind, builtin, description, citation), owner=fn)
        return fn

    return deco


def data_roots(data_root: str | Path | None = None) -> list[Path]:
    roots = []
    if data_root:
        roots.append(Path(data_root))
    env = os.environ.get("SPMLKIT_DATA")
    if env:
        roots.extend(Path(p) for p in env.split(os.pathsep) if p)
    return roots


def load_dataset(name: str, *, data_root: str | Path | None = None) -> MultiLabelDataset:
    """Load a named dataset (see module docstring)."""
    spec = DATASETS.get(name)
    if spec is not None:
        return spec.loader(data_root)
    folder = find_mulan_folder(name, data_root)
    if folder is None:
        raise unknown_dataset_error(name, data_root)
    return load_mulan_folder(folder, name=name, stem=name)


def _plain_name(name: str) -> bool:
    return bool(name) and "/" not in name and os.sep not in name and name not in (".", "..")


def find_mulan_folder(name: str, data_root: str | Path | None = None) -> Path | None:
    """The Mulan-layout folder of dataset ``name`` under the data roots, or None: the first
    of ``<root>/mulan_multilabel_arff/NAME/``, ``<root>/NAME/`` and ``<root>/`` holding
    ``NAME-train.arff`` or ``NAME.arff``, beside ``NAME.xml``."""
    if not _plain_name(name):
        return None
    for r in data_roots(data_root):
        for cand in (r / "mulan_multilabel_arff" / name, r / name, r):
            if (cand / f"{name}.xml").is_file() and (
                    (cand / f"{name}-train.arff").is_file() or (cand / f"{name}.arff").is_file()):
                return cand
    return None


def found_mulan_datasets(data_root: str | Path | None = None) -> dict[str, DatasetSpec]:
    """Specs of the Mulan folders under the data roots that no registered name covers
    (what ``spml datasets --data-root DIR`` lists beside the registered sets)."""
    found: dict[str, DatasetSpec] = {}
    for r in data_roots(data_root):
        for parent in (r / "mulan_multilabel_arff", r):
            if not parent.is_dir():
                continue
            for d in sorted(parent.iterdir()):
                name = d.name
                if name in DATASETS or name in found or find_mulan_folder(name, data_root) != d:
                    continue
                found[name] = DatasetSpec(name, (lambda root, n=name: load_dataset(n, data_root=root)), "features",
                                          False, f"Mulan folder {d}")
    return found


@dataclass(frozen=True)
class DatasetRow:
    """One dataset as ``spml datasets`` lists it (:func:`dataset_rows`).

    ``where``: ``"built-in"``, ``"data root"``, ``"needs --data-root"`` (a data-root set
    with no data root given) or ``"not found"`` (then ``description`` says why it did
    not load).  The statistics are None unless they were asked for and the set loaded."""

    name: str
    kind: str  # "features" | "images"
    where: str
    description: str
    sizes: dict[str, int] | None = None  # rows per split, in the dataset's split order
    n_labels: int | None = None
    n_features: int | None = None  # feature columns; None for an image dataset
    cardinality: float | None = None  # mean positives per training example (Cole et al. Eq. A1)
    notes: tuple[str, ...] = ()  # what the loader dropped (its "dropped ..." notes)


def dataset_rows(data_root: str | Path | None = None, *, stats: bool = True) -> list[DatasetRow]:
    """Every dataset that can be named: the registered sets and the Mulan folders found
    under the data roots (:func:`found_mulan_datasets`), built-in ones first, then by
    name.  ``stats``: load each available set for its sizes and label statistics (a set
    that fails to load is a ``"not found"`` row, not an error)."""
    found = found_mulan_datasets(data_root)
    rows = []
    for name, spec in sorted({**found, **DATASETS}.items(), key=lambda kv: (not kv[1].builtin, kv[0])):
        where = "built-in" if spec.builtin else "data root"
        if not spec.builtin and not (data_root or os.environ.get("SPMLKIT_DATA")):
            rows.append(DatasetRow(name, spec.kind, "needs --data-root", spec.description))
            continue
        if not stats:
            rows.append(DatasetRow(name, spec.kind, where, spec.description))
            continue
        try:
            ds = load_dataset(name, data_root=data_root)
        except SpmlError as exc:
            rows.append(DatasetRow(name, spec.kind, "not found", str(exc)))
            continue
        train = ds.splits["train"]
        rows.append(DatasetRow(name, spec.kind, where, spec.description,
                               sizes={k: len(v) for k, v in ds.splits.items()}, n_labels=ds.n_labels,
                               n_features=train.X.shape[1] if ds.is_features else None,
                               cardinality=float(label_stats(train.Y)["cardinality"]),
                               notes=tuple(n for n in ds.notes if n.startswith("dropped "))))
    return rows


def unknown_dataset_error(name: str, data_root: str | Path | None = None) -> UnknownNameError:
    """'unknown dataset' naming the built-in names and the other ways to give a dataset."""
    exc = UnknownNameError("dataset", name, DATASETS)
    roots = data_roots(data_root)
    where = (f"looked under {', '.join(map(str, roots))}" if roots
             else "no --data-root given and SPMLKIT_DATA unset")
    exc.args = (f"{exc.args[0]}; or a file or folder path (CSV/TSV/ARFF/NPZ file; Mulan, COCO, VOC, NUS-WIDE or "
                f"CUB folder); or a Mulan folder under the data root, <root>/{name}/ holding {name}-train.arff "
                f"(+ {name}-test.arff) or {name}.arff, and {name}.xml ({where})",)
    return exc


# ------------------------------------------------------------------------ built-ins
def _river_yeast_file() -> Path:
    """The data file river ships, found without importing river (its import pulls in
    narwhals and takes seconds; only the 840 KB CSV is used)."""
    spec = importlib.util.find_spec("river")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - river is a dependency
        raise ConfigError("the built-in 'yeast' dataset needs the 'river' package: pip install river")
    path = Path(list(spec.submodule_search_locations)[0]) / "datasets" / "yeast.csv.gz"
    if not path.exists():
        raise DataFormatError(path, "river does not ship yeast.csv.gz in this version")
    return path


@register_dataset("yeast", kind="features", builtin=True,
                  description="Yeast gene functions (Mulan): 2,417 genes x 103 features, 14 labels; "
                              "official split 1,500 train / 917 test; read from the river package",
                  citation="Elisseeff & Weston, NeurIPS 2001")
def load_yeast(data_root=None) -> MultiLabelDataset:
    """Yeast from ``river/datasets/yeast.csv.gz``.

    Its rows 1-917 are Mulan's ``yeast-test.arff`` and rows 918-2417 Mulan's
    ``yeast-train.arff`` (checked value-for-value against the Mulan files), so the
    official split is recovered by position.
    """
    path = _river_yeast_file()
    with gzip.open(path, "rt") as fh:
        header = fh.readline().strip().split(",")
        arr = np.loadtxt(fh, delimiter=",", dtype=np.float64)
    lab_idx = [i for i, h in enumerate(header) if h.startswith("Class")]
    feat_idx = [i for i, h in enumerate(header) if h.startswith("Att")]
    if arr.shape != (2417, 117) or len(lab_idx) != 14:
        raise DataFormatError(path, f"unexpected shape {arr.shape}; expected 2417 rows x 117 columns")
    X = arr[:, feat_idx].astype(np.float32)
    Y = arr[:, lab_idx]
    test, train = slice(0, 917), slice(917, 2417)
    return MultiLabelDataset(
        name="yeast", label_names=[header[i] for i in lab_idx],
        splits={"train": Split(X=X[train], Y=Y[train]), "test": Split(X=X[test], Y=Y[test])},
        source=str(path), feature_names=[header[i] for i in feat_idx],
        notes=["official Mulan split: river rows 918-2417 train, 1-917 test"])


#: the embedded data files (package data): derived features, with their provenance beside them
EMBEDDED = Path(__file__).with_name("embedded")


@register_dataset("voc2007-lite0", kind="features", builtin=True,
                  description="PASCAL VOC 2007 as EfficientNet-Lite0 (224 px, ImageNet) features: 5,008 images x "
                              "1,280 features (float16, embedded), 20 labels; official train 2,500 / val as test "
                              "2,508, the SPML papers' protocol; spml demo's data",
                  citation="Everingham et al., IJCV 2010")
def load_voc2007_lite0(data_root=None) -> MultiLabelDataset:
    """The embedded ``embedded/voc2007-lite0.npz``: the features ``spml features`` computes
    from ``../shared/data/voc2007`` with the default backbone (EfficientNet-Lite0, 224 px),
    stored as float16 (a linear head on them gives the same table as on float32:
    ``benchmarks/results/voc2007-linear/embedded-float16.md``), with the full labels and the
    official split (``embedded/voc2007-lite0.json``: provenance, commands, checksum)."""
    path = EMBEDDED / "voc2007-lite0.npz"
    if not path.is_file():
        raise DataFormatError(path, "the embedded VOC 2007 features are missing from this installation; "
                                    "reinstall spmlkit")
    meta_path = path.with_suffix(".json")
    if meta_path.is_file():
        want = json.loads(meta_path.read_text(encoding="utf-8")).get("sha256")
        if want and sha256_file(path) != want:
            raise DataFormatError(path, "checksum differs from voc2007-lite0.json; reinstall spmlkit")
    arc = load_numpy(path)
    X = npz_array(arc, "X", path).astype(np.float32)
    Y = npz_array(arc, "Y", path).astype(bool)
    ids = [str(i) for i in npz_array(arc, "ids", path)]
    names = [str(n) for n in npz_array(arc, "label_names", path)]
    n = int(npz_array(arc, "n_train", path))
    train, test = slice(0, n), slice(n, len(X))
    return MultiLabelDataset(
        name="voc2007-lite0", label_names=names,
        splits={"train": Split(X=X[train], Y=Y[train], ids=ids[train]),
                "test": Split(X=X[test], Y=Y[test], ids=ids[test])},
        source=str(path), feature_names=None, feature_source="efficientnet-lite0-224",
        notes=["official VOC 2007 split: train, and val as test (Cole et al. 2021 §6.1); EfficientNet-Lite0 "
               "224 px features stored as float16"])


@register_dataset("digits", kind="images", builtin=True,
                  description="multi-label images: 2-4 sklearn handwritten digits per 64x64 canvas, 10 labels; "
                              "160 train / 48 val / 96 test, source digits disjoint between splits",
                  citation="Alpaydin & Kaynak 1998 (UCI optdigits, via scikit-learn)")
def load_digits_images(data_root=None) -> MultiLabelDataset:
    """Rendered on first use into ``$SPMLKIT_CACHE`` (default ``~/.cache/spmlkit``); see :mod:`.digits`."""
    return make_digits()


# ------------------------------------------------------------------- data-root sets
MULAN_SETS = {
    "scene": "Scene images (Boutell et al. 2004): 294 colour/texture features, 6 labels",
    "emotions": "Music emotions (Trohidis et al. 2008): 72 audio features, 6 labels",
    "medical": "Medical free text (Pestian et al. 2007): 1,449 word features, 45 labels",
    "genbase": "Protein functions (Diplaris et al. 2005): 1,185 YES/NO motif attributes (2,370 one-hot feature "
               "columns), 27 labels",
    "birds": "Bird song (Briggs et al. 2013): 260 audio features, 19 labels",
    "flags": "Flags (Gonçalves et al. 2013): 19 features, 7 labels",
    "foodtruck": "Food-truck preferences (Rivolli et al. 2017): 21 attributes (32 feature columns, nominal ones "
                 "one-hot encoded), 12 labels (no official split)",
    "yeast-arff": "Yeast read from the Mulan ARFF files (same data as built-in 'yeast')",
}


def _find_mulan_dir(name: str, data_root) -> Path:
    stem = "yeast" if name == "yeast-arff" else name
    roots = data_roots(data_root)
    for r in roots:
        for cand in (r / "mulan_multilabel_arff" / stem, r / stem, r):
            if (cand / f"{stem}.xml").exists():
                return cand
    where = ", ".join(map(str, roots)) or "nowhere (no --data-root given and SPMLKIT_DATA unset)"
    raise ConfigError(f"dataset {name!r} is not built in; looked for mulan_multilabel_arff/{stem}/{stem}.xml "
                      f"under {where}. Pass --data-root <folder> or set SPMLKIT_DATA.")


def load_mulan_folder(folder: str | Path, *, name: str | None = None, stem: str | None = None) -> MultiLabelDataset:
    """A Mulan dataset folder: ``<stem>.xml`` and ``<stem>-train.arff`` / ``<stem>-test.arff``
    (official split) or a single ``<stem>.arff`` (no official test split).  Without
    ``stem``, the first ``*.xml`` of the folder names it."""
    folder = Path(folder)
    if stem is not None:
        xml = folder / f"{stem}.xml"
        if not xml.is_file():
            raise DataFormatError(folder, f"no Mulan label XML {stem}.xml in this folder")
    else:
        xmls = sorted(folder.glob("*.xml"))
        if not xmls:
            raise DataFormatError(folder, "no Mulan label XML (<name>.xml) in this folder")
        stem = xmls[0].stem
        xml = xmls[0]
    tr, te, full = folder / f"{stem}-train.arff", folder / f"{stem}-test.arff", folder / f"{stem}.arff"
    notes = []
    if tr.exists():
        a = read_arff(tr, labels_xml=xml)
        splits = {"train": Split(X=a.X, Y=a.Y)}
        if te.exists():
            b = read_arff(te, labels_xml=xml)
            if b.feature_names != a.feature_names:
                raise DataFormatError(te, "feature attributes differ from the training file's")
            splits["test"] = Split(X=b.X, Y=b.Y)
            notes.append("official Mulan train/test split")
    elif full.exists():
        a = read_arff(full, labels_xml=xml)
        splits = {"train": Split(X=a.X, Y=a.Y)}
        notes.append("no official test split in the source")
    else:
        raise DataFormatError(folder, f"neither {tr.name} nor {full.name} found")
    if a.dropped_attributes:
        notes.append(f"dropped identifier-like attributes: {', '.join(a.dropped_attributes)}")
    return MultiLabelDataset(name=name or stem, label_names=a.label_names, splits=splits, source=str(folder),
                             feature_names=a.feature_names, notes=notes)


def _make_mulan_loader(name):
    def loader(data_root=None):
        return load_mulan_folder(_find_mulan_dir(name, data_root), name=name)

    loader.__name__ = f"load_{name.replace('-', '_')}"
    return loader


for _n, _d in MULAN_SETS.items():
    register_dataset(_n, kind="features", builtin=False, description=_d)(_make_mulan_loader(_n))


COCO_SUBSETS = {  # sizes after the loader drops images without annotations; val2017 is the test split
    "coco-tiny": ("coco_tiny_zzowenzz", "COCO-2017 subset, 80 labels: 80 train / 80 test (val2017) images"),
    "coco-mini": ("coco_mini_obmutescence", "COCO-2017 subset, 80 labels: 80 train / 79 test (val2017) images"),
    "tiny-coco": ("tiny_coco_enginbozaba", "COCO-2017 subset, 80 labels: 30 train / 6 test (val2017) images; "
                                           "a loader smoke test"),
}


def _make_coco_loader(name, folder):
    def loader(data_root=None):
        roots = data_roots(data_root)
        for r in roots:
            for cand in (r / folder, r):
                if (cand / "annotations" / "instances_train2017.json").exists() and (
                        cand.name == folder or cand == r / folder):
                    return load_coco_folder(cand, name=name)
        where = ", ".join(map(str, roots)) or "nowhere (no --data-root given and SPMLKIT_DATA unset)"
        raise ConfigError(f"dataset {name!r} is not built in; looked for {folder}/ under {where}. "
                          "Pass --data-root <folder> or set SPMLKIT_DATA.")

    return loader


for _n, (_f, _d) in COCO_SUBSETS.items():
    register_dataset(_n, kind="images", builtin=False, description=_d,
                     citation="Lin et al., ECCV 2014")(_make_coco_loader(_n, _f))


@register_dataset("voc2007", kind="images", builtin=False,
                  description="PASCAL VOC 2007 trainval, 20 labels: official train (2,500; 20% held out for "
                              "validation) / official val as test (2,508), the SPML papers' protocol",
                  citation="Everingham et al., IJCV 2010")
def load_voc2007(data_root=None) -> MultiLabelDataset:
    """``<root>/voc2007/`` (or ``<root>/``) holding ``VOCdevkit/VOC2007`` in the official
    layout; read by :func:`spmlkit.data.formats.load_voc` (Cole et al. §6.1 splits)."""
    roots = data_roots(data_root)
    for r in roots:
        for cand in (r / "voc2007" / "VOCdevkit" / "VOC2007", r / "VOCdevkit" / "VOC2007", r / "VOC2007"):
            if (cand / "ImageSets" / "Main").is_dir():
                return load_voc(cand, name="voc2007")
    where = ", ".join(map(str, roots)) or "nowhere (no --data-root given and SPMLKIT_DATA unset)"
    raise ConfigError(f"dataset 'voc2007' is not built in; looked for voc2007/VOCdevkit/VOC2007/ImageSets/Main "
                      f"under {where}. Pass --data-root <folder> or set SPMLKIT_DATA.")


def load_source(source: str, *, data_root=None, format: str | None = None, test: str | None = None,
                labels_xml: str | None = None, images: str | None = None, test_images: str | None = None,
                observed: bool | None = False, name: str | None = None, log=None,
                **table_options) -> MultiLabelDataset:
    """One source as a dataset: a registered dataset name, a Mulan folder under the data
    root found by its name, or a file/folder read by its format (``format``, else
    detected); :func:`spmlkit.data.load_any` adds the validation file and the warnings."""
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
    # presence-only options name their format (a records CSV is otherwise read as a table)
    fmt = format or ("presence-only" if {"region", "background", "rasters"} & set(table_options)
                     else detect_format(path))
    only = sorted({"categorical", "view", "val_blocks"} & set(table_options))
    if only and fmt != "presence-only":  # (options of the presence-only format: refused, never a TypeError)
        opts = " and ".join("--" + o.replace("_", "-") for o in only)
        raise ConfigError(f"{source}: {opts} appl{'ies' if len(only) == 1 else 'y'} to presence-only data (species "
                          "records with --region / --background), not to a table of features and labels")
    spec = FILE_FORMATS.lookup(fmt)
    if not spec.observed_auto:
        observed = bool(observed)
    return spec.load(path, test=test, name=name, observed=observed, labels_xml=labels_xml, images=images,
                     test_images=test_images, log=log, **table_options)
