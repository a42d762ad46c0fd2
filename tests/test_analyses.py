"""``spml analyze``: the papers' analyses (issue 18), on tiny data, checking the numbers."""
from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
import torch

from tests.helpers.image_fixtures import tiny_digits_bundle
from spmlkit.experiments.analyses import all_analyses, linear_setup, quiet, run_analysis
from spmlkit.experiments.analyses.cole import estimator_precision_recall, k_budget
from spmlkit.experiments.analyses.li import confidence_histogram, grad_cam, peak_pixel, upsample_map
from spmlkit.experiments.analyses.xie import decoder_attention
from spmlkit.experiments.analyses.zhou import filter_normalized_direction, landscape_slices, observed_positive_loss


def _csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _run(name, **kw):
    return run_analysis(name, kw, log=quiet)


@pytest.fixture(scope="module")
def image_bundle(tmp_path_factory):
    return tiny_digits_bundle(tmp_path_factory.mktemp("img"))


IMG = dict(backbone="tiny-random", image_size=64, batch_size=8, threads=1)


def test_registry_and_help():
    from spmlkit.cli import analyze as analyze_command
    from spmlkit.cli import build_parser

    names = set(all_analyses())
    assert names == {"cole-k-sensitivity", "cole-role-estimator", "zhou-positive-loss", "zhou-landscape",
                     "xie-sensitivity", "xie-attention", "li-confidence-histogram", "li-gradcam"}
    import argparse

    parser = build_parser()
    top = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    nested = next(a for a in top.choices["analyze"]._actions if isinstance(a, argparse._SubParsersAction))
    assert set(nested.choices) == names
    missing = [(n, a.dest) for n, sp in nested.choices.items() for a in sp._actions if not a.help]
    assert not missing, missing  # every option of every analysis is documented in --help
    for n in names:  # every analysis parses with its documented options
        args = parser.parse_args(["analyze", n, "src", "-o", "out"])
        assert args.analysis == n and args.func is analyze_command.run


def test_source_name_is_prepared_once_into_out(tmp_path):
    from spmlkit.errors import ConfigError
    from spmlkit.experiments.analyses import resolve_bundle

    b = resolve_bundle("yeast", tmp_path)
    assert b.path == tmp_path / "bundle" and b.regime == "single_positive" and b.meta["seed"] == 0
    mtime = (b.path / "meta.json").stat().st_mtime_ns
    assert resolve_bundle("yeast", tmp_path).path == b.path  # reused, not prepared again
    assert (b.path / "meta.json").stat().st_mtime_ns == mtime
    with pytest.raises(ConfigError, match="holds a bundle of 'yeast'"):
        resolve_bundle("digits", tmp_path)


# --------------------------------------------------------------------------- Cole
def test_estimator_precision_recall_hand_case():
    P = np.array([[.9, .8, .1, .3], [.2, .7, .6, .65], [.55, .4, .1, .05]])
    Z = np.array([[1, 0, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0]])
    Y = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 1, 0, 0]], bool)
    # unobserved entries ranked: .8(T) .7(F) .65(T) .6(T) .55(T) .3 .2 .1 .1 .05 -> 4 true positives
    r = estimator_precision_recall(P, Z, Y, budget=3)
    assert r["unobserved"] == 10 and r["unobserved_positives"] == 4
    assert r["top_precision"] == pytest.approx(2 / 3) and r["top_recall"] == pytest.approx(2 / 4)
    assert r["threshold_predicted"] == 5 and r["threshold_precision"] == pytest.approx(4 / 5)
    assert r["threshold_recall"] == 1.0
    assert r["r_precision"] == pytest.approx(3 / 4)  # top 4: .8 .7 .65 .6 -> 3 true
    assert estimator_precision_recall(P, Z, Y, budget=3, threshold=0.99)["threshold_precision"] != \
        estimator_precision_recall(P, Z, Y, budget=3, threshold=0.99)["threshold_precision"]  # nan: none predicted
    assert k_budget(2.0, Z) == 3 * 2 - 2


def test_role_estimator_epoch_zero_is_the_initialisation(toy_bundle, tmp_path):
    from spmlkit.config import TrainConfig
    from spmlkit.methods.role import LabelEstimator

    s = _run("cole-role-estimator", source=str(toy_bundle.path), out=str(tmp_path / "out"), epochs=2, seeds=2, batch_size=16,
             threads=1)
    Y = np.asarray(toy_bundle.labels("train"), bool)
    Z = np.asarray(toy_bundle.observations("train"))
    k = Y.sum(1).mean()
    assert s["k"] == pytest.approx(k)
    assert s["budget"] == round(len(Y) * k) - int((Z == 1).sum())
    assert [(r["epoch"], r["seed"]) for r in s["rows"]] == [(e, g) for e in range(3) for g in (0, 1)]
    # epoch 0 = Cole §6.1's initialisation, rebuilt independently
    setup = linear_setup(toy_bundle, TrainConfig(method="role", epochs=2, batch_size=16), [0, 1])
    est = setup.method.component(LabelEstimator)
    for g in (0, 1):
        ref = estimator_precision_recall(est.probabilities(g), Z, Y, budget=s["budget"])
        assert s["rows"][g]["top_precision"] == pytest.approx(ref["top_precision"])
        assert s["rows"][g]["threshold_recall"] == pytest.approx(ref["threshold_recall"], nan_ok=True)
    rows = _csv(tmp_path / "out" / "role-estimator.csv")
    assert len(rows) == 6 and float(rows[-1]["top_recall"]) == pytest.approx(s["rows"][-1]["top_recall"])
    assert (tmp_path / "out" / "role-estimator.png").stat().st_size > 1000


def test_k_sensitivity_uses_factor_times_k_and_matches_train_linear(toy_bundle, tmp_path):
    from spmlkit.config import TrainConfig
    from spmlkit.training import train_linear

    s = _run("cole-k-sensitivity", source=str(toy_bundle.path), out=str(tmp_path / "out"), methods=["epr"],
             factors=[0.5, 2.0], epochs=2, seeds=1, batch_size=16, threads=1)
    k = np.asarray(toy_bundle.labels("train"), bool).sum(1).mean()
    assert s["k_hat"] == pytest.approx(k)
    rows = _csv(tmp_path / "out" / "k-sensitivity.csv")
    assert [float(r["k"]) for r in rows] == pytest.approx([0.5 * k, 2 * k])
    (direct,) = train_linear(toy_bundle, TrainConfig(method="epr", epochs=2, batch_size=16, expected_positives=2 * k))
    assert float(rows[1]["test_map"]) == pytest.approx(direct.test_map)
    assert s["methods"]["epr"][1]["mean"] == pytest.approx(direct.test_map)
    assert json.loads((tmp_path / "out" / "k-sensitivity.json").read_text())["k_hat"] == pytest.approx(k)


# --------------------------------------------------------------------------- Zhou
def test_observed_positive_loss_hand_values():
    logits = np.array([[[0.0, 2.0], [-1.0, 3.0]]])
    Z = np.array([[1, 0], [1, 1]])
    expect = (math.log(2) + math.log1p(math.exp(1)) + math.log1p(math.exp(-3))) / 3
    assert observed_positive_loss(logits, Z)[0] == pytest.approx(expect)


def test_positive_loss_epoch_zero_is_the_initial_head(toy_bundle, tmp_path):
    from spmlkit.models.heads import build_head
    from spmlkit.training.linear import feature_statistics

    s = _run("zhou-positive-loss", source=str(toy_bundle.path), out=str(tmp_path / "out"), methods=["an", "em"],
             seeds=1, epochs=3, batch_size=16, threads=1)
    X = np.asarray(toy_bundle.features("train"), np.float32)
    mean, std = feature_statistics(X)
    head = build_head("linear", X.shape[1], toy_bundle.n_labels, [torch.Generator().manual_seed(0)])
    with torch.no_grad():
        logits = head(torch.from_numpy((X - mean) / std)).numpy()
    Z = np.asarray(toy_bundle.observations("train"))
    expect = float(np.mean(np.log1p(np.exp(-logits[0][Z == 1]))))
    first = {r["method"]: r["positive_loss"] for r in s["rows"] if r["epoch"] == 0}
    assert first["an"] == pytest.approx(expect, rel=1e-5) and first["em"] == pytest.approx(expect, rel=1e-5)
    assert len(s["rows"]) == 2 * 4 and s["alpha"] == 1.0
    assert len(_csv(tmp_path / "out" / "positive-loss.csv")) == 8


def test_filter_normalized_direction_matches_filter_norms():
    w = torch.randn(1, 5, 3)
    params = {"weight": w, "bias": torch.randn(1, 1, 3)}
    d = filter_normalized_direction(params, torch.Generator().manual_seed(0))
    assert torch.allclose(d["weight"].norm(dim=1), w.norm(dim=1))
    assert torch.count_nonzero(d["bias"]) == 0


def test_landscape_slices_of_a_quadratic():
    theta = {"w": torch.tensor([1.0, 2.0])}
    d1, d2 = {"w": torch.tensor([1.0, 0.0])}, {"w": torch.tensor([0.0, 1.0])}
    s = landscape_slices(lambda p: float((p["w"] ** 2).sum()), theta, d1, d2, radius=1.0, steps_1d=5, steps_2d=3)
    assert s["loss_1d"] == pytest.approx([(1 + a) ** 2 + 4 for a in (-1, -.5, 0, .5, 1)])
    assert s["loss_2d"][2, 0] == pytest.approx(0 + 9)  # a = -1, b = +1


def test_landscape_origin_equals_trained_loss(toy_bundle, tmp_path):
    from spmlkit.config import TrainConfig

    s = _run("zhou-landscape", source=str(toy_bundle.path), out=str(tmp_path / "out"), methods=["an", "em-apl"],
             epochs=3, batch_size=16, steps_1d=5, steps_2d=3, radius=0.5, threads=1)
    for m in ("an", "em-apl"):
        r = s["methods"][m]
        assert r["loss_1d"][2] == pytest.approx(r["trained_loss"])
        assert r["loss_2d"][1][1] == pytest.approx(r["trained_loss"])
    # AN's trained loss is the mean BCE against "observed positive = 1, else 0" at the trained weights
    setup = linear_setup(toy_bundle, TrainConfig(method="an", epochs=3, batch_size=16), [0])
    setup.fit()
    with torch.no_grad():
        logits = setup.learner.model(setup.train_inputs())[0]
    target = torch.from_numpy((np.asarray(toy_bundle.observations("train")) == 1).astype(np.float32))
    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, target).item()
    assert s["methods"]["an"]["trained_loss"] == pytest.approx(bce, rel=1e-5)
    with np.load(tmp_path / "out" / "landscape.npz") as z:
        assert z["an_loss_2d"].shape == (3, 3)


# ----------------------------------------------------------------------------- Li
def test_confidence_histogram_hand_case():
    h = confidence_histogram(np.array([[.05, .95, 1.0], [.5, .15, 0.0]]), np.array([[0, 1, 1], [1, 0, 0]], bool),
                             bins=2)
    assert h["positive"] == [0, 3] and h["negative"] == [3, 0]


def test_confidence_histograms_count_every_positive_and_negative(toy_bundle, tmp_path):
    from spmlkit.config import TrainConfig
    from spmlkit.training import train_linear

    s = _run("li-confidence-histogram", source=str(toy_bundle.path), out=str(tmp_path / "out"), epochs=2, batch_size=16,
             bins=5, threads=1)
    Y = np.asarray(toy_bundle.labels("test"), bool)
    for m in ("an", "opml"):
        h = s["methods"][m]
        assert sum(h["positive"]) == Y.sum() and sum(h["negative"]) == (~Y).sum()
    (res,) = train_linear(toy_bundle, TrainConfig(method="opml", epochs=2, batch_size=16), keep_state=True)
    p = 1 / (1 + np.exp(-res.state["test_logits"].astype(np.float64)))
    assert s["methods"]["opml"]["positive"] == np.histogram(p[Y], bins=np.linspace(0, 1, 6))[0].tolist()
    rows = _csv(tmp_path / "out" / "confidence-histogram.csv")
    assert sum(int(r["count"]) for r in rows if r["method"] == "an" and r["group"] == "negative") == (~Y).sum()


def test_grad_cam_peaks_on_a_planted_signal():
    from spmlkit.features.backbones import Backbone
    from spmlkit.models.image import ImageModel

    class Planted(Backbone):  # feature k of cell (i, j) = mean brightness of that 8x8 cell
        name, out_dim = "planted", 4

        def __init__(self):
            super().__init__((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))

        def features_map(self, x):
            return torch.nn.functional.avg_pool2d(x.mean(1, keepdim=True), 8).repeat(1, 4, 1, 1)

    model = ImageModel(Planted(), 2, head="linear")
    with torch.no_grad():
        model.head.weight.zero_()
        model.head.bias.zero_()
        model.head.weight[0, :, 0] = 1.0  # label 0 likes brightness, label 1 dislikes it
        model.head.weight[0, :, 1] = -1.0
    img = torch.full((3, 32, 32), 0.1)
    img[:, 16:24, 8:16] = 0.9  # the planted signal: cell (2, 1)
    maps, logits = grad_cam(model, img, [0, 1])
    assert maps.shape == (2, 4, 4)
    assert logits[0] == pytest.approx(float(img.mean()) * 4, rel=1e-5)
    # alpha_k = 1/16 for label 0: the map is (1/16)·4·brightness, peaking on the patch
    assert maps[0][2, 1] == pytest.approx(0.9 * 4 / 16, rel=1e-5) and maps[0][0, 0] == pytest.approx(0.1 * 4 / 16,
                                                                                                       rel=1e-4)
    i, j, r, c = peak_pixel(maps[0], (32, 32))
    assert (i, j) == (2, 1) and 16 <= r < 24 and 8 <= c < 16
    assert np.all(maps[1] == 0)  # negative evidence everywhere: ReLU removes it
    up = upsample_map(maps[0], (32, 32))
    assert up.max() == pytest.approx(1.0) and np.unravel_index(up.argmax(), up.shape)[0] in range(16, 24)


def test_gradcam_command(image_bundle, tmp_path):
    s = _run("li-gradcam", source=str(image_bundle.path), out=str(tmp_path), epochs=1, images=2, top=2, **IMG)
    Y = np.asarray(image_bundle.labels("test"), bool)
    assert len(s["images"]) == 2
    for i, rec in enumerate(s["images"]):
        truth = [image_bundle.label_names[j] for j in np.flatnonzero(Y[i])]
        assert rec["true_labels"] == truth
        assert [e["label"] for e in rec["labels"]][:min(2, len(truth))] == \
            [e["label"] for e in rec["labels"] if e["true"]][:2]
    with np.load(tmp_path / "gradcam.npz") as z:
        assert z["image0"].shape == (2, 2, 2) and (z["image0"] >= 0).all()
        for i, rec in enumerate(s["images"]):
            for m, e in zip(z[f"image{i}"], rec["labels"]):
                assert e["map_max"] == pytest.approx(float(m.max()))
                if m.max() > 0:  # the reported peak is the map's arg-max cell, centred in the 64 px image
                    i0, j0 = np.unravel_index(m.argmax(), m.shape)
                    assert e["peak_cell"] == [i0, j0] and (e["peak_row"], e["peak_col"]) == (16 + 32 * i0,
                                                                                             16 + 32 * j0)
                else:
                    assert e["peak_cell"] is None
    assert (tmp_path / "gradcam.png").stat().st_size > 1000


# ----------------------------------------------------------------------------- Xie
def test_decoder_attention_sums_to_one_and_leaves_logits_unchanged():
    from spmlkit.features.backbones import build_backbone
    from spmlkit.models.image import ImageModel

    torch.manual_seed(0)
    model = ImageModel(build_backbone("tiny-random", image_size=64), 3, head="decoder", hidden=32).eval()
    x = torch.rand(3, 64, 64)
    att, logits = decoder_attention(model, x)
    assert att.shape == (3, 2, 2)
    assert att.reshape(3, -1).sum(1) == pytest.approx(np.ones(3), abs=1e-5)
    with torch.no_grad():
        ref = model(x.unsqueeze(0))[0, 0].numpy()
    assert logits == pytest.approx(ref, abs=1e-5)
    assert not model.head.decoder[-1].attn._forward_hooks  # hooks removed


def test_attention_command(image_bundle, tmp_path):
    s = _run("xie-attention", source=str(image_bundle.path), out=str(tmp_path), epochs=2, images=1, top=2, **IMG)
    with np.load(tmp_path / "attention.npz") as z:
        a = z["image0"]
    assert a.shape == (2, 2, 2) and a.reshape(2, -1).sum(1) == pytest.approx([1, 1], abs=1e-5)
    e = s["images"][0]["labels"][0]
    assert e["max_weight"] == pytest.approx(float(a[0].max()))
    assert 0 <= e["relative_entropy"] <= 1 + 1e-6


def test_lac_sensitivity_sweep(image_bundle, tmp_path):
    from spmlkit.config import TrainConfig
    from spmlkit.training.finetune import train_finetune

    s = _run("xie-sensitivity", source=str(image_bundle.path), out=str(tmp_path), sweeps=["temperature", "queue_size"],
             temperatures=[0.5, 2.0], queue_sizes=[512], epochs=2, **IMG)
    assert s["runs_trained"] == 2  # temperature 0.5 and queue 512 are the same (default) run
    rows = _csv(tmp_path / "lac-sensitivity.csv")
    assert [(r["parameter"], float(r["value"]), float(r["trained"])) for r in rows] == \
        [("temperature", 0.5, 0.5), ("temperature", 2.0, 2.0), ("queue_size", 512, 512)]
    assert float(rows[0]["test_map"]) == float(rows[2]["test_map"])
    cfg = TrainConfig(method="lac", params={"temperature": 2.0}, setting="finetune", backbone="tiny-random",
                      image_size=64, finetune_epochs=2, lr=1e-4, batch_size=8, threads=1)
    (direct,) = train_finetune(image_bundle, cfg, log=quiet)
    assert float(rows[1]["test_map"]) == pytest.approx(direct.test_map)
    assert s["largest_gap"]["queue_size"] == 0.0


# ----------------------------------------------------------------------------- CLI
def test_cli_analyze_runs_and_reports_bad_input(toy_bundle, tmp_path, capsys):
    from spmlkit.cli import main

    out = tmp_path / "h"
    assert main(["analyze", "li-confidence-histogram", str(toy_bundle.path), "-o", str(out), "--epochs", "1",
                 "--bins", "4", "--threads", "1"]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(out / n) for n in ("confidence-histogram.csv", "confidence-histogram.json",
                                              "confidence-histogram.png")]
    assert main(["analyze", "li-confidence-histogram", str(toy_bundle.path), "-o", str(out), "--bins", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("spml: error:") and "--bins" in err and "\n" not in err
    assert main(["analyze", "cole-k-sensitivity", str(toy_bundle.path), "-o", str(out), "--methods", "an"]) == 2
    assert "takes no k" in capsys.readouterr().err
    assert main(["analyze", "li-gradcam", str(toy_bundle.path), "-o", str(out)]) == 2
    assert "image bundle" in capsys.readouterr().err
