"""A saved model's folder and its ``model.json`` checked without torch.

:func:`spmlkit.practitioner.saved.load_model` reads the weights (with torch) after these
checks; a command that takes a model (``spml predict``, ``evaluate``, ``explain``) calls
:func:`read_model_description` first, so a folder that is not a model, a damaged
``model.json`` or an unsupported format is one line before torch is imported (seconds
on a busy machine).  The layout is described in :mod:`spmlkit.practitioner.saved`.
"""
from __future__ import annotations

import math
from pathlib import Path

from .._version import __version__
from ..data.encoding import CovariateEncoding
from ..errors import ConfigError, CorruptFileError, SpmlError
from ..io import read_json

#: the model folder format this spmlkit reads and writes
MODEL_FORMAT = 1


def _weights_ok(weights, members) -> bool:
    """``member_weights`` of model.json: absent, or one finite weight >= 0 per member, not all 0."""
    if weights is None:
        return True
    return (isinstance(weights, list) and isinstance(members, int) and len(weights) == members
            and all(isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) and w >= 0
                    for w in weights) and sum(weights) > 0)


def _kinds_ok(kinds, members, known=None) -> bool:
    """``member_heads`` of model.json: absent, or one head kind per member (one of ``known``,
    the registered kinds, when given), each kind's members together."""
    if kinds is None:
        return True
    if not (isinstance(kinds, list) and isinstance(members, int) and len(kinds) == members
            and all(isinstance(k, str) and (known is None or k in known) for k in kinds)):
        return False
    order = list(dict.fromkeys(kinds))
    return kinds == [k for k in order for _ in range(kinds.count(k))]


def model_folder(path: str | Path) -> Path:
    """The folder holding ``model.json``: ``path`` itself or a run folder's ``model/``
    (a one-line :class:`SpmlError` when there is none)."""
    path = Path(path)
    if not path.exists():
        raise SpmlError(f"{path} not found (expected a run folder or its model/ folder)")
    if (path / "model.json").exists():
        return path
    if (path / "model").is_dir():
        return model_folder(path / "model")
    raise SpmlError(f"{path} is not a saved spmlkit model (no model.json); pass a run's model/ folder")


def read_model_description(path: str | Path, *, head_kinds=None) -> tuple[Path, dict]:
    """``(folder, model.json)`` of the model at ``path``, every key checked that the
    weights are read with (format, label names, head, sizes, members, feature names,
    covariate encoding; the members' head kinds against ``head_kinds`` when given); no torch."""
    path = model_folder(path)
    meta_path = path / "model.json"
    meta = read_json(meta_path)
    if not isinstance(meta, dict) or "format" not in meta:
        raise SpmlError(f"{meta_path} is not a spmlkit model description (no 'format' key)")
    if meta.get("format") != MODEL_FORMAT:
        raise ConfigError(f"{path}: model format {meta.get('format')!r} is not supported by spmlkit {__version__} "
                          f"(expects format {MODEL_FORMAT}); retrain or use the spmlkit version that wrote it "
                          f"({meta.get('spmlkit_version', 'unknown')})")
    members = meta.get("members", 1)
    bad = [k for k, ok in (("label_names", isinstance(meta.get("label_names"), list) and meta.get("label_names")
                             and all(isinstance(n, str) for n in meta["label_names"])),
                            ("head", isinstance(meta.get("head"), str)),
                            ("hidden", isinstance(meta.get("hidden"), int)),
                            ("n_features", isinstance(meta.get("n_features"), int)),
                            ("members", isinstance(members, int) and not isinstance(members, bool) and members >= 1),
                            ("member_weights", _weights_ok(meta.get("member_weights"), members)),
                            ("member_heads", _kinds_ok(meta.get("member_heads"), members, head_kinds)))
           if not ok]
    if bad:
        raise CorruptFileError(f"{meta_path}: damaged model description ({', '.join(bad)} missing or of the wrong "
                               "type)")
    names = meta["label_names"]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise CorruptFileError(f"{meta_path}: label {dup!r} is listed twice in label_names; the file was edited — "
                               "restore it or retrain")
    inp = meta.get("input") if isinstance(meta.get("input"), dict) else {}
    fnames = inp.get("feature_names")
    if fnames is not None and not (isinstance(fnames, list) and all(isinstance(n, str) for n in fnames)
                                   and len(set(fnames)) == len(fnames)):
        raise CorruptFileError(f"{meta_path}: input.feature_names is not a list of distinct column names")
    enc = inp.get("encoding")
    if enc is not None:
        encoded = CovariateEncoding.from_dict(enc, source=meta_path).feature_names
        if len(encoded) != meta["n_features"] or (fnames is not None and encoded != fnames):
            raise CorruptFileError(f"{meta_path}: input.encoding does not match the model's {meta['n_features']} "
                                   "feature columns; the file was edited — restore it or retrain")
    return path, meta
