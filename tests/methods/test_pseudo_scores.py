"""VLPL and GPR with user-supplied pseudo-label scores (Xing et al. 2023; Tran et al. 2025)."""
import warnings

import numpy as np
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from spmlkit.losses import get_loss
from spmlkit.methods import Batch, build_method
from spmlkit.methods.pseudo_scores import load_pseudo_scores, pseudo_labels_from_scores
from spmlkit.training import train_linear
from tests.helpers.factories import train_context


def teacher_scores(bundle, epochs=300):
    """Scores from *another* model: a logistic regression fitted with full labels on the
    training features (standing in for a vision-language model's label scores)."""
    X = torch.as_tensor(np.array(bundle.features("train"), dtype=np.float64))
    X = (X - X.mean(0)) / X.std(0).clamp_min(1e-6)
    Y = torch.as_tensor(np.array(bundle.labels("train"), dtype=np.float64))
    g = torch.Generator().manual_seed(0)
    W = torch.zeros(X.shape[1], Y.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(Y.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([W, b], lr=0.05)
    for _ in range(epochs):
        opt.zero_grad()
        torch.nn.functional.binary_cross_entropy_with_logits(X @ W + b, Y).backward()
        opt.step()
    noise = torch.randn(Y.shape, generator=g, dtype=torch.float64) * 0.5  # an imperfect teacher
    return torch.sigmoid(X @ W + b + noise).detach().numpy()


def test_pseudo_labels_from_scores():
    S = np.array([[0.9, 0.8, 0.7, 0.2, 0.1, 0.05],
                  [0.4, 0.45, 0.2, 0.6, 0.3, 0.1]])
    Z = np.array([[1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1]])
    P = pseudo_labels_from_scores(S, Z, threshold=0.5, top_k=2, negative_ratio=0.0)
    assert P.tolist() == [[0, 1, 0, 0, 0, 0], [0, 0, 0, 1, 0, 0]]  # top 2 >= 0.5; observed entries stay 0
    P = pseudo_labels_from_scores(S, Z, threshold=0.3, top_k=None, negative_ratio=0.34)
    assert P.tolist() == [[0, 1, 1, 0, -1, -1], [1, 1, -1, 1, 1, 0]]
    assert P.dtype == np.int8


def test_load_pseudo_scores_checks_the_file(tmp_path):
    good = tmp_path / "s.npy"
    np.save(good, np.full((3, 2), 0.5, dtype=np.float32))
    assert load_pseudo_scores(good, 3, 2).shape == (3, 2)
    with pytest.raises(ConfigError, match=r"expected \(4, 2\)"):
        load_pseudo_scores(good, 4, 2)
    bad = tmp_path / "nan.npy"
    np.save(bad, np.array([[0.1, np.nan]]))
    with pytest.raises(ConfigError, match="row 1, label column 2"):
        load_pseudo_scores(bad, 1, 2)
    obj = tmp_path / "obj.npy"
    np.save(obj, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ConfigError, match="not a readable"):
        load_pseudo_scores(obj, 1, 1)
    with pytest.raises(ConfigError, match="not found"):
        load_pseudo_scores(tmp_path / "missing.npy", 1, 1)


def test_batch_inputs_follow_the_batch_rows(tmp_path):
    S = np.array([[0.9, 0.1], [0.1, 0.9], [0.9, 0.9]])
    Z = torch.tensor([[0, 1], [1, 0], [1, 0]], dtype=torch.int8)
    np.save(tmp_path / "s.npy", S)
    m = build_method("vlpl", pseudo_scores=str(tmp_path / "s.npy"))
    m.setup(train_context(Z, G=2))
    idx = torch.tensor([[2, 0], [1, 2]])
    inputs = m.components[0].batch_inputs(Batch(inputs=None, index=idx, observed=Z[idx]), torch.zeros(2, 2, 2))
    assert inputs["pseudo_labels"].tolist() == [[[0, 1], [1, 0]], [[0, 1], [0, 1]]]


def test_without_scores_vlpl_trains_like_em(toy_bundle):
    cfg = TrainConfig(method="em", epochs=3, lr=1e-2, params={"alpha": 0.1})
    em = train_linear(toy_bundle, cfg)[0]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        vlpl = train_linear(toy_bundle, cfg.replace(method="vlpl", params={}))[0]
    assert any("pseudo-scores" in str(x.message) for x in w)
    assert vlpl.val_history == em.val_history


@pytest.mark.parametrize("name", ["vlpl", "gpr"])
def test_scores_from_another_model_help(toy_bundle, tmp_path, name):
    S = teacher_scores(toy_bundle)
    path = tmp_path / "scores.npy"
    np.save(path, S)
    Z = np.asarray(toy_bundle.observations("train"))
    P = pseudo_labels_from_scores(S, Z, threshold=0.5, top_k=None, negative_ratio=0.0)
    Y = np.asarray(toy_bundle.labels("train"))
    assert (P == 1).sum() > 20 and Y[P == 1].mean() > 0.8  # the teacher's pseudo-positives are mostly right
    base = TrainConfig(method="an", epochs=8, lr=1e-2)
    an = train_linear(toy_bundle, base)[0]
    params = {"pseudo_scores": str(path), "threshold": 0.5}
    r = train_linear(toy_bundle, base.replace(method=name, params=params))[0]
    assert r.test_map > an.test_map + 1.0


def test_gpr_takes_k_from_the_data_only_when_regularised(tmp_path):
    Z = torch.tensor([[1, 0], [0, 1]], dtype=torch.int8)
    m = build_method("gpr")
    m.setup(train_context(Z, expected_positives=1.5))
    assert m.loss_params["k"] == 1.5
    m = build_method("gpr", reg=0.0)
    m.setup(train_context(Z))
    with pytest.raises(ConfigError, match="needs k"):
        build_method("gpr").setup(train_context(Z))


def test_gpr_loss_matrix_uses_pseudo_labels(tmp_path):
    np.save(tmp_path / "s.npy", np.array([[0.1, 0.9, 0.2]]))
    Z = torch.tensor([[1, 0, 0]], dtype=torch.int8)
    m = build_method("gpr", pseudo_scores=str(tmp_path / "s.npy"), reg=0.0)
    m.setup(train_context(Z, epochs=4))
    m.on_epoch_start(1)
    s = torch.zeros(1, 1, 3)
    out = m.loss_matrix(s, Batch(inputs=None, index=torch.zeros(1, 1, dtype=torch.long), observed=Z[None]))
    inputs = m.components[0].batch_inputs(None, s)
    want = get_loss("gpr")(s, Z[None], pseudo_labels=torch.tensor([[[0, 1, 0]]]), reg=0.0, **inputs)
    assert torch.allclose(out, want)


def test_cli_train_and_bench_take_pseudo_scores(toy_bundle, tmp_path, capsys):
    import json

    from spmlkit.cli import main

    S = np.random.default_rng(0).random((toy_bundle.size("train"), toy_bundle.n_labels))
    np.save(tmp_path / "s.npy", S)
    assert main(["train", str(toy_bundle.path), "-m", "vlpl", "--pseudo-scores", str(tmp_path / "s.npy"),
                 "--epochs", "1", "-o", str(tmp_path / "run")]) == 0
    cfg = json.loads((tmp_path / "run" / "config.json").read_text())
    cfg = cfg.get("config", cfg)
    assert cfg["params"]["pseudo_scores"] == str((tmp_path / "s.npy").resolve())
    assert main(["bench", "--datasets", str(toy_bundle.path), "--methods", "an", "gpr", "--pseudo-scores",
                 str(tmp_path / "s.npy"), "--lrs", "1e-2", "--batch-sizes", "16", "--seeds", "1", "--epochs", "1",
                 "--no-figures", "-o", str(tmp_path / "bench")]) == 0
    table = (tmp_path / "bench" / "table.md").read_text()
    assert "gpr" in table and "pseudo_scores=" in table
    np.save(tmp_path / "bad.npy", S[:-1])
    capsys.readouterr()
    assert main(["train", str(toy_bundle.path), "-m", "gpr", "--pseudo-scores", str(tmp_path / "bad.npy"),
                 "--epochs", "1", "-o", str(tmp_path / "run2")]) == 2
    assert "pseudo-scores have shape" in capsys.readouterr().err
