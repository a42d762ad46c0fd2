"""Xie et al.'s analyses (spmlkit.experiments.analyses.xie, issue 18): decoder
attention and LAC's sensitivity sweep, on tiny data."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from spmlkit.experiments.analyses import quiet
from spmlkit.experiments.analyses.xie import decoder_attention
from tests.helpers.analyses import IMG
from tests.helpers.analyses import read_csv as _csv
from tests.helpers.analyses import run_quiet as _run


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
