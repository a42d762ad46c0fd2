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

import math

import numpy as np
from scipy.special import expit

from ..data.formats.tabular import describe_name_difference
from ..errors import SpmlError
from ..metrics import (average_precision_from_counts, evaluate_scores, label_set_scores, roc_auc_from_counts,
                       stream_rank_counts, streamed_observed_scores)
from ..training.scores import needs_streaming
from .labelsets import apply_rule_to_logits, model_rule_spec, observed_set_scores

OBSERVED_NOTE = "observed labels only (no full labels): not comparable to a full-label mAP"



class SetTally:
    """The counts behind :func:`spmlkit.practitioner.evaluation.evaluate_label_sets`,
    accumulated over row blocks: totals per label and one number per row, never
    an ``N × L`` array; :meth:`result` gives the same dict."""

    def __init__(self, n_labels: int, observed: bool):
        self.observed = observed
        self.tpc = np.zeros(n_labels, dtype=np.int64)
        self.truec = np.zeros(n_labels, dtype=np.int64)
        self.predc = np.zeros(n_labels, dtype=np.int64)
        self.f1i: list = []
        self.sizes: list = []
        self.pos_hits = self.neg_hits = self.n_pos = self.n_neg = 0

    def add(self, S: np.ndarray, truth: np.ndarray) -> None:
        S = np.asarray(S, dtype=bool)
        self.sizes.append(S.sum(axis=1))
        self.predc += S.sum(axis=0)
        if self.observed:
            pos, neg = truth == 1, truth == -1
            self.pos_hits += int((S & pos).sum())
            self.neg_hits += int((S & neg).sum())
            self.n_pos += int(pos.sum())
            self.n_neg += int(neg.sum())
            return
        Y = np.asarray(truth, dtype=bool)
        both = Y & S
        self.tpc += both.sum(axis=0)
        self.truec += Y.sum(axis=0)
        self.f1i.append(2 * both.sum(axis=1) / np.maximum(Y.sum(axis=1) + S.sum(axis=1), 1))

    def result(self) -> dict:
        size = np.concatenate(self.sizes) if self.sizes else np.zeros(0, dtype=np.int64)
        empty = 100.0 * float((size == 0).mean()) if len(size) else 0.0
        mean_size = float(size.mean()) if len(size) else 0.0
        if self.observed:
            return {"observed_recall": 100.0 * float(self.pos_hits) / max(self.n_pos, 1),
                    "observed_negative_rate": (100.0 * float(self.neg_hits) / self.n_neg) if self.n_neg else None,
                    "mean_predicted_labels": mean_size, "empty_sets": empty,
                    "n_observed_positives": self.n_pos, "n_observed_negatives": self.n_neg, "labels": "observed"}
        tp = int(self.tpc.sum())
        fp, fn = int(self.predc.sum()) - tp, int(self.truec.sum()) - tp
        micro_p, micro_r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
        f1c = 2 * self.tpc / np.maximum(self.truec + self.predc, 1)
        f1i = np.concatenate(self.f1i) if self.f1i else np.zeros(0)
        return {"micro_precision": 100 * micro_p, "micro_recall": 100 * micro_r,
                "micro_f1": 100 * (2 * micro_p * micro_r / max(micro_p + micro_r, 1e-12)),
                "macro_f1": 100 * float(f1c.mean()), "example_f1": 100 * float(f1i.mean()),
                "mean_predicted_labels": mean_size, "empty_sets": empty, "labels": "full"}


def evaluate_label_sets(S, *, Y=None, Z=None) -> dict:
    """Quality of predicted label sets ``S`` ``(N, L)`` bool against ``Y`` or ``Z``."""
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
    when the bundle has a label mask; ``ap`` and ``auc`` map label names to
    per-label values (None where undefined).  On observed-only data (the user's own
    observations): never a full-label mAP, but :func:`evaluate_scores` against the
    observations with ``labels == "observed"``, plus the quality of the model's label
    sets (``label_sets``, :func:`evaluate_label_sets`).  Scores are the model's logits:
    probabilities of confident models round to exactly 1.0 and would create false ties."""
    if bundle.label_names != model.label_names:
        raise SpmlError(f"{bundle.path}: the model's labels differ from the bundle's: "
                        + describe_name_difference(model.label_names, bundle.label_names, "label"))
    bundle._check_split(split)
    if bundle.size(split) == 0:
        raise SpmlError(f"{bundle.path} has no {split} split (0 examples); evaluate another --split, or prepare the "
                        f"data with a {split} split")
    Y = bundle.labels(split)
    X = model_features(model, bundle, split)  # matched to the model's columns by name

    if needs_streaming(1, len(X), len(model.label_names)) and not model.takes_images:
        return _evaluate_streamed(model, X, bundle, split, Y, empty=empty)
    scores = model.decision_function(X)
    if Y is None:
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


def model_features(model, bundle, split: str):
    """The bundle's features of ``split`` as the model takes them: a model that records the
    names of its input columns (``input.feature_names``) meets a bundle's features **by
    name** — reordered when the same columns come in another order, refused (one line,
    naming the columns) when they differ; never taken by position."""
    X = bundle.features(split, model.info.get("feature_set"))
    want = (model.input or {}).get("feature_names") if isinstance(model.input, dict) else None
    have = bundle.meta.get("feature_names") if bundle.kind == "features" else None
    if not want or not have or list(want) == list(have):
        return X
    if sorted(want) != sorted(have):
        raise SpmlError(f"{bundle.path}: the bundle's feature columns differ from the model's: "
                        + describe_name_difference(list(want), list(have), "feature column")
                        + "; prepare the data with the columns the model was trained on")
    return np.asarray(X)[:, [list(have).index(n) for n in want]]


def _evaluate_streamed(model, X, bundle, split: str, Y, *, empty: str) -> dict:
    """:func:`evaluate_model` for a split whose ``N × L`` scores are too large to hold:
    the model's logits in row blocks, metrics from streamed rank counts and label sets
    tallied block by block (the same numbers, tested)."""
    rows = model.stream_rows(16 * 2 ** 20)

    def chunks():
        return model.iter_decision_function(X, batch_rows=rows)

    if Y is None:
        Z = bundle.observations(split)
        (ev,) = streamed_observed_scores(Z, chunks)
        tally = SetTally(len(model.label_names), observed=True)
        spec = model_rule_spec(model)
        # a rule over the whole collection (expected_k per="batch") takes the split in one piece
        set_rows = max(len(X), 1) if model.label_sets.get("per") == "batch" else rows
        for start, block in model.iter_decision_function(X, batch_rows=set_rows):  # the rule on the float32
            S = apply_rule_to_logits(np.asarray(block, dtype=np.float32), spec)  # logits: no float64 block
            tally.add(S, Z.dense(slice(start, start + len(block))))
        ev["label_sets"] = tally.result()
        ev["split"] = split
        return ev
    mask = bundle.label_mask(split)
    rc = stream_rank_counts(Y, chunks, mask=mask)
    ap, auc = average_precision_from_counts(rc)[0] * 100.0, roc_auc_from_counts(rc)[0]
    missing = np.isnan(ap)
    vals = np.where(missing, 0.0, ap) if empty == "zero" else ap[~missing]
    ok = auc[~np.isnan(auc)]
    as_list = (lambda a: [None if math.isnan(v) else float(v) for v in a])
    return {"split": split, "map": float(vals.mean()) if vals.size else float("nan"), "n_classes": int(vals.size),
            "n_empty_classes": int(missing.sum()), "empty_classes": empty,
            "ap": dict(zip(model.label_names, as_list(ap))),
            "auc_mean": float(ok.mean()) if ok.size else float("nan"),
            "auc_median": float(np.median(ok)) if ok.size else float("nan"), "n_auc_classes": int(ok.size),
            "masked": mask is not None, "auc": dict(zip(model.label_names, as_list(auc)))}


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
