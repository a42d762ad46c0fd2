"""GR-Loss method and its schedule component (Chen et al. 2024)."""
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from spmlkit.losses import get_loss
from spmlkit.methods import Batch, build_method
from spmlkit.methods.generalized_robust import GRSchedule
from spmlkit.training import train_linear
from tests.helpers.factories import setup_method


def setup(Z, epochs=10, G=1, **params):
    return setup_method("gr", Z, G, epochs=epochs, **params)


def test_schedule_moves_linearly_from_start_to_end():
    """Chen §3.3 / official code: w, b move with (t − 1)/T, μ, σ with t/T."""
    sched = setup(torch.tensor([[1, 0]]), epochs=10).components[0]
    first, last = sched.parameters_at(1), sched.parameters_at(10)
    assert first["w"] == 0.0 and first["b"] == -2.0
    assert first["mu"] == pytest.approx(0.53) and first["sigma"] == pytest.approx(1.85)
    assert last["w"] == pytest.approx(1.8) and last["mu"] == pytest.approx(0.8) and last["sigma"] == pytest.approx(0.5)
    mids = [sched.parameters_at(t)["w"] for t in range(1, 11)]
    assert all(b > a for a, b in zip(mids, mids[1:]))


def test_soft_label_is_constant_at_start_and_increasing_later():
    p = torch.linspace(0, 1, 11)
    assert torch.allclose(GRSchedule.soft_label(p, 0.0, -2.0), torch.full_like(p, torch.sigmoid(torch.tensor(-2.0))))
    k = GRSchedule.soft_label(p, 2.0, -2.0)
    assert torch.all(k.diff() > 0) and float(k.max()) == pytest.approx(0.5)
    v = GRSchedule.weight(p, 0.8, 0.5)
    assert int(torch.argmax(v)) == 8 and float(v.max()) == pytest.approx(1.0)


def test_method_loss_is_gr_with_the_schedule_inputs():
    torch.manual_seed(0)
    Z = torch.zeros(4, 5, dtype=torch.int8)
    Z[:, 0] = 1
    m = setup(Z, epochs=5)
    m.on_epoch_start(3)
    s = torch.randn(1, 4, 5, requires_grad=True)
    batch = Batch(inputs=None, index=torch.arange(4).view(1, -1), observed=Z[None])
    par = m.components[0].parameters_at(3)
    p = torch.sigmoid(s.detach())
    want = get_loss("gr")(s, Z[None], soft_targets=torch.sigmoid(par["w"] * p + par["b"]),
                          weights=torch.exp(-0.5 * ((p - par["mu"]) / par["sigma"]) ** 2))
    assert torch.allclose(m.loss_matrix(s, batch), want)


def test_flat_schedule_with_q3_zero_is_an_weighted():
    """k̂ ≈ 0 (b → −∞ numerically) and v ≈ 1 (σ huge) with q₃ = 0: the method trains like AN."""
    Z = torch.tensor([[1, 0, 0]], dtype=torch.int8)
    m = setup(Z, q3=0.0, b0=-60.0, b_max=-60.0, sigma0=1e6, sigma_max=1e6)
    m.on_epoch_start(1)
    s = torch.randn(1, 1, 3)
    out = m.loss_matrix(s, Batch(inputs=None, index=torch.zeros(1, 1, dtype=torch.long), observed=Z[None]))
    assert torch.allclose(out, get_loss("an")(s, Z[None]), atol=1e-5)


def test_bad_parameters():
    with pytest.raises(ConfigError):
        build_method("gr", sigma0=0.0)
    with pytest.raises(ConfigError):
        build_method("gr", w_max=float("nan"))


def test_end_to_end_learns(toy_bundle):
    r = train_linear(toy_bundle, TrainConfig(method="gr", epochs=6, lr=1e-2))[0]
    assert r.test_map > 70


def test_resume_gives_the_same_result(toy_bundle, tmp_path):
    """A run killed after epoch 2 of 4 (the schedule depends on T, so the kill happens inside
    the 4-epoch run) resumes to the uninterrupted result."""
    cfg = TrainConfig(method="gr", epochs=4, lr=1e-2)
    full = train_linear(toy_bundle, cfg, run_dir=tmp_path / "full")[0]

    class Killed(Exception):
        pass

    def kill_after_2(info):
        if info["epoch"] == 2:
            raise Killed

    with pytest.raises(Killed):
        train_linear(toy_bundle, cfg, run_dir=tmp_path / "part", on_epoch=kill_after_2)
    resumed = train_linear(toy_bundle, cfg, run_dir=tmp_path / "part")[0]
    assert resumed.val_history == full.val_history and resumed.test_map == full.test_map


@pytest.mark.slow
def test_members_equal_separate_runs(toy_bundle):
    from tests.helpers.training_checks import members_and_separate_runs

    cfg = TrainConfig(method="gr", epochs=3, batch_size=8)
    for r, alone in members_and_separate_runs(toy_bundle, cfg, [1e-2, 1e-3], [0, 1]):
        assert alone.val_history == pytest.approx(r.val_history, abs=1e-4)
