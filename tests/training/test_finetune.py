import numpy as np
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from spmlkit.methods import build_method
from spmlkit.methods.base import Component, Method, register_method
from spmlkit.training.finetune import prepare_finetune, resolve_recipe, train_finetune

from tests.helpers.image_fixtures import tiny_digits_bundle

TINY = dict(setting="finetune", backbone="tiny-random", image_size=32, batch_size=8)


class _Table(Component):
    """Stand-in for ROLE's estimator: per-member (N, L) state, changed by every step."""

    def setup(self, ctx):
        super().setup(ctx)
        self.table = torch.rand(ctx.n_members, ctx.n_train, ctx.n_labels, generator=torch.Generator().manual_seed(9))

    def after_optimizer_step(self, batch):
        for g in range(batch.index.shape[0]):
            self.table[g, batch.index[g]] += 1.0

    def member_state(self, g):
        return {"table": self.table[g].clone()}

    def load_member_state(self, g, state):
        self.table[g] = state["table"]

    def state_dict(self):
        return {"table": self.table.clone()}

    def load_state_dict(self, state):
        self.table = state["table"].clone()


@register_method("test-table-standin", reference="test stand-in for ROLE's estimator")
def _build_table() -> Method:
    """AN plus a stateful stand-in component (tests only)."""
    return Method("test-table-standin", "an", components=[_Table()])


@pytest.fixture
def bundle(tmp_path):
    return tiny_digits_bundle(tmp_path)


def test_one_finetuning_step_updates_backbone_and_head(bundle):
    learner, method, _, _ = prepare_finetune(bundle, TrainConfig(method="an", lr=1e-2, **TINY), lr=1e-2, seed=0)
    before = {k: v.clone() for k, v in learner.model.state_dict().items()}
    batch = next(iter(learner.batches(1)))
    assert batch.inputs.shape == (8, 3, 32, 32) and batch.observed.shape == (1, 8, 10)
    assert 0.0 <= batch.inputs.min() and batch.inputs.max() <= 1.0
    learner.model.train()
    logits = method.forward(learner.model, batch)
    assert logits.shape == (1, 8, 10)
    loss = method.compute_loss(logits, batch, learner.model)
    learner.zero_grad()
    loss.sum().backward()
    learner.step()
    after = learner.model.state_dict()
    assert not torch.equal(after["backbone.body.0.weight"], before["backbone.body.0.weight"])
    assert not torch.equal(after["head.weight"], before["head.weight"])
    assert torch.isfinite(loss).all()


def test_train_flip_is_seeded_per_example_and_epoch(bundle):
    learner, _, _, _ = prepare_finetune(bundle, TrainConfig(method="an", **TINY), lr=1e-3, seed=0)
    a = next(iter(learner.batches(1)))
    learner2, _, _, _ = prepare_finetune(bundle, TrainConfig(method="an", **TINY), lr=1e-3, seed=0)
    b = next(iter(learner2.batches(1)))
    assert torch.equal(a.index, b.index) and torch.equal(a.inputs, b.inputs)
    flips = 0
    from spmlkit.features.transforms import load_image, resize, to_tensor

    for row, x in zip(a.index[0].tolist(), a.inputs):
        plain = to_tensor(resize(load_image(bundle.paths("train")[row]), 32))
        assert torch.equal(x, plain) or torch.equal(x, plain.flip(-1))
        flips += int(not torch.equal(x, plain))
    assert 0 < flips < 8


def test_linear_init_hands_over_head_weights_and_member_state(bundle):
    cfg = TrainConfig(method="test-table-standin", linear_init=True, epochs=4, linear_init_lr=5e-2, **TINY)
    learner, method, _, info = prepare_finetune(bundle, cfg, lr=1e-4, seed=0)
    init = info["linear_init"]
    assert info["recipe"]["epochs"] == 5  # Cole §6.1: LinearInit rows fine-tune for 5 epochs
    assert 1 <= init.best_epoch <= 4
    assert init.state["mean"] is None  # the linear phase trains on raw features (see training/finetune.py)
    head = learner.model.head
    W1, b1 = init.state["head"]["weight"], init.state["head"]["bias"]
    assert torch.equal(head.weight[0], W1) and torch.equal(head.bias[0], b1)  # exactly the best linear head
    # the component's state is the one kept with the best linear epoch, not a fresh one
    table = method.component(_Table).table[0]
    assert torch.equal(table, init.state["method"]["_Table"]["table"])
    assert table.min() >= 1.0  # every row was visited at least once in phase 1 (a fresh table is in [0, 1))
    # before any fine-tuning step the image model reproduces the linear model (cached features =
    # backbone in eval mode on the resized image)
    with torch.no_grad():
        scores = learner.scores("val")[0]
    Xv = torch.from_numpy(np.array(bundle.features("val", "tiny-random-32")))
    assert torch.allclose(scores, Xv @ W1 + b1, atol=1e-4)
    assert init.val_score == pytest.approx(init.val_history[init.best_epoch - 1])


def test_fold_standardization_is_exact():
    from spmlkit.training.finetune import fold_standardization

    g = torch.Generator().manual_seed(0)
    X = torch.randn(20, 5, generator=g) * 3 + 1
    mean, std = X.mean(0).numpy(), X.std(0).numpy()
    for kind, state in (("linear", {"weight": torch.randn(5, 4, generator=g), "bias": torch.randn(1, 4, generator=g)}),
                        ("mlp", {"hidden.weight": torch.randn(5, 3, generator=g),
                                 "hidden.bias": torch.randn(1, 3, generator=g)})):
        pre = "" if kind == "linear" else "hidden."
        folded = fold_standardization(state, mean, std, kind)
        ref = ((X - torch.from_numpy(mean)) / torch.from_numpy(std)) @ state[pre + "weight"] + state[pre + "bias"]
        assert torch.allclose(X @ folded[pre + "weight"] + folded[pre + "bias"], ref, atol=1e-4)


def test_recipe_defaults_and_errors():
    an, lac = build_method("an"), build_method("lac")
    assert resolve_recipe(TrainConfig(setting="finetune"), an) == {
        "head": "linear", "optimizer": "adam", "ema_decay": 0.0, "epochs": 10, "views": ("train",)}
    r = resolve_recipe(TrainConfig(setting="finetune"), lac)
    assert (r["head"], r["optimizer"], r["ema_decay"], r["views"]) == ("decoder", "adamw-onecycle", 0.9997,
                                                                       ("weak", "strong"))
    assert resolve_recipe(TrainConfig(setting="finetune", optimizer="adam", ema_decay=0.0), lac)["ema_decay"] == 0.0
    with pytest.raises(ConfigError):
        resolve_recipe(TrainConfig(setting="finetune", head="mlp"), lac)
    with pytest.raises(ConfigError):
        resolve_recipe(TrainConfig(setting="finetune", linear_init=True, head="decoder"), an)
    with pytest.raises(ConfigError):
        TrainConfig(head="decoder")  # the decoder needs the spatial map: fine-tuning only


def test_feature_bundle_is_refused(toy_bundle):
    with pytest.raises(ConfigError, match="image bundle"):
        train_finetune(toy_bundle, TrainConfig(method="an", setting="finetune"))


@pytest.mark.slow
def test_run_saves_an_image_model_that_predicts_from_paths(bundle, tmp_path):
    from spmlkit.practitioner.saved import load_model
    from spmlkit.practitioner.run_folder import run_training

    cfg = TrainConfig(method="an", finetune_epochs=2, lr=1e-2, **TINY)
    res = run_training(bundle, cfg, tmp_path / "run")
    model = load_model(tmp_path / "run")
    assert model.image["backbone"] == "tiny-random" and model.takes_images
    P = model.predict_proba(bundle.paths("test"))
    assert P.shape == (bundle.size("test"), 10)
    from spmlkit.metrics import mean_average_precision

    assert mean_average_precision(bundle.labels("test"), P).map == pytest.approx(res.test_map, abs=1e-6)
    # resuming a finished run changes nothing
    again = run_training(bundle, cfg, tmp_path / "run")
    assert again.val_history == res.val_history and again.test_map == pytest.approx(res.test_map, abs=1e-9)


@pytest.mark.slow
def test_killed_finetune_resumes_to_the_same_result(bundle, tmp_path):
    cfg = TrainConfig(method="an", finetune_epochs=3, lr=1e-2, **TINY)
    (full,) = train_finetune(bundle, cfg, run_dir=tmp_path / "full")
    train_finetune(bundle, cfg.replace(finetune_epochs=2), run_dir=tmp_path / "part")  # "killed" after epoch 2
    (resumed,) = train_finetune(bundle, cfg, run_dir=tmp_path / "part")
    assert resumed.val_history == full.val_history and resumed.test_map == full.test_map


def test_linear_init_run_that_gets_worse_keeps_the_linear_model(bundle):
    """Issue 23: fine-tuning evaluates at epoch 0 (right after LinearInit), so a run whose
    fine-tuning epochs only lose validation mAP keeps the linear head (best epoch 0) and
    reports the linear model's test mAP; every run states its seconds per epoch."""
    cfg = TrainConfig(method="an", linear_init=True, epochs=25, linear_init_lr=5e-2, finetune_epochs=2, **TINY)
    (res,) = train_finetune(bundle, cfg, lrs=[100.0], seeds=[0])  # lr 100: Adam wrecks the network
    ft = res.finetune
    init = ft["linear_init"]
    assert ft["epoch0_val_score"] == pytest.approx(init["val_score"], abs=1e-4)  # the linear model, scored on images
    assert max(res.val_history) < ft["epoch0_val_score"]  # precondition: fine-tuning made it worse
    assert res.best_epoch == 0 and res.val_score == pytest.approx(ft["epoch0_val_score"])
    assert res.test_map == pytest.approx(init["test_map"], abs=1e-3)  # the linear head's test score
    assert res.epochs_run == 2 and len(ft["epoch_seconds"]) == 2 and ft["seconds_per_epoch"] > 0
    # a run that improves keeps its best fine-tuned epoch
    (ok,) = train_finetune(bundle, cfg.replace(finetune_epochs=1), lrs=[1e-3], seeds=[0])
    if ok.val_history[0] > ok.finetune["epoch0_val_score"]:
        assert ok.best_epoch == 1
    else:
        assert ok.best_epoch == 0


def test_scoring_epoch_0_leaves_the_global_random_state(bundle, monkeypatch):
    """Scoring the LinearInit model at epoch 0 must not draw from the global random state:
    iterating the validation loader draws a seed from it, which shifted every later draw of
    a LinearInit run (23a4959: coco-mini AN+li test mAP 17.54 -> 17.24)."""
    import torch

    import spmlkit.training.finetune as ft

    real = ft.evaluate_initial
    seen = []

    def checked(learner, method, evaluate):
        before = torch.get_rng_state()
        out = real(learner, method, evaluate)
        seen.append(torch.equal(before, torch.get_rng_state()))
        return out

    monkeypatch.setattr(ft, "evaluate_initial", checked)
    cfg = TrainConfig(method="an", linear_init=True, epochs=3, linear_init_lr=5e-2, finetune_epochs=1, **TINY)
    train_finetune(bundle, cfg, lrs=[1e-3], seeds=[0])
    assert seen == [True]
