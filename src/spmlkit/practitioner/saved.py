"""A trained model in one folder: weights, label names, preprocessing and the config.

Layout::

    <model>/model.json     human-readable description (format version, labels, method, config,
                           label-set rule and thresholds, what the model takes as input)
    <model>/weights.pt     head weights and preprocessing tensors (standardisation mean/std)
    <model>/weights.pt.sha256

``load_model`` (also ``spmlkit.load``) checks the format version (an incompatible
folder gives a clear error) and the checksum (a corrupted file is reported, not loaded).

``model.json`` keys beyond the weights' shapes:

``label_sets``
    the default rule turning probabilities into label sets (see
    :mod:`spmlkit.practitioner.labelsets`): ``{"rule": "threshold", "threshold": 0.5}``, or
    ``{"rule": "per_label", "thresholds": [...], "tuning": {...}}`` when thresholds were
    tuned on a fully labelled validation split; ``"k"`` when the expected number of
    labels is known.
``input`` — the extension point for image models
    ``{"kind": "features"}``: the head takes feature vectors (``n_features`` wide).
    ``{"kind": "images", "feature_set": NAME, "backbone": NAME, "image_size": INT, ...}``:
    the head was trained on cached backbone features (``spml features``); predicting
    from image files calls ``spmlkit.features.extract_image_features(paths, backbone=...,
    image_size=..., weights=..., **input["extractor_options"])`` first (see
    :mod:`spmlkit.practitioner.inference`).  The keys of ``features/<name>/meta.json`` written by
    ``spml features`` (backbone, image_size, weights, dim, ...) are copied here.
    A fine-tuned backbone adds ``"backbone_weights": "<file in this folder>"`` (written
    with :func:`spmlkit.training.checkpoint.save_checkpoint`, so it is checksummed too),
    passed to the extractor as ``weights=<absolute path>``.
    ``{"kind": "features", "feature_names": [...], "encoding": {...}, "places": {...}}``:
    a model trained on covariates records how the raw covariates became its
    feature columns (:class:`spmlkit.data.encoding.CovariateEncoding`: covariate names,
    the levels of the categorical ones), so it predicts from a table in the training
    layout, and what its training places were (``places``: columns, CRS, the raster
    grid they came from).  Readers ignore keys they do
    not know, so such additions keep ``MODEL_FORMAT``; a change that old readers would
    misread must bump it.

A *fine-tuned* model (setting ``finetune``; ``model.json`` has an ``image`` entry:
backbone name, head, decoder sizes, input size) holds the whole backbone + head state
dict and maps image files to logits; rebuilding it needs the backbone's architecture
only (for ``efficientnet-lite0`` the ``efficientnet-lite-pytorch`` package), never the
ImageNet weights file.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from scipy.special import expit

from .. import ownership
from .._version import __version__
from ..data.encoding import CovariateEncoding
from ..errors import CorruptFileError, DataFormatError, SpmlError
from ..features.transforms import ImageSet, image_loader
from ..io import read_json
from ..ownership import write_json
from ..models.heads import HEADS, MixedHeads, build_head
from ..models.image import build_image_model
from ..training.checkpoint import load_checkpoint, save_checkpoint
from ..training.recipe import mean_probability_logits
from .inference import image_features
from .labelsets import apply_rule
from .model_folder import MODEL_FORMAT, read_model_description



@dataclass
class SavedModel:
    label_names: list[str]
    head: str
    hidden: int
    n_features: int
    state: dict  # head state of one member (no leading member axis), or of ``members`` stacked members
    mean: np.ndarray | None = None
    std: np.ndarray | None = None
    method: str = ""
    params: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)  # anything else worth keeping (bundle, metrics)
    label_sets: dict = field(default_factory=lambda: {"rule": "threshold", "threshold": 0.5})
    input: dict = field(default_factory=lambda: {"kind": "features"})
    path: Path | None = field(default=None, compare=False)  # folder it was loaded from
    image: dict | None = None  # fine-tuned image models: ImageModel.spec() + image_size; state = full state dict
    #: where predictions are computed (``spml evaluate/predict --device``); files stay device-free
    device: "str | torch.device" = field(default="cpu", compare=False, repr=False)
    #: > 1: an ensemble (a recipe such as ``auto``): ``state`` holds that many stacked heads
    #: and the prediction is the mean of their probabilities
    members: int = 1
    #: the members' weights (a recipe that weighs them); None: equal weights
    member_weights: list | None = None
    #: the members' head kinds when they differ (a recipe of linear and MLP members,
    #: :class:`spmlkit.models.heads.MixedHeads`; state keys ``<kind>.<parameter>``); None: all ``head``
    member_heads: list | None = None

    @property
    def takes_images(self) -> bool:
        """True when :meth:`predict_proba` accepts a list of image file paths."""
        return self.image is not None or (self.input or {}).get("kind") == "images"

    @classmethod
    def from_training_state(cls, state: dict, *, label_names, config: dict, method: str, params: dict,
                            **fields) -> "SavedModel":
        """A model from ``RunResult.state`` (``train_linear(..., keep_state=True)``)."""
        head = state["head"]
        members = int(state.get("members", 1))
        kinds = state.get("member_heads")
        if kinds:  # mixed kinds: every group is stacked (G_k, D, ...)
            first = next(k for k in head if k.endswith(("linear.weight", "hidden.weight", "n_features")))
            n_features = int(head[first].flatten()[0] if first.endswith("n_features") else head[first].shape[1])
        elif "n_features" in head:  # a tree head (no weight matrix): it records its input width
            n_features = int(head["n_features"].flatten()[0])
        else:
            axis = 0 if members == 1 else 1  # stacked members: (G, D, ...)
            n_features = int(head["weight"].shape[axis] if "weight" in head else head["hidden.weight"].shape[axis])
        kind = state.get("head_kind", config.get("head", "linear"))  # a recipe's members may not use the run's head
        return cls(label_names=list(label_names), head="mixed" if kinds else kind,
                   hidden=int(config.get("hidden", 512)), n_features=n_features, state=head, mean=state["mean"],
                   std=state["std"], method=method, params=dict(params), config=dict(config), members=members,
                   member_weights=state.get("member_weights"), member_heads=list(kinds) if kinds else None, **fields)

    def _module(self):
        try:
            return self._build_module()
        except (RuntimeError, KeyError, ValueError, TypeError, AttributeError) as exc:
            where = self.path if self.path is not None else "model"
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise CorruptFileError(f"{where}: model.json does not match weights.pt ({first}); the files were "
                                   "edited or mixed up — retrain or restore them") from None

    def _build_module(self):
        if self.image is not None:
            with torch.device("cpu"):  # built on the CPU (the default device is never used), then moved
                mod = build_image_model(self.image, image_size=int(self.image["image_size"]), pretrained=False)
            mod.load_state_dict(self.state)
            return mod.to(self.device).eval()
        if self.member_heads:
            mod = MixedHeads(list(self.member_heads), self.n_features, len(self.label_names), hidden=self.hidden)
            mod.load_state_dict(self.state)
            return mod.to(self.device).eval()
        gen = [torch.Generator(device="cpu").manual_seed(0)] * self.members
        mod = build_head(self.head, self.n_features, len(self.label_names), gen, hidden=self.hidden)
        mod.load_state_dict(self.state if self.members > 1 else {k: v.unsqueeze(0) for k, v in self.state.items()})
        mod.to(self.device).eval()
        return mod

    @property
    def encoding(self):
        """The covariate encoding the model was trained with
        (:class:`spmlkit.data.encoding.CovariateEncoding`: raw covariates, categorical
        levels), or None for a model trained on ready-made features."""
        enc = (self.input or {}).get("encoding")
        if enc is None:
            return None
        return CovariateEncoding.from_dict(enc, source=None if self.path is None else self.path / "model.json")

    def features_from_table(self, table, *, source=None) -> np.ndarray:
        """Features ``(N, D)`` from a table of named columns (a pandas DataFrame or a dict
        of columns), matched **by name**: the raw covariates of the training layout when
        the model records its covariate encoding (categorical levels one-hot encoded as in
        training; an unseen level is an error naming the column and the level), else the
        model's feature names.  A missing column is a one-line :class:`DataFormatError`
        naming it."""
        cols = [str(c) for c in (table.columns if hasattr(table, "columns") else table.keys())]

        def column(name):
            try:
                return np.asarray(table[name], dtype=np.float64)
            except (TypeError, ValueError):
                raise DataFormatError(source, f"column {name!r} is not numeric") from None

        enc = self.encoding
        names = (self.input or {}).get("feature_names")
        if enc is not None and (all(c in cols for c in enc.covariates) or names is None
                                or not all(n in cols for n in names)):
            missing = [c for c in enc.covariates if c not in cols]
            if missing:
                raise DataFormatError(source, f"missing covariate column {missing[0]!r}; the model was trained on "
                                              f"{', '.join(enc.covariates)}")
            raw = np.column_stack([column(c) for c in enc.covariates])
            return enc.transform(raw, unseen="raise", source=source)
        if names is None:
            raise DataFormatError(source, "this model records no column names (trained on unnamed arrays): pass an "
                                          f"array of {self.n_features} columns in the training order")
        missing = [n for n in names if n not in cols]
        if missing:
            raise DataFormatError(source, f"missing feature column {missing[0]!r} (the model's columns: "
                                          f"{', '.join(names[:8])}{', ...' if len(names) > 8 else ''})")
        return np.column_stack([column(n) for n in names]).astype(np.float32)

    @staticmethod
    def _is_table(X) -> bool:
        return isinstance(X, dict) or (hasattr(X, "columns") and hasattr(X, "__getitem__") and not hasattr(X, "dtype"))

    def stream_rows(self, budget_bytes: int = 64 * 2 ** 20) -> int:
        """Rows per block so that a block of logits takes at most ``budget_bytes``."""
        return max(1, min(8192, budget_bytes // (4 * max(len(self.label_names), 1))))

    def _feature_matrix(self, X):
        """``X`` as an ``(N, n_features)`` matrix: a table of named columns converted
        (:meth:`features_from_table`), anything else checked for its shape (one line)."""
        if self._is_table(X):
            X = self.features_from_table(X)
        if not hasattr(X, "shape"):
            X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise DataFormatError(None, f"features have shape {X.shape}; this model expects (N, {self.n_features})")
        return X

    def iter_decision_function(self, X, batch_rows: int = 8192):
        """``(start, logits)`` for consecutive blocks of ``batch_rows`` rows of features
        ``X`` ``(N, D)`` (a memory-mapped ``X`` is read block by block, never whole): the
        streaming form of :meth:`decision_function`, memory O(batch_rows x L)."""
        X = self._feature_matrix(X)
        mod = self._module()
        with torch.no_grad():
            for s in range(0, len(X), batch_rows):
                block = np.array(X[s:s + batch_rows], dtype=np.float32)
                if not np.isfinite(block).all():
                    r = s + int(np.argwhere(~np.isfinite(block))[0, 0])
                    raise DataFormatError(None, f"non-finite feature value in row {r + 1}")
                x = torch.from_numpy(block)
                if self.mean is not None:
                    x = (x - torch.from_numpy(self.mean)) / torch.from_numpy(self.std)
                logits = mod(x.to(self.device))
                if self.members > 1:  # an ensemble: the logit of the members' (weighted) mean probability
                    yield s, mean_probability_logits(logits, self.member_weights).float().cpu().numpy()
                else:
                    yield s, logits[0].cpu().numpy()

    def decision_function(self, X, batch_rows: int = 8192) -> np.ndarray:
        """Logits ``(N, L)`` for features ``X`` ``(N, D)`` (a memory-mapped ``X`` is read in
        chunks of ``batch_rows`` rows, never whole), a table of named columns (see
        :meth:`features_from_table`: the raw covariates of the training layout) or, when
        :attr:`takes_images`, a list of image file paths."""
        if isinstance(X, (list, tuple)) and (not X or isinstance(X[0], (str, Path))):
            return self._image_logits([str(p) for p in X])
        if self.image is not None:
            raise DataFormatError(None, "this is a fine-tuned image model: pass a list of image file paths")
        X = self._feature_matrix(X)
        out = np.empty((X.shape[0], len(self.label_names)), dtype=np.float32)
        for s, block in self.iter_decision_function(X, batch_rows):
            out[s:s + len(block)] = block
        return out

    def _image_logits(self, paths: list[str], batch_size: int = 16) -> np.ndarray:
        """Logits for image files: the fine-tuned network, or the backbone recorded in
        ``input`` (see :func:`spmlkit.practitioner.inference.image_features`) followed by the head."""
        if not self.takes_images:
            raise DataFormatError(None, "this model was trained on feature vectors, not on images; pass features")
        if self.image is None:
            return self.decision_function(image_features(self, paths, batch_size=batch_size))
        net, size = self._module(), int(self.image["image_size"])
        rows = [list(range(s, min(s + batch_size, len(paths)))) for s in range(0, len(paths), batch_size)]
        out = []
        with torch.no_grad():
            for (x,) in image_loader(ImageSet(paths, ("eval",), size), rows):
                out.append(net(x.to(self.device))[0].cpu())
        return torch.cat(out).numpy() if out else np.zeros((0, len(self.label_names)), np.float32)

    def predict_proba(self, X) -> np.ndarray:
        """Per-label probabilities ``(N, L)`` (independent sigmoids, float64) for what
        :meth:`decision_function` takes: features, a table of named columns in the
        training layout (raw covariates), or image paths."""
        return expit(self.decision_function(X).astype(np.float64))

    @property
    def classes_(self) -> np.ndarray:
        return np.asarray(self.label_names)

    def predict(self, X, *, rule: str | None = None, threshold=None, k=None, min_labels=None) -> np.ndarray:
        """Label sets as an ``(N, L)`` 0/1 int indicator matrix, by the model's stored rule
        (``label_sets``) unless overridden (see :func:`spmlkit.practitioner.labelsets.label_sets`)."""
        return self.label_sets_from_proba(self.predict_proba(X), rule=rule, threshold=threshold, k=k,
                                          min_labels=min_labels).astype(np.int64)

    def label_sets_from_proba(self, P, **overrides) -> np.ndarray:
        spec = dict(self.label_sets)
        if overrides.get("rule") not in (None, spec.get("rule")):
            spec = {k: v for k, v in spec.items() if k in ("k", "thresholds", "min_labels")}
        return apply_rule(P, spec, **overrides)

    def predict_label_sets(self, X, **overrides) -> list[list[str]]:
        """The label names of each example's set."""
        S = self.label_sets_from_proba(self.predict_proba(X), **overrides)
        return [[self.label_names[j] for j in np.flatnonzero(row)] for row in S]


def is_model_folder(path: str | Path) -> bool:
    """True when ``path`` holds a model spmlkit saved (a ``model.json`` with its format)."""
    try:
        meta = read_json(Path(path) / "model.json")
    except (OSError, SpmlError):
        return False
    return isinstance(meta, dict) and "format" in meta and "label_names" in meta


def _register_model_kind() -> None:
    ownership.register_kind("model", "a spmlkit model", is_ours=is_model_folder,
                            layout=("model.json", "weights.pt", "weights.pt.sha256"))


_register_model_kind()


def save_model(model: SavedModel, path: str | Path) -> Path:
    """Write ``model`` into the folder ``path``: a new or empty folder, or a model spmlkit
    saved before (replaced); a folder holding anything else is refused in one line
    (:class:`ConfigError`) and nothing is written into it."""
    # a run's model/ (inside its run folder), or a folder of its own: new, empty or a model spmlkit saved
    path = ownership.folder(path, "model", option="model folder")
    def tensor(a):
        return None if a is None else torch.as_tensor(np.asarray(a, dtype=np.float32))

    # tensors only, so loading needs no unpickling of arbitrary objects (weights_only=True)
    save_checkpoint({"state": {k: torch.as_tensor(v).cpu() for k, v in model.state.items()},  # device-free
                     "mean": tensor(model.mean), "std": tensor(model.std)}, path / "weights.pt")
    write_json(path / "model.json", {
        "format": MODEL_FORMAT, "spmlkit_version": __version__, "label_names": model.label_names,
        "head": model.head, "hidden": model.hidden, "n_features": model.n_features, "method": model.method,
        "params": model.params, "config": model.config, "info": model.info, "label_sets": model.label_sets,
        "input": model.input, **({"image": model.image} if model.image is not None else {}),
        **({"members": model.members} if model.members != 1 else {}),
        **({"member_weights": [float(w) for w in model.member_weights]} if model.member_weights is not None else {}),
        **({"member_heads": list(model.member_heads)} if model.member_heads else {})})
    return path


def _check_weights(path: Path, w: dict) -> None:
    """Every weight a floating-point tensor of finite values, the standardisation ``std``
    positive: a model whose weights are NaN or integers would predict NaN (or garbage)
    and exit 0."""
    items = [(f"state[{k!r}]", v) for k, v in w["state"].items()]
    items += [(k, w.get(k)) for k in ("mean", "std") if w.get(k) is not None]
    for name, t in items:
        if not isinstance(t, torch.Tensor):
            raise CorruptFileError(f"{path}: {name} is a {type(t).__name__}, not a tensor; restore the file or "
                                   "retrain")
        if name.endswith("num_batches_tracked']"):  # BatchNorm's step counter is an integer by design
            continue
        if not t.is_floating_point():
            raise CorruptFileError(f"{path}: {name} holds {str(t.dtype).replace('torch.', '')} values, expected "
                                   "floating-point weights; restore the file or retrain")
        if not bool(torch.isfinite(t).all()):
            raise CorruptFileError(f"{path}: {name} holds NaN or infinite values; the model cannot predict — "
                                   "restore the file or retrain")
    std = w.get("std")
    if std is not None and bool((std <= 0).any()):
        raise CorruptFileError(f"{path}: the standardisation std has values <= 0; restore the file or retrain")


def _finite_numbers(obj) -> bool:
    """True when no number anywhere in ``obj`` (JSON: dicts, lists, numbers) is NaN or infinite."""
    if isinstance(obj, dict):
        return all(_finite_numbers(v) for v in obj.values())
    if isinstance(obj, list):
        return all(_finite_numbers(v) for v in obj)
    return not isinstance(obj, float) or math.isfinite(obj)


def _check_members_and_rule(meta_path: Path, meta: dict, state: dict) -> None:
    """An edited ``model.json`` may not claim members its weights do not hold
    (``members: 1000000000`` would build that many heads), nor give its label-set rule a
    NaN or infinite number (a NaN threshold gives every example an empty set)."""
    m, kinds = meta.get("members", 1), meta.get("member_heads")

    def stacked(key: str) -> int:  # members stacked in this tensor (mixed heads: '<kind>.<param>', one kind's)
        return kinds.count(key.split(".", 1)[0]) if kinds else m

    if m > 1 and any(t.ndim == 0 or t.shape[0] != stacked(k) for k, t in state.items() if isinstance(t, torch.Tensor)):
        raise CorruptFileError(f"{meta_path}: members is {m:,} but the weights do not hold that many stacked "
                               "members; the file was edited — restore it or retrain")
    if not _finite_numbers(meta.get("label_sets")):
        raise CorruptFileError(f"{meta_path}: label_sets holds a NaN or infinite number (an edited threshold?); "
                               "restore the file or retrain")


def load_model(path: str | Path) -> SavedModel:
    """The model saved in ``path`` (a model folder or a run folder holding ``model/``):
    ``model.json`` checked first (:func:`spmlkit.practitioner.model_folder.read_model_description`),
    then the weights' checksum and values."""
    path, meta = read_model_description(path, head_kinds=HEADS)
    w = load_checkpoint(path / "weights.pt")
    if not isinstance(w, dict) or not isinstance(w.get("state"), dict):
        raise CorruptFileError(f"{path / 'weights.pt'}: not a spmlkit model's weights")
    _check_weights(path / "weights.pt", w)
    _check_members_and_rule(path / "model.json", meta, w["state"])

    def array(t):
        return None if t is None else np.asarray(t, dtype=np.float32)

    return SavedModel(label_names=meta["label_names"], head=meta["head"], hidden=meta["hidden"],
                      n_features=meta["n_features"], state=w["state"], mean=array(w["mean"]), std=array(w["std"]),
                      method=meta.get("method", ""), params=meta.get("params", {}), config=meta.get("config", {}),
                      info=meta.get("info", {}),
                      label_sets=meta.get("label_sets") or {"rule": "threshold", "threshold": 0.5},
                      input=meta.get("input") or {"kind": "features"}, path=path, image=meta.get("image"),
                      members=meta.get("members", 1), member_weights=meta.get("member_weights"),
                      member_heads=meta.get("member_heads"))
