"""Streamed scores (issue 32): a run whose logits are streamed in row chunks (a
:class:`ScoreView`) gives the same selection, test mAP, label recovery and label-set
quality as the run that holds them whole; top-k by partial selection equals a stable
descending sort."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import spmlkit.metrics as metrics
from spmlkit.config import TrainConfig
from spmlkit.training.scores import ScoreView, as_logits, top_k_rows, top_labels


def _force_streaming(monkeypatch):
    monkeypatch.setattr(metrics, "DENSE_SCORE_BYTES", 0)
    monkeypatch.setattr("spmlkit.training.scores.DENSE_SCORE_BYTES", 0)
    monkeypatch.setattr("spmlkit.training.linear.STREAM_CHUNK_BYTES", 4 * 2 * 5 * 7)  # 7-row chunks


@pytest.mark.parametrize("selection", ["map", "observed_map"])
def test_a_streamed_run_equals_the_whole_run(toy_bundle, monkeypatch, selection):
    from spmlkit.training.linear import train_linear

    cfg = TrainConfig(method="an", epochs=3, batch_size=8, selection=selection)
    whole = train_linear(toy_bundle, cfg, lrs=[1e-2, 1e-3], seeds=[0, 1])
    calls = []
    real = ScoreView.chunks

    def counted(self):
        calls.append(self.shape)
        return real(self)

    monkeypatch.setattr(ScoreView, "chunks", counted)
    _force_streaming(monkeypatch)
    streamed = train_linear(toy_bundle, cfg, lrs=[1e-2, 1e-3], seeds=[0, 1])
    assert calls, "nothing was streamed"
    for a, b in zip(whole, streamed):
        assert a.best_epoch == b.best_epoch
        np.testing.assert_allclose(a.val_history, b.val_history, rtol=0, atol=1e-9)
        assert a.test_map == pytest.approx(b.test_map, abs=1e-9)
        assert a.train_map == pytest.approx(b.train_map, abs=1e-9)
        np.testing.assert_allclose(np.array(a.test_ap, float), np.array(b.test_ap, float), rtol=0, atol=1e-9)


def test_a_streamed_practitioner_run_saves_the_same_rule_and_quality(toy_bundle, tmp_path, monkeypatch):
    """The label-set step streams from the saved model when the logits are not kept: the
    rule (k estimated by argmax) and the label-set quality tallied block by block equal the
    whole-matrix computation.  The model is saved before that step."""
    import json

    from spmlkit.practitioner.run_folder import run_training

    cfg = TrainConfig(method="an", epochs=2, batch_size=8, selection="observed_map")
    run_training(toy_bundle, cfg, tmp_path / "whole", log=None)
    from spmlkit.practitioner.saved import SavedModel

    _force_streaming(monkeypatch)
    monkeypatch.setattr("spmlkit.training.linear.needs_streaming", lambda *a: True)
    streamed_from_model = []
    real = SavedModel.iter_decision_function

    def counted(self, X, **kw):
        streamed_from_model.append(len(X))
        return real(self, X, **kw)

    monkeypatch.setattr(SavedModel, "iter_decision_function", counted)
    run_training(toy_bundle, cfg, tmp_path / "streamed", log=None)
    assert streamed_from_model, "the label-set step did not stream from the saved model"
    a, b = (json.loads((tmp_path / r / "result.json").read_text()) for r in ("whole", "streamed"))
    assert a["test_map"] == pytest.approx(b["test_map"], abs=1e-9)
    assert a["label_sets"]["rule"] == b["label_sets"]["rule"]
    assert a["label_sets"].get("k") == pytest.approx(b["label_sets"].get("k"))
    for ra, rb in zip(a["label_set_quality"], b["label_set_quality"]):
        assert ra["rule"] == rb["rule"]
        for key, v in ra.items():
            if isinstance(v, float):
                assert rb[key] == pytest.approx(v, abs=1e-9), key


def test_the_model_is_saved_before_the_label_set_step(toy_bundle, tmp_path, monkeypatch):
    """A label-set step that fails (e.g. out of memory) leaves the trained model on disk."""
    import spmlkit.practitioner.run_folder as run_mod
    from spmlkit.practitioner.saved import load_model

    def boom(*a, **k):
        raise MemoryError("label sets")

    monkeypatch.setattr(run_mod, "_label_sets", boom)
    with pytest.raises(MemoryError):
        run_mod.run_training(toy_bundle, TrainConfig(method="an", epochs=1, batch_size=8), tmp_path / "r", log=None)
    model = load_model(tmp_path / "r" / "model")
    assert model.label_sets["rule"] == "top_k" and "provisional" in model.label_sets["note"]


def test_score_view_member_and_dense():
    S = torch.arange(2 * 5 * 3, dtype=torch.float32).view(2, 5, 3)
    view = ScoreView(lambda: ((s, S[:, s:s + 2]) for s in range(0, 5, 2)), S.shape)
    assert torch.equal(as_logits(view), S) and torch.equal(view.member(1).dense()[0], S[1])
    assert as_logits(S) is S


def test_top_k_rows_is_a_stable_descending_sort_prefix():
    rng = np.random.default_rng(0)
    for _ in range(200):
        a = np.round(rng.random((int(rng.integers(1, 9)), int(rng.integers(1, 12)))) * rng.choice([2, 5, 50]))
        k = int(rng.integers(0, a.shape[1] + 2))
        idx, val = top_k_rows(a, k)
        want = np.argsort(-a, axis=1, kind="stable")[:, :k]
        assert np.array_equal(idx, want) and np.array_equal(val, np.take_along_axis(a, want, 1))
    view = ScoreView(lambda: iter([(0, torch.tensor([[[0.1, 0.9, 0.5]]]))]), (1, 1, 3))
    assert top_labels(view, 2)[0].tolist() == [[1, 2]]
