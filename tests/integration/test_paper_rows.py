"""Each paper's rows together, across the method modules they live in (one per mechanism):
every Cole et al. (2021) method learns on the toy problem; every Zhou et al. (2022) Table 1
row trains on every label regime the bench runs it on."""
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.training import train_linear
from spmlkit.training.linear import assemble_linear
from spmlkit.training.loop import fit

COLE = {"an-ls": "single_positive", "an-ls-asym": "single_positive", "wan": "single_positive",
        "epr": "single_positive", "pr": "single_positive", "role": "single_positive", "bce-ls": "full"}
NAMES = ["em", "em-apl", "dw", "l1r", "l2r", "ls", "n-ls", "entmin", "focal", "asl"]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(COLE))
def test_every_method_learns_on_the_toy_problem(toy_bundle, name):
    (r,) = train_linear(toy_bundle, TrainConfig(method=name, epochs=5, lr=1e-2))
    assert r.test_map > 65  # chance ≈ 25


@pytest.mark.parametrize("regime", ["single_positive", "partial", "full"])
def test_every_row_trains_on_every_regime(toy_bundle, regime):
    """The bench runs these rows on partial and full labels too: losses must accept observed negatives."""
    for name in NAMES:
        cfg = TrainConfig(method=name, regime=regime, epochs=3, batch_size=16, lr=1e-2)
        run = assemble_linear(toy_bundle, cfg, lrs=[1e-2], seeds=[0])
        assert (run.parts.observed == toy_bundle.observations("train", regime=regime)).all()
        tracker = fit(run.learner, run.parts.method, epochs=3,
                      evaluate=lambda logits: [float(torch.isfinite(logits).all())])
        assert tracker.members[0].best_score == 1.0, name
