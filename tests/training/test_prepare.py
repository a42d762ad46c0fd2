"""The run-assembly seam (issue 26 part 1): every trainer builds a run's parts (method,
training and validation observations, evaluator, k, TrainContext) in one place, so the
linear, fine-tuning and analysis paths cannot drift apart again."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from spmlkit.training.prepare import make_evaluator

from tests.helpers.image_fixtures import tiny_digits_bundle
from tests.helpers.factories import single_positive

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
    np.testing.assert_array_equal(np.asarray(learner.observed), want)


def _observed_only(seed=0, n=60, n_val=30, L=4, d=5):
    """Observed-only training rows (one positive each) and a fully labelled validation split."""
    from spmlkit.data.memory import ArrayBundle

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    Z = single_positive(n, L, rng)
    Y_val = rng.random((n_val, L)) < 0.5
    Y_val[~Y_val.any(1), 0] = True
    return ArrayBundle(X, Z, X_val=rng.normal(size=(n_val, d)).astype(np.float32), Y_val=Y_val), Y_val


def test_k_falls_back_to_the_validation_labels_on_every_path():
    """k (Cole §5.3, Eq. A1): full training labels, else full validation labels.  The
    analyses' copy of the set-up used the training labels only (k None here)."""
    from spmlkit.experiments.analyses import linear_setup
    from spmlkit.labels import expected_positives
    from spmlkit.training.prepare import prepare_run

    bundle, Y_val = _observed_only()
    cfg = TrainConfig(method="epr", epochs=1, batch_size=8)
    want = expected_positives(Y_val)
    assert want is not None and want > 1.0
    assert prepare_run(bundle, cfg).expected_positives == want
    assert linear_setup(bundle, cfg, seeds=[0]).k == want
    assert prepare_run(bundle, cfg.replace(expected_positives=2.5)).expected_positives == 2.5  # given k wins


def test_analyses_select_with_the_trainers_validation_observations(toy_bundle):
    """An analysis scores validation epochs as the trainer does: with ``observed_map`` on a
    fully labelled bundle it uses the simulated single positives of the training regime
    (it used the data's own validation observations, None here, and failed)."""
    import torch

    from spmlkit.experiments.analyses import linear_setup
    from spmlkit.metrics import observed_positive_map

    cfg = TrainConfig(method="an", epochs=1, batch_size=16, selection="observed_map")
    setup = linear_setup(toy_bundle, cfg, seeds=[0, 1])
    logits = torch.randn(2, toy_bundle.size("val"), toy_bundle.n_labels, generator=torch.Generator().manual_seed(0))
    Z_val = toy_bundle.selection_observations("val", "single_positive")
    assert setup.evaluate(logits) == [observed_positive_map(Z_val, s.numpy()) for s in logits]


def test_cli_train_builds_the_method_and_resolves_the_device_once(toy_bundle, tmp_path, monkeypatch, capsys):
    """``spml train``: the CLI, the run folder and the trainer share one method and one device
    (the method was built twice, the device resolved five times, finished_run read twice)."""
    import spmlkit.device as device_mod
    import spmlkit.practitioner.run_folder as run_mod
    import spmlkit.training.prepare as prepare
    from spmlkit.cli import main

    calls = {"build": 0, "device": 0, "finished": 0}

    def counting(name, fn):
        def wrapped(*a, **k):
            calls[name] += 1
            return fn(*a, **k)
        return wrapped

    monkeypatch.setattr(prepare, "build_method", counting("build", prepare.build_method))
    monkeypatch.setattr(device_mod, "resolve_device", counting("device", device_mod.resolve_device))
    monkeypatch.setattr(run_mod, "finished_run", counting("finished", run_mod.finished_run))
    args = ["train", str(toy_bundle.path), "-m", "role", "--epochs", "1", "-o", str(tmp_path / "r")]
    assert main(args) == 0
    assert calls["build"] == 1 and calls["device"] == 1, calls
    calls.update(build=0, device=0, finished=0)
    assert main(args) == 0 and "already finished" in capsys.readouterr().out
    assert calls["finished"] == 1, calls  # recognised once, before the folder is locked


# ------------------------------------------------------------ the target_group_auc criterion
def test_evaluator_and_config_accept_the_criterion():
    TrainConfig(selection="target_group_auc")  # a known criterion
    Z = np.array([[1, 0], [0, 1], [1, 0], [0, 1], [0, 0]])
    name, ev = make_evaluator("target_group_auc", Y_val=None, Z_val=Z)
    import torch

    logits = torch.tensor(np.stack([Z * 2.0 - 1, -(Z * 2.0 - 1)]), dtype=torch.float32)
    assert name == "target_group_auc" and ev(logits) == [100.0, 0.0]
    with pytest.raises(ConfigError, match="at least two labels"):
        make_evaluator("target_group_auc", Y_val=None, Z_val=np.array([[1, 0], [1, 0], [0, 0]]))


def test_auto_picks_it_on_presence_only_data_and_background_auc_with_one_species():
    Z = np.array([[1, 0], [0, 1], [1, 0], [0, 0], [0, 0]])
    assert make_evaluator("auto", Y_val=None, Z_val=Z, background=True)[0] == "target_group_auc"
    one = np.array([[1, 0], [1, 0], [0, 0]])
    assert make_evaluator("auto", Y_val=None, Z_val=one, background=True)[0] == "background_auc"
    assert make_evaluator("auto", Y_val=None, Z_val=Z, background=False)[0] == "observed_map"
