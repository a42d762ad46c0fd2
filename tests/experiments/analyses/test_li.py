"""Li et al.'s analyses (spmlkit.experiments.analyses.li, issue 18): confidence
histograms and Grad-CAM, on tiny data, checking the numbers."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from spmlkit.experiments.analyses.li import (
    confidence_histogram,
    grad_cam,
    peak_pixel,
    upsample_map,
)
from tests.helpers.analyses import IMG
from tests.helpers.analyses import read_csv as _csv
from tests.helpers.analyses import run_quiet as _run


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
