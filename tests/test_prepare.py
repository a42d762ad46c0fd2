"""The run-assembly seam (issue 26 part 1): every trainer builds a run's parts (method,
training and validation observations, evaluator, k, TrainContext) in one place, so the
linear, fine-tuning and analysis paths cannot drift apart again."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.config import TrainConfig

from _image_fixtures import tiny_digits_bundle

TINY = dict(setting="finetune", backbone="tiny-random", image_size=32, batch_size=8)


@pytest.fixture
def image_bundle(tmp_path):
    return tiny_digits_bundle(tmp_path)


@pytest.mark.parametrize("options", [dict(regime="full"), dict(regime="single_positive_most_frequent"),
                                     dict(regime="partial", hide_prob=0.7)])
def test_finetuning_trains_on_the_configured_regime(image_bundle, options):
    """--regime and --hide-prob reach the fine-tuning trainer (they were ignored: it
    drew the method's own regime, the uniform single positive)."""
    from spmlkit.training.finetune import prepare_finetune

    cfg = TrainConfig(method="an", lr=1e-2, **TINY, **options)
    learner, method, _, _ = prepare_finetune(image_bundle, cfg, lr=1e-2, seed=0)
    want = image_bundle.observations("train", **options)
    uniform = image_bundle.observations("train")
    assert not np.array_equal(want, uniform)  # the check can fail
    np.testing.assert_array_equal(learner.observed.numpy(), want)
