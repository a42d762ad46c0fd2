"""Model selection of the papers' protocol (experiments/protocol.py::select_best) on fabricated results."""
import math

import pytest

from spmlkit.experiments.protocol import select_best


def run(lr, bs, seed, val, test, train=None):
    return {"lr": lr, "batch_size": bs, "seed": seed, "val_score": val, "test_map": test, "train_map": train}


def test_picks_best_mean_validation_not_best_single_run():
    runs = [
        # (1e-2, 8): one lucky seed (90) but mean 70
        run(1e-2, 8, 0, 90.0, 50.0), run(1e-2, 8, 1, 60.0, 51.0), run(1e-2, 8, 2, 60.0, 52.0),
        # (1e-3, 8): mean 75 -> selected
        run(1e-3, 8, 0, 74.0, 60.0, 70.0), run(1e-3, 8, 1, 75.0, 62.0, 72.0), run(1e-3, 8, 2, 76.0, 64.0, 74.0),
        # (1e-3, 16): mean 74
        run(1e-3, 16, 0, 74.0, 99.0), run(1e-3, 16, 1, 74.0, 99.0), run(1e-3, 16, 2, 74.0, 99.0),
    ]
    s = select_best(runs)
    assert (s.lr, s.batch_size) == (1e-3, 8)
    assert s.val_mean == pytest.approx(75.0)
    assert s.test_mean == pytest.approx(62.0)
    # population std (ddof=0) of 60, 62, 64 = sqrt(8/3)
    assert s.test_std == pytest.approx(math.sqrt(8 / 3))
    assert s.train_mean == pytest.approx(72.0) and s.train_std == pytest.approx(math.sqrt(8 / 3))
    assert s.n_seeds == 3 and s.n_configs == 3


def test_ties_prefer_more_seeds_then_first_seen():
    a = [run(1e-2, 8, 0, 70.0, 1.0), run(1e-2, 8, 1, 70.0, 1.0)]
    b = [run(1e-3, 8, 0, 70.0, 2.0), run(1e-3, 8, 1, 70.0, 2.0), run(1e-3, 8, 2, 70.0, 2.0)]
    assert select_best(a + b).lr == 1e-3  # same mean, more seeds
    c = [run(1e-4, 8, 0, 70.0, 3.0), run(1e-4, 8, 1, 70.0, 3.0), run(1e-4, 8, 2, 70.0, 3.0)]
    assert select_best(b + c).lr == 1e-3  # full tie: first seen
    assert select_best(c + b).lr == 1e-4


def test_nan_runs_are_left_out_and_all_nan_configs_cannot_win():
    runs = [
        run(1e-2, 8, 0, math.nan, 10.0), run(1e-2, 8, 1, math.nan, 10.0),  # diverged config
        run(1e-3, 8, 0, 80.0, 60.0), run(1e-3, 8, 1, math.nan, math.nan),  # one diverged seed: mean of 80
        run(1e-4, 8, 0, 79.0, 70.0), run(1e-4, 8, 1, 79.0, 70.0),
    ]
    s = select_best(runs)
    assert s.lr == 1e-3 and s.val_mean == pytest.approx(80.0)
    assert s.test_mean == pytest.approx(60.0) and s.test_std == 0.0  # the NaN test is left out
    assert s.n_seeds == 2 and s.n_configs == 2


def test_different_seed_counts_are_judged_on_their_own_seeds():
    runs = [run(1e-2, 16, 0, 81.0, 5.0), run(1e-3, 16, 0, 80.0, 6.0), run(1e-3, 16, 1, 82.0, 7.0),
            run(1e-3, 16, 2, 84.0, 8.0)]
    s = select_best(runs)
    assert (s.lr, s.n_seeds) == (1e-3, 3) and s.val_mean == pytest.approx(82.0)


def test_missing_train_scores_and_errors():
    s = select_best([run(1e-2, 8, 0, 1.0, 2.0, None)])
    assert s.train_mean is None and s.train_std is None
    with pytest.raises(ValueError):
        select_best([])
    with pytest.raises(ValueError, match="finite"):
        select_best([run(1e-2, 8, 0, math.nan, 2.0)])


def test_accepts_run_results(toy_bundle):
    from spmlkit.config import TrainConfig
    from spmlkit.training import train_linear

    res = train_linear(toy_bundle, TrainConfig(method="an", epochs=2), lrs=[1e-2, 1e-4], seeds=[0, 0])
    s = select_best(res)
    best = max(res, key=lambda r: r.val_score)
    assert s.lr == best.lr and s.test_mean == pytest.approx(best.test_map)
