"""The tree trainer's checkpoints and progress (spmlkit.training.tree_checkpoint,
spmlkit.training.trees): a run killed at any seed resumes to the same model as an
uninterrupted one, training only the seeds it had not finished; a checkpoint that does not
fit is a one-line error; progress lines every PROGRESS_EVERY rounds and a round bar."""
from __future__ import annotations

import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.errors import CorruptFileError

pytest.importorskip("xgboost")

from spmlkit.progress import LineProgress  # noqa: E402
from spmlkit.training import tree_checkpoint, trees  # noqa: E402
from spmlkit.training.callbacks import ProgressBar, tagged  # noqa: E402
from spmlkit.training.checkpoint import save_checkpoint  # noqa: E402
from spmlkit.training.run import ProgressPlan, progress_plan  # noqa: E402

from .test_trees import _bundle  # noqa: E402

SEEDS = [0, 1, 2]
CFG = TrainConfig(method="wan", head="tree")
REAL = trees.train_booster


class Killed(Exception):
    pass


def _counting(monkeypatch, kill_at: int | None = None) -> list:
    """``train_booster`` counted, raising :class:`Killed` when call ``kill_at`` (0-based) starts."""
    calls = []

    def booster(*a, **kw):
        if kill_at is not None and len(calls) == kill_at:
            raise Killed
        calls.append(kw["seed"])
        return REAL(*a, **kw)

    monkeypatch.setattr(trees, "train_booster", booster)
    return calls


def _same(a, b):
    for x, y in zip(a, b, strict=True):
        assert torch.equal(x.state["head"]["booster"], y.state["head"]["booster"])
        assert torch.equal(x.state["head"]["intercept"], y.state["head"]["intercept"])
        assert (x.val_history, x.best_epoch, x.epochs_run, x.test_map) == \
            (y.val_history, y.best_epoch, y.epochs_run, y.test_map)


@pytest.mark.parametrize("kill_at", [0, 1, 2, 3])
def test_a_killed_run_resumes_after_its_last_finished_seed_to_the_same_model(tmp_path, monkeypatch, kill_at):
    bundle, _ = _bundle()
    whole = trees.train_trees(bundle, CFG, lrs=[1e-3] * 3, seeds=SEEDS, keep_state=True)
    run = tmp_path / "run"
    _counting(monkeypatch, kill_at=kill_at if kill_at < len(SEEDS) else None)
    if kill_at < len(SEEDS):
        with pytest.raises(Killed):
            trees.train_trees(bundle, CFG, lrs=[1e-3] * 3, seeds=SEEDS, run_dir=run, keep_state=True)
    else:  # (finished: the checkpoint holds every seed)
        trees.train_trees(bundle, CFG, lrs=[1e-3] * 3, seeds=SEEDS, run_dir=run, keep_state=True)
    assert (run / "last.pt").exists() == (kill_at > 0)
    calls = _counting(monkeypatch)
    lines = []
    again = trees.train_trees(bundle, CFG, lrs=[1e-3] * 3, seeds=SEEDS, run_dir=run, keep_state=True,
                              log=lines.append)
    assert calls == SEEDS[kill_at:]  # only the seeds not finished train again
    assert any(line.startswith("resuming") for line in lines) == (kill_at > 0)
    _same(whole, again)


def test_without_resume_every_seed_trains_again(tmp_path, monkeypatch):
    bundle, _ = _bundle()
    trees.train_trees(bundle, CFG, seeds=[0], run_dir=tmp_path / "run")
    calls = _counting(monkeypatch)
    trees.train_trees(bundle, CFG, seeds=[0], run_dir=tmp_path / "run", resume=False)
    assert calls == [0]


def test_a_checkpoint_that_does_not_fit_is_a_one_line_error(tmp_path):
    bundle, _ = _bundle()
    run = tmp_path / "run"
    trees.train_trees(bundle, CFG, seeds=[0], run_dir=run)
    with pytest.raises(CorruptFileError, match="seed '0' is not one of this run's seeds"):
        trees.train_trees(bundle, CFG, seeds=[5], run_dir=run)
    with pytest.raises(CorruptFileError, match="intercept does not have 4 labels"):
        tree_checkpoint.load_tree_checkpoint(run, [0], 4)
    state = tree_checkpoint.load_tree_checkpoint(run, [0], 3)
    damaged = tree_checkpoint.seed_state(*state[0])
    damaged["booster"] = damaged["booster"][:40]  # a truncated model
    tree_checkpoint.save_tree_checkpoint(run, {0: damaged})
    with pytest.raises(CorruptFileError, match="booster cannot be read") as e:
        trees.train_trees(bundle, CFG, seeds=[0], run_dir=run)
    assert "\n" not in str(e.value) and "--no-resume" in str(e.value)
    # a linear run's checkpoint (the loop's schema, no tree learner)
    save_checkpoint({"epoch": 1, "learner": {"W": torch.zeros(2)}, "method": {}, "tracker": {}, "active": [],
                     "rng": None}, run / "last.pt")
    with pytest.raises(CorruptFileError, match="not a tree run's checkpoint"):
        trees.train_trees(bundle, CFG, seeds=[0], run_dir=run)


def test_progress_lines_every_n_rounds_and_a_round_bar(monkeypatch):
    bundle, _ = _bundle()
    monkeypatch.setattr(trees, "PROGRESS_EVERY", 3)
    lines = []
    plan = progress_plan(CFG, None, 80)
    assert plan == ProgressPlan(trees.ROUNDS, 1, trees.ROUNDS, "round")
    bar = LineProgress(trees.ROUNDS * 2, "wan on x", "round", every=1e9)
    cb = ProgressBar(ProgressPlan(trees.ROUNDS, 1, trees.ROUNDS * 2, "round"), "wan on x", bar=bar)
    (r0, r1) = trees.train_trees(bundle, CFG, lrs=[1e-3, 1e-3], seeds=[0, 1], log=lines.append,
                                 callbacks=tagged([cb], info={"member": "x"}))
    per_seed = {s: [ln for ln in lines if f"seed {s}:" in ln] for s in (0, 1)}
    for s, r in ((0, r0), (1, r1)):
        rounds = [int(ln.split("round ")[1].split("/")[0]) for ln in per_seed[s]]
        # every third round, and the last one trained (the stopping round)
        assert rounds == sorted({*range(3, r.epochs_run + 1, 3), r.epochs_run})
        assert f"/{trees.ROUNDS}, validation observed_map " in per_seed[s][0]
        assert f"(best {r.val_score:.2f} at round {r.best_epoch})" in per_seed[s][-1]
    assert bar.n == trees.ROUNDS * 2  # each seed's share filled when it stops early
