"""The one training entry point (spmlkit.training.run) chooses the trainer."""
from __future__ import annotations

import pytest

from spmlkit.config import TrainConfig



def test_one_entry_point_chooses_the_trainer(toy_bundle):
    """``train`` chooses linear / fine-tuning / recipe once; the linear trainer no longer
    hands a recipe on (it was linear -> recipe -> linear), it refuses it."""
    from spmlkit.errors import ConfigError
    from spmlkit.methods import build_method
    from spmlkit.training.linear import train_linear
    from spmlkit.training.run import TRAINERS, train, trainer_for

    auto = TrainConfig(method="auto", epochs=2, batch_size=16, params={"lrs": "0.01"})
    assert trainer_for(auto, build_method("auto")) is TRAINERS["recipe"]
    assert trainer_for(TrainConfig(method="an", setting="finetune"), build_method("an")).kind == "finetune"
    assert trainer_for(TrainConfig(method="an"), build_method("an")).kind == "linear"
    with pytest.raises(ConfigError, match="recipe"):
        train_linear(toy_bundle, auto)
    (r,) = train(toy_bundle, auto)
    assert r.method == "auto" and r.notes["members"]


def test_progress_plan():
    from spmlkit.methods import build_method
    from spmlkit.training.run import progress_plan

    cfg = TrainConfig(method="an", epochs=7)
    assert progress_plan(cfg, build_method("an"), 100) == (7, 1, 7, "epoch")
    auto = build_method("auto")
    plan = progress_plan(TrainConfig(method="auto", epochs=3), auto, 100)
    assert (plan.per_member, plan.total) == (3, 3 * len(auto.candidates))
    ft = progress_plan(TrainConfig(method="an", setting="finetune", finetune_epochs=4, batch_size=8), build_method("an"),
                       100)
    assert ft == (4, 13, 52, "step")  # ceil(100 / 8) optimizer steps per epoch
