"""The ``target_group_auc`` selection criterion (presence records of a label against the
records of the other labels; Phillips et al. 2009's target-group background)."""
import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from spmlkit.metrics import presence_background_auc, presence_target_group_auc
from spmlkit.training.prepare import make_evaluator


def test_equals_the_per_label_auc_of_presences_against_other_labels_records():
    rng = np.random.default_rng(0)
    n, L = 60, 3
    Z = np.zeros((n + 20, L), np.int8)
    Z[np.arange(n), rng.integers(0, L, n)] = 1  # 20 background rows at the end
    S = rng.normal(size=Z.shape)
    want = []
    for c in range(L):
        rows = (Z == 1).any(1)  # background rows left out
        want.append(roc_auc_score(Z[rows, c] == 1, S[rows, c]))
    assert presence_target_group_auc(Z, S) == pytest.approx(100 * np.mean(want))
    S2 = S.copy()
    S2[n:] = rng.normal(size=(20, L)) * 100  # background scores do not matter
    assert presence_target_group_auc(Z, S2) == presence_target_group_auc(Z, S)


def test_a_model_of_sampling_effort_scores_fifty_while_background_auc_rewards_it():
    """Records sit where observers go (high 'effort'); background rows are spread uniformly.
    A model that scores every label by effort alone separates presences from background
    (background AUC well above 50) but not one species' records from another's (50)."""
    rng = np.random.default_rng(1)
    n, nb, L = 400, 400, 4
    effort_rec = rng.uniform(0.5, 1.0, n)
    effort_bg = rng.uniform(0.0, 1.0, nb)
    Z = np.zeros((n + nb, L), np.int8)
    Z[np.arange(n), rng.integers(0, L, n)] = 1
    S = np.repeat(np.concatenate([effort_rec, effort_bg])[:, None], L, axis=1)
    assert presence_background_auc(Z, S) > 70
    assert presence_target_group_auc(Z, S) == pytest.approx(50.0, abs=3)
    # a model that knows the species ranks its own records first: near 100
    S_good = S + 2.0 * (Z == 1)
    assert presence_target_group_auc(Z, S_good) > 99


def test_labels_without_presence_or_target_group_are_left_out():
    Z = np.array([[1, 0, 0], [1, 0, 0], [0, 0, 0]])
    assert np.isnan(presence_target_group_auc(Z, np.zeros((3, 3))))  # one label only: no target group
    Z = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0]])
    assert presence_target_group_auc(Z, np.array([[1., 0, 0], [0, 1, 0], [5, 5, 5]])) == 100.0


def test_evaluator_and_config_accept_the_criterion():
    TrainConfig(selection="target_group_auc")  # a known criterion
    Z = np.array([[1, 0], [0, 1], [1, 0], [0, 1], [0, 0]])
    name, ev = make_evaluator("target_group_auc", Y_val=None, Z_val=Z)
    import torch

    logits = torch.tensor(np.stack([Z * 2.0 - 1, -(Z * 2.0 - 1)]), dtype=torch.float32)
    assert name == "target_group_auc" and ev(logits) == [100.0, 0.0]
    with pytest.raises(ConfigError, match="at least two labels"):
        make_evaluator("target_group_auc", Y_val=None, Z_val=np.array([[1, 0], [1, 0], [0, 0]]))


def test_training_on_presence_only_data_selects_by_it(presence_bundle):
    from spmlkit.training.linear import train_linear

    cfg = TrainConfig(method="an-full", epochs=3, batch_size=32, selection="target_group_auc", threads=1)
    (res,) = train_linear(presence_bundle, cfg, lrs=[1e-2], seeds=[0])
    assert res.selection == "target_group_auc"
    assert 0 <= res.val_score <= 100 and res.val_score == max(res.val_history)
    assert res.val_history[res.best_epoch - 1] == res.val_score


def test_auto_picks_it_on_presence_only_data_and_background_auc_with_one_species():
    Z = np.array([[1, 0], [0, 1], [1, 0], [0, 0], [0, 0]])
    assert make_evaluator("auto", Y_val=None, Z_val=Z, background=True)[0] == "target_group_auc"
    one = np.array([[1, 0], [1, 0], [0, 0]])
    assert make_evaluator("auto", Y_val=None, Z_val=one, background=True)[0] == "background_auc"
    assert make_evaluator("auto", Y_val=None, Z_val=Z, background=False)[0] == "observed_map"
