"""BoostLU (Kim et al. 2023): boosted class activation maps before pooling, on a Large-Loss scheme."""
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from spmlkit.methods import build_method
from spmlkit.methods.boostlu import boost_lu, boosted_logits
from spmlkit.methods.large_loss import LargeLossModification
from spmlkit.models.heads import StackedLinear
from spmlkit.training.finetune import prepare_finetune, train_finetune

from tests.helpers.image_fixtures import tiny_digits_bundle

TINY = dict(setting="finetune", backbone="tiny-random", image_size=32, batch_size=8)


def test_boost_lu_scales_positives_only():
    x = torch.tensor([-2.0, -0.5, 0.0, 0.5, 3.0])
    assert boost_lu(x, 5.0).tolist() == [-2.0, -0.5, 0.0, 2.5, 15.0]
    assert torch.equal(boost_lu(x, 1.0), x)


def test_alpha_one_is_the_plain_pooled_head_and_alpha_boosts_positive_regions():
    torch.manual_seed(0)
    fmap = torch.randn(3, 4, 5, 6)
    head = StackedLinear(4, 7, [torch.Generator().manual_seed(0)])
    plain = head(fmap.mean(dim=(2, 3)))
    assert torch.allclose(boosted_logits(fmap, head.weight, head.bias, 1.0), plain, atol=1e-5)
    boosted = boosted_logits(fmap, head.weight, head.bias, 5.0)
    assert torch.all(boosted >= plain - 1e-5)  # only positive activations grow
    cam = torch.einsum("bdhw,gdl->gblhw", fmap, head.weight) + head.bias[..., None, None]
    assert torch.allclose(boosted, (cam.clamp(min=0) * 5 + cam.clamp(max=0)).mean(dim=(-2, -1)), atol=1e-5)


def test_registered_for_finetuning_on_large_loss_schemes():
    for name, mode, delta in (("ll-r-boostlu", "reject", 0.005), ("ll-ct-boostlu", "temporary", 0.002),
                              ("ll-cp-boostlu", "permanent", 0.001)):
        m = build_method(name)
        assert m.setting == "finetune" and m.alpha == 5.0 and m.loss.name == "an"
        ll = m.component(LargeLossModification)
        assert ll.mode == mode and ll.delta_rel == delta
    with pytest.raises(ConfigError):
        build_method("ll-r-boostlu", alpha=0.5)


def test_linear_setting_is_refused(toy_bundle):
    from spmlkit.training import train_linear

    with pytest.raises(ConfigError, match="finetune"):
        train_linear(toy_bundle, TrainConfig(method="ll-ct-boostlu", epochs=1))


def test_training_forward_uses_boosted_cams(tmp_path):
    bundle = tiny_digits_bundle(tmp_path)
    learner, method, _, _ = prepare_finetune(bundle, TrainConfig(method="ll-ct-boostlu", lr=1e-2, **TINY), lr=1e-2,
                                             seed=0)
    batch = next(iter(learner.batches(1)))
    model = learner.model
    model.eval()
    with torch.no_grad():
        got = method.forward(model, batch)
        fmap = model.backbone.forward_map(batch.inputs)
        want = boosted_logits(fmap, model.head.weight, model.head.bias, 5.0)
        assert got.shape == (1, 8, 10) and torch.allclose(got, want)
        method.alpha = 1.0
        assert torch.allclose(method.forward(model, batch), model(batch.inputs), atol=1e-5)


@pytest.mark.slow
def test_finetunes_end_to_end(tmp_path):
    bundle = tiny_digits_bundle(tmp_path)
    losses = []
    r = train_finetune(bundle, TrainConfig(method="ll-r-boostlu", lr=1e-3, finetune_epochs=2, **TINY),
                       on_epoch=lambda info: losses.extend(row["train_loss"] for row in info["rows"]))[0]
    assert len(losses) == 2 and torch.isfinite(torch.tensor(losses)).all()  # (x == x lets infinity pass)
    assert torch.isfinite(torch.tensor([r.test_map, *r.val_history])).all() and 0.0 <= r.test_map <= 100.0
