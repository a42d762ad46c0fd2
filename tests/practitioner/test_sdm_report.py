"""Per-species records-against-background table (spmlkit.practitioner.sdm_report): counts,
AUC and thresholds on a hand-made bundle whose scores are known."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.practitioner import sdm_report


class _Bundle:
    """The bundle methods species_metrics reads (records + background, no surveyed labels)."""

    def __init__(self, Z):
        self.Z = Z
        self.meta = {"sizes": {s: len(z) for s, z in Z.items()}, "background_rows": 1}

    def observations(self, split):
        return self.Z[split]

    def labels(self, split):
        return None


def test_species_metrics_counts_and_auc(monkeypatch):
    from spmlkit.sparse_labels import SparseLabels

    Ztr = SparseLabels.from_dense(np.array([[1, 0], [0, 1], [1, 0], [0, 0], [0, 0]], dtype=np.int8))
    Zva = SparseLabels.from_dense(np.array([[1, 0], [0, 0], [0, 0], [0, 1]], dtype=np.int8))
    s = {"train": np.array([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.1, 0.6], [0.4, 0.2]]),
         "val": np.array([[0.8, 0.2], [0.3, 0.9], [0.9, 0.1], [0.5, 0.5]])}
    monkeypatch.setattr(sdm_report, "_scores", lambda model, bundle, split: s[split])
    model = type("M", (), {"label_names": ["a", "b"]})()
    out = sdm_report.species_metrics(model, _Bundle({"train": Ztr, "val": Zva}))
    va = out["species"]["a"]["val"]
    assert (va["records"], va["background"]) == (1, 2) and va["auc"] == 0.5  # 0.8 vs 0.3, 0.9
    assert out["species"]["b"]["val"]["auc"] == 0.5 and out["species"]["b"]["train"]["records"] == 1
    assert out["species"]["a"]["train"]["auc"] == 1.0  # 0.9, 0.7 vs 0.1, 0.4
    th = out["thresholds"]["a"]
    assert th["p10_training_presence"]["threshold"] == 0.7 and th["max_tss"]["on"] == "val"
    lines = sdm_report.summary_lines(out)
    assert any("1 records, 2 background" in line for line in lines)
    assert "mean AUC" in sdm_report.summary_lines(out, max_species=1)[1]


def test_a_refitted_model_validation_is_the_selected_models_and_its_thresholds_use_train_and_val(monkeypatch):
    """Refit (spmlkit.practitioner.refit): validation scored by the model chosen there; both
    thresholds from the refitted model on every row it trained on (train + val)."""
    from spmlkit.sparse_labels import SparseLabels

    Ztr = SparseLabels.from_dense(np.array([[1], [0], [1], [0]], dtype=np.int8))
    Zva = SparseLabels.from_dense(np.array([[1], [0], [0]], dtype=np.int8))
    refitted = type("M", (), {"label_names": ["a"]})()
    selected = type("S", (), {"label_names": ["a"]})()
    s = {(refitted, "train"): np.array([[0.9], [0.2], [0.6], [0.5]]), (refitted, "val"): np.array([[0.3], [0.1], [0.4]]),
         (selected, "val"): np.array([[0.8], [0.7], [0.1]])}
    monkeypatch.setattr(sdm_report, "_scores", lambda model, bundle, split: s[(model, split)])
    out = sdm_report.species_metrics(refitted, _Bundle({"train": Ztr, "val": Zva}), selected=selected)
    assert out["species"]["a"]["val"]["auc"] == 1.0  # the selected model: 0.8 vs 0.7, 0.1 (the refitted: 0.5)
    th = out["thresholds"]["a"]
    # training records 0.9, 0.6 and validation's 0.3: all three kept at or above 0.3 (only 0.9, 0.6 for train alone)
    assert th["p10_training_presence"]["threshold"] == 0.3
    # records 0.9, 0.6, 0.3 against background 0.2, 0.5, 0.1, 0.4: TSS 2/3 - 0 at t = 0.6 (and at 0.9: 1/3)
    assert th["max_tss"]["on"] == "train+val" and th["max_tss"]["tss"] == pytest.approx(2 / 3)
    assert th["max_tss"]["background_above"] == 0.0
