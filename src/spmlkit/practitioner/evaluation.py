"""Evaluation that never pretends to have full labels.

:func:`evaluate_scores` and :func:`evaluate_label_sets` return a dict whose ``"labels"``
key says what the numbers were computed against:

* ``"full"`` — true labels ``Y``: mAP (Cole et al.'s metric), F1 of label sets;
* ``"observed"`` — observations ``Z`` only (a practitioner's own single-positive data):
  observed-positive mAP, recall@k of the observed positives, observed recall of the
  sets.  These are **not** full-label metrics and every printer in the package labels
  them "observed labels only".
"""
from __future__ import annotations

import numpy as np

from ..metrics import evaluate_scores, label_set_scores

OBSERVED_NOTE = "observed labels only (no full labels): not comparable to a full-label mAP"


def evaluate_label_sets(S, *, Y=None, Z=None) -> dict:
    """Quality of predicted label sets ``S`` ``(N, L)`` bool against ``Y`` or ``Z``."""
    from .labelsets import observed_set_scores

    if Y is not None:
        out = label_set_scores(Y, S)
        S = np.asarray(S, dtype=bool)
        out["empty_sets"] = 100.0 * float((~S.any(axis=1)).mean()) if len(S) else 0.0
        out["labels"] = "full"
        return out
    if Z is None:
        raise ValueError("evaluate_label_sets needs full labels Y or observations Z")
    out = observed_set_scores(Z, S)
    out["labels"] = "observed"
    return out


def evaluate_model(model, bundle, split: str = "test", *, empty: str = "exclude") -> dict:
    """Ranking quality of a saved model (:class:`spmlkit.practitioner.saved.SavedModel`) on
    a bundle split: what ``spml evaluate`` prints.

    With full labels: mAP (x100; classes without a positive excluded or, ``empty="zero"``,
    counted as AP 0) and per-label AUC-ROC, each label scored on its surveyed examples
    when the bundle has a label mask (issue 24); ``ap`` and ``auc`` map label names to
    per-label values (None where undefined).  On observed-only data (the user's own
    observations): never a full-label mAP, but :func:`evaluate_scores` against the
    observations with ``labels == "observed"``, plus the quality of the model's label
    sets (``label_sets``, :func:`evaluate_label_sets`).  Scores are the model's logits:
    probabilities of confident models round to exactly 1.0 and would create false ties."""
    from ..errors import SpmlError

    if bundle.label_names != model.label_names:
        raise SpmlError(f"the model's labels differ from the bundle's ({len(model.label_names)} vs {bundle.n_labels})")
    Y = bundle.labels(split)
    scores = model.decision_function(bundle.features(split, model.info.get("feature_set")))
    if Y is None:
        from scipy.special import expit

        Z = bundle.observations(split)
        ev = evaluate_scores(scores, Z=Z)
        ev["label_sets"] = evaluate_label_sets(model.label_sets_from_proba(expit(scores)), Z=Z)
        ev["split"] = split
        return ev
    ev = evaluate_scores(scores, Y=Y, empty=empty, mask=bundle.label_mask(split))
    return {"split": split, **{k: ev[k] for k in ("map", "n_classes", "n_empty_classes", "empty_classes")},
            "ap": dict(zip(model.label_names, ev["ap"])),
            **{k: ev[k] for k in ("auc_mean", "auc_median", "n_auc_classes", "masked")},
            "auc": dict(zip(model.label_names, ev["auc"]))}


def format_scores(ev: dict) -> str:
    """One line describing an :func:`evaluate_scores` result."""
    if ev["labels"] == "full":
        extra = (f" ({ev['n_empty_classes']} classes without positives "
                 f"{'excluded' if ev['empty_classes'] == 'exclude' else 'counted as 0'})"
                 if ev.get("n_empty_classes") else "")
        return f"mAP {ev['map']:.2f}{extra}"
    rec = ", ".join(f"{k} {v:.2f}" for k, v in ev.items() if k.startswith("observed_recall@"))
    return f"{OBSERVED_NOTE}: observed-positive mAP {ev['observed_map']:.2f}, {rec}"


def format_label_set_quality(ev: dict) -> str:
    if ev["labels"] == "full":
        return (f"micro-F1 {ev['micro_f1']:.2f}, macro-F1 {ev['macro_f1']:.2f}, example-F1 {ev['example_f1']:.2f}, "
                f"precision {ev['micro_precision']:.2f}, recall {ev['micro_recall']:.2f}, "
                f"{ev['mean_predicted_labels']:.2f} labels per example")
    neg = ev.get("observed_negative_rate")
    return (f"{OBSERVED_NOTE}: {ev['observed_recall']:.2f}% of observed positives predicted"
            + (f", {neg:.2f}% of observed negatives predicted" if neg is not None else "")
            + f", {ev['mean_predicted_labels']:.2f} labels per example, {ev['empty_sets']:.1f}% empty sets")
