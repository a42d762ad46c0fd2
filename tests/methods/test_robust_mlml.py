"""Hill, focal margin and SPLC methods (Zhang et al. 2021)."""
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from spmlkit.losses import get_loss
from spmlkit.losses.robust_mlml import focal_margin_positive
from spmlkit.methods import build_method
from spmlkit.methods.robust_mlml import SelfPacedCorrection
from spmlkit.training import train_linear
from tests.helpers.training_checks import assert_resume_equals_uninterrupted
from tests.helpers.factories import batch_of, setup_method

FM = get_loss("focal-margin")


def test_splc_switches_negatives_above_tau_after_warmup():
    """Zhang Eq. 12: after the warm-up epoch an unobserved label with p > τ is trained as a positive
    (loss⁺); at or below τ it keeps loss⁻; epoch 1 corrects nothing."""
    Z = torch.tensor([[1, 0, 0, 0]], dtype=torch.int8)
    tau = 0.6
    logit = lambda p: torch.logit(torch.tensor(p)).item()  # noqa: E731
    s = torch.tensor([[[2.0, logit(0.9), logit(0.5), logit(0.61)]]])
    m = setup_method("splc", Z, tau=tau)
    b = batch_of(Z)
    m.on_epoch_start(1)
    assert torch.allclose(m.loss_matrix(s, b), FM(s, b.observed))
    m.on_epoch_start(2)
    out = m.loss_matrix(s, b)[0, 0]
    base = FM(s, b.observed)[0, 0]
    pos = focal_margin_positive(s)[0, 0]
    assert torch.allclose(out[[0, 2]], base[[0, 2]])  # the observed positive, and p = 0.5 <= τ
    assert torch.allclose(out[[1, 3]], pos[[1, 3]])  # p = 0.9 and 0.61 > τ: corrected to positives
    assert torch.equal(b.observed, Z[None])  # the observations are never mutated
    assert m.components[0].n_corrected == 2


def test_splc_correction_is_self_paced_not_remembered():
    Z = torch.tensor([[1, 0]], dtype=torch.int8)
    m = setup_method("splc", Z)
    m.on_epoch_start(3)
    b = batch_of(Z)
    high = torch.tensor([[[1.0, 3.0]]])
    low = torch.tensor([[[1.0, -3.0]]])
    assert torch.allclose(m.loss_matrix(high, b)[0, 0, 1], focal_margin_positive(high)[0, 0, 1])
    assert torch.allclose(m.loss_matrix(low, b), FM(low, b.observed))  # the next step decides afresh


def test_splc_members_are_independent():
    torch.manual_seed(0)
    Z = torch.zeros(4, 5, dtype=torch.int8)
    Z[torch.arange(4), torch.tensor([0, 1, 2, 3])] = 1
    s = torch.randn(3, 4, 5) * 2
    m = setup_method("splc", Z, G=3)
    m.on_epoch_start(2)
    out = m.loss_matrix(s, batch_of(Z, G=3))
    for g in range(3):
        one = setup_method("splc", Z)
        one.on_epoch_start(2)
        assert torch.allclose(one.loss_matrix(s[g:g + 1], batch_of(Z))[0], out[g])


def test_splc_validation_and_state():
    with pytest.raises(ConfigError):
        build_method("splc", tau=1.5)
    with pytest.raises(ConfigError):
        SelfPacedCorrection(0.6, start_epoch=0)
    m = setup_method("splc", torch.tensor([[1, 0]]))
    m.on_epoch_start(5)
    fresh = setup_method("splc", torch.tensor([[1, 0]]))
    fresh.load_state_dict(m.state_dict())
    assert fresh.components[0].epoch == 5


def test_hill_method_uses_the_hill_loss():
    Z = torch.tensor([[1, 0, 0]], dtype=torch.int8)
    s = torch.randn(1, 1, 3)
    m = setup_method("hill", Z)
    assert torch.allclose(m.loss_matrix(s, batch_of(Z)), get_loss("hill")(s, Z[None]))


@pytest.mark.parametrize("name", ["hill", "splc", "focal-margin"])
def test_end_to_end_learns(toy_bundle, name):
    r = train_linear(toy_bundle, TrainConfig(method=name, epochs=6, lr=1e-2))[0]
    assert r.test_map > 70


def test_splc_resume_gives_the_same_result(toy_bundle, tmp_path):
    cfg = TrainConfig(method="splc", epochs=4, lr=1e-2, params={"tau": 0.55})
    assert_resume_equals_uninterrupted(toy_bundle, cfg, tmp_path, killed_after=2)


@pytest.mark.slow
def test_splc_members_equal_separate_runs(toy_bundle):
    from tests.helpers.training_checks import members_and_separate_runs

    cfg = TrainConfig(method="splc", epochs=3, batch_size=8, params={"tau": 0.55})
    for r, alone in members_and_separate_runs(toy_bundle, cfg, [1e-2, 1e-3], [0, 1]):
        assert alone.val_history == pytest.approx(r.val_history, abs=1e-4)
