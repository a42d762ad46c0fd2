"""The training loop shared by every setting (spmlkit.training.loop): hooks in order, the
best epoch per member, metrics.jsonl, and a run killed after any epoch resuming to the
same end as an uninterrupted one."""
import json

import numpy as np
import pytest
import torch

from spmlkit.errors import CorruptFileError
from spmlkit.methods import build_method
from spmlkit.metrics import mean_average_precision_members
from spmlkit.training.loop import fit, train_epoch
from tests.helpers.factories import ToyLearner, train_context


def _problem(seed=0, n=24, n_val=12, d=5, L=3):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(d, L))
    X, X_val = rng.normal(size=(n, d)), rng.normal(size=(n_val, d))
    Y_val = X_val @ W > 0
    Y_val[~Y_val.any(1), 0] = True
    Z = np.zeros((n, L), np.int8)
    Z[np.arange(n), (X @ W).argmax(1)] = 1  # the most confident true label, observed
    return X, Z, X_val, Y_val


def _learner_and_method(G=2, **kw):
    X, Z, X_val, Y_val = _problem()
    learner = ToyLearner(X, Z, G=G, splits={"val": X_val}, **kw)
    method = build_method("an")
    method.setup(train_context(Z, G=G))
    return learner, method, Y_val


def _evaluate(Y_val):
    return lambda logits: [float(v) for v in mean_average_precision_members(Y_val, logits)]


def test_one_epoch_returns_the_loss_sum_per_member_and_the_steps():
    learner, method, _ = _learner_and_method()
    steps = []
    loss_sum, n_steps = train_epoch(learner, method, 1, on_step=lambda epoch, step: steps.append((epoch, step)))
    assert n_steps == 6 and steps == [(1, s) for s in range(1, 7)]  # 24 rows in batches of 4
    assert loss_sum.shape == (2,) and torch.isfinite(loss_sum).all() and not loss_sum.requires_grad


def test_fit_keeps_each_members_best_epoch_and_writes_metrics(tmp_path):
    learner, method, Y_val = _learner_and_method()
    seen = []
    tracker = fit(learner, method, epochs=4, evaluate=_evaluate(Y_val), run_dir=tmp_path,
                  on_epoch=lambda info: seen.append((info["epoch"], len(info["rows"]))),
                  member_info=[{"lr": 0.5}, {"lr": 0.5}])
    assert seen == [(e, 2) for e in range(1, 5)]
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["epoch"], r["member"]) for r in rows] == [(e, g) for e in range(1, 5) for g in range(2)]
    assert all(r["lr"] == 0.5 and np.isfinite(r["train_loss"]) for r in rows)
    for g, m in enumerate(tracker.members):
        scores = [r["val_score"] for r in rows if r["member"] == g]
        assert m.best_score == max(scores) and m.best_epoch == 1 + scores.index(max(scores))
        assert set(m.snapshot) == {"learner", "method"}
    assert (tmp_path / "last.pt").exists() and tracker.active == [0, 1]


def test_a_killed_run_resumes_to_the_uninterrupted_result(tmp_path):
    learner, method, Y_val = _learner_and_method()
    full = fit(learner, method, epochs=4, evaluate=_evaluate(Y_val), run_dir=tmp_path / "full")
    part = tmp_path / "part"
    first, m1, _ = _learner_and_method()
    fit(first, m1, epochs=2, evaluate=_evaluate(Y_val), run_dir=part)  # "killed" after epoch 2
    again, m2, _ = _learner_and_method()
    resumed = fit(again, m2, epochs=4, evaluate=_evaluate(Y_val), run_dir=part)
    assert [m.history for m in resumed.members] == [m.history for m in full.members]
    assert all(torch.equal(a, b) for a, b in zip(again.model.parameters(), learner.model.parameters()))

    def rows(run):  # the metrics without the timings
        return [(r["epoch"], r["member"], r["train_loss"], r["val_score"])
                for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())]

    assert rows(part) == rows(tmp_path / "full") and len(rows(part)) == 8


def test_a_checkpoint_of_another_run_is_one_clear_error(tmp_path):
    learner, method, Y_val = _learner_and_method(G=2)
    fit(learner, method, epochs=1, evaluate=_evaluate(Y_val), run_dir=tmp_path)
    other, m, _ = _learner_and_method(G=3)
    with pytest.raises(CorruptFileError, match=r"last.pt: does not fit this run \("):
        fit(other, m, epochs=2, evaluate=_evaluate(Y_val), run_dir=tmp_path)


FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("method", ["role", "em-apl"])
def test_a_checkpoint_written_before_state_keys_resumes_to_the_same_end(tmp_path, toy_bundle, method):
    """tests/training/fixtures: killed runs of spmlkit 75e1ce7, whose checkpoints key component
    state by position ("0:LabelEstimator"); today's code resumes them and ends where that
    version's uninterrupted run ended (and where today's ends)."""
    import shutil

    from spmlkit.config import TrainConfig
    from spmlkit.training.checkpoint import load_run_checkpoint
    from spmlkit.training.run import train

    run = tmp_path / "run"
    run.mkdir()
    for name in ("last.pt", "last.pt.sha256", "metrics.jsonl"):
        shutil.copy(FIXTURES / f"{method}.{name}", run / name)
    assert all(":" in k for k in load_run_checkpoint(run / "last.pt")["method"])  # the old keys
    config = TrainConfig(method=method, epochs=4, batch_size=16)
    members = dict(lrs=[1e-2, 1e-3], seeds=[0, 1])
    resumed = train(toy_bundle, config, run_dir=run, **members)
    fresh = train(toy_bundle, config, run_dir=tmp_path / "fresh", **members)
    expected = json.loads((FIXTURES / f"{method}.expected.json").read_text())
    for r, f, e in zip(resumed, fresh, expected):
        assert r.val_history == f.val_history == e["val_history"]
        assert r.test_map == f.test_map == e["test_map"] and r.best_epoch == e["best_epoch"]
    assert list(load_run_checkpoint(run / "last.pt")["method"]) == [build_method(method).components[0].state_key]


def test_fitted_epochs_reads_the_heads_flag_also_through_a_wrapper():
    """One epoch for a fitted head, also inside a wrapper that holds it as ``module``
    (DistributedDataParallel); every epoch for a trained head, and for a flag that is not
    ``True`` itself (an attribute that merely exists, as on a mock)."""
    import torch

    from spmlkit.training.loop import fitted_epochs

    class Head(torch.nn.Module):
        fitted = True

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.module = Head()

    class Loose(torch.nn.Module):
        fitted = "yes"

    assert fitted_epochs(Head(), 25) == 1 and fitted_epochs(Wrapper(), 25) == 1
    assert fitted_epochs(torch.nn.Linear(2, 2), 25) == 25 and fitted_epochs(Loose(), 25) == 25
    assert fitted_epochs(Head(), 0) == 0
