"""Large-Loss modification (Kim et al. 2022): LL-R, LL-Ct, LL-Cp."""
import pytest
import torch
import torch.nn.functional as F

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from spmlkit.losses import get_loss
from spmlkit.methods import build_method
from spmlkit.methods.large_loss import LargeLossModification
from spmlkit.training import train_linear
from tests.helpers.training_checks import assert_resume_equals_uninterrupted, members_and_separate_runs
from tests.helpers.factories import batch_of, setup_method, single_positive

AN = get_loss("an")


def single_positive_Z(N=4, L=5, seed=0):
    return single_positive(N, L, torch.Generator().manual_seed(seed))


# ------------------------------------------------------------------ k
def test_k_follows_the_schedule():
    ll = LargeLossModification("reject", 0.004)
    # epoch 1 is plain AN; epoch t rejects ceil(B*L*(t-1)*delta): B*L = 112 -> 0.448 -> 1, 2.24 -> 3 (epoch 6)
    assert [ll.n_selected(112, t) for t in (1, 2, 6)] == [0, 1, 3]
    assert LargeLossModification("reject", 0.01).n_selected(100, 4) == 3  # 100 * 0.03 = 3 exactly, not 4
    cp = LargeLossModification("permanent", 0.004)
    assert [cp.n_selected(112, t) for t in (1, 2, 6, 20)] == [0, 1, 1, 1]  # ceil(B*L*delta) from epoch 2
    assert LargeLossModification("reject", 0.3).n_selected(10, 9) == 10  # fraction capped at 1


def test_delta_rel_validation():
    with pytest.raises(ConfigError, match="fraction"):
        LargeLossModification("reject", 20)
    with pytest.raises(ConfigError):
        LargeLossModification("drop", 0.1)
    with pytest.raises(ConfigError):
        build_method("ll-r", delta_rel=-0.1)


# ------------------------------------------------------------------ equals AN
def test_delta_zero_equals_an_loss():
    Z = single_positive_Z()
    m = setup_method("ll-r", Z, delta_rel=0.0)
    logits = torch.randn(1, 4, 5)
    batch = batch_of(Z, range(4))
    for epoch in (1, 5, 30):
        m.on_epoch_start(epoch)
        assert torch.equal(m.loss_matrix(logits, batch), AN(logits, batch.observed))


def test_delta_zero_trains_like_an(toy_bundle):
    cfg = TrainConfig(method="an", epochs=4, lr=1e-2)
    an = train_linear(toy_bundle, cfg)[0]
    llr = train_linear(toy_bundle, cfg.replace(method="ll-r", params={"delta_rel": 0.0}))[0]
    assert llr.val_history == an.val_history and llr.test_map == an.test_map


# ------------------------------------------------------------------ rejection
def test_rejects_exactly_k_largest_unobserved_per_member():
    torch.manual_seed(0)
    G, B, L = 3, 4, 5
    Z = single_positive_Z(B, L)
    m = setup_method("ll-r", Z, G=G, delta_rel=0.1)
    m.on_epoch_start(3)  # k = ceil(20 * 2 * 0.1) = 4
    logits = torch.randn(G, B, L) * 3
    batch = batch_of(Z, range(B), G=G)
    an = AN(logits, batch.observed)
    out = m.loss_matrix(logits, batch)
    for g in range(G):
        rejected = (out[g] == 0) & (an[g] != 0)
        assert rejected.sum().item() == 4
        assert (Z[rejected] == 0).all()  # only unobserved entries
        unobserved_losses = an[g][Z == 0]
        assert an[g][rejected].min() >= unobserved_losses.sort(descending=True).values[3]
        assert torch.equal(out[g][~rejected], an[g][~rejected])


def test_more_to_reject_than_unobserved_never_touches_observed():
    """Edge case (the authors' code, snucml/LargeLossMatters): the authors' threshold becomes 0 and observed positives
    are rejected too; here k is capped at the unobserved entries."""
    Z = torch.tensor([[1, 0, 0], [1, 1, 0]], dtype=torch.int8)
    for name in ("ll-r", "ll-ct", "ll-cp"):
        m = setup_method(name, Z, delta_rel=0.9)
        m.on_epoch_start(3)  # fraction min(1, 1.8) = 1 -> k = 6 > 3 unobserved
        logits = torch.randn(1, 2, 3)
        batch = batch_of(Z, [0, 1])
        out = m.loss_matrix(logits, batch)
        pos = Z == 1
        assert torch.equal(out[0][pos], AN(logits, batch.observed)[0][pos])
        if name == "ll-r":
            assert (out[0][~pos] == 0).all()
        else:
            assert torch.allclose(out[0][~pos], F.softplus(-logits[0][~pos]))


def test_temporary_correction_is_bce_with_target_one():
    torch.manual_seed(1)
    Z = single_positive_Z()
    m = setup_method("ll-ct", Z, delta_rel=0.1)
    m.on_epoch_start(2)  # k = 2
    logits = torch.randn(1, 4, 5)
    batch = batch_of(Z, range(4))
    an = AN(logits, batch.observed)
    out = m.loss_matrix(logits, batch)
    changed = out != an
    assert changed.sum() == 2
    assert torch.allclose(out[changed], F.softplus(-logits[changed]))  # -log sigmoid(s)


# ------------------------------------------------------------------ persistence
def test_permanent_corrections_persist_and_temporary_do_not():
    Z = single_positive_Z(N=4, L=5)
    batch = batch_of(Z, range(4))
    big = torch.full((1, 4, 5), -3.0)
    big[0, 0, 0 if Z[0, 0] == 0 else 1] = 5.0  # one unobserved entry with a large AN loss
    target = (0, 0 if Z[0, 0] == 0 else 1)
    calm = torch.full((1, 4, 5), -3.0)  # next epoch: nothing stands out
    for name, persists in (("ll-ct", False), ("ll-cp", True)):
        m = setup_method(name, Z, delta_rel=0.05)  # k = ceil(20 * 0.05) = 1
        m.on_epoch_start(2)
        out = m.loss_matrix(big, batch)
        assert out[0][target].item() == pytest.approx(F.softplus(torch.tensor(-5.0)).item())
        m.on_epoch_end(2, lambda: None)
        m.on_epoch_start(3)
        m.components[0].delta_rel = 0.0  # no new selections: only what was remembered can act
        out = m.loss_matrix(calm, batch)
        want = F.softplus(torch.tensor(3.0)) if persists else F.softplus(torch.tensor(-3.0))  # target 1 vs 0
        assert out[0][target].item() == pytest.approx(want.item())
        assert torch.equal(batch.observed, Z[None])  # the observations are never mutated


def test_permanent_state_per_member_and_resume():
    torch.manual_seed(2)
    Z = single_positive_Z(N=6, L=4)
    m = setup_method("ll-cp", Z, G=2, delta_rel=0.1)
    m.on_epoch_start(2)
    logits = torch.randn(2, 3, 4) * 4
    m.loss_matrix(logits, batch_of(Z, [1, 3, 5], G=2))
    corrected = m.components[0].corrected
    assert corrected.shape == (2, 6, 4) and corrected.sum(dim=(1, 2)).tolist() == [2, 2]  # ceil(12 * 0.1) each
    for g in range(2):  # member g equals a separate run on its own logits
        alone = setup_method("ll-cp", Z, G=1, delta_rel=0.1)
        alone.on_epoch_start(2)
        alone.loss_matrix(logits[g:g + 1], batch_of(Z, [1, 3, 5]))
        assert torch.equal(alone.components[0].corrected[0], corrected[g])
    fresh = setup_method("ll-cp", Z, G=2, delta_rel=0.1)
    fresh.load_state_dict(m.state_dict())
    assert torch.equal(fresh.components[0].corrected, corrected) and fresh.components[0].epoch == 2


def test_member_rows_are_independent_for_rejection():
    torch.manual_seed(3)
    Z = single_positive_Z(N=4, L=6)
    m = setup_method("ll-r", Z, G=3, delta_rel=0.2)
    m.on_epoch_start(2)
    logits = torch.randn(3, 4, 6)
    out = m.loss_matrix(logits, batch_of(Z, range(4), G=3))
    for g in range(3):
        one = setup_method("ll-r", Z, G=1, delta_rel=0.2)
        one.on_epoch_start(2)
        assert torch.equal(one.loss_matrix(logits[g:g + 1], batch_of(Z, range(4)))[0], out[g])


def test_needs_a_per_entry_loss():
    ll = LargeLossModification("reject", 0.5)
    ll.on_epoch_start(3)
    with pytest.raises(ConfigError, match="per-entry"):
        ll.modify_loss(torch.ones(1, 2, 1), None, torch.zeros(1, 2, 3), torch.zeros(1, 2, 3))


# ------------------------------------------------------------------ training
@pytest.mark.parametrize("name", ["ll-r", "ll-ct", "ll-cp"])
def test_end_to_end_learns(toy_bundle, name):
    r = train_linear(toy_bundle, TrainConfig(method=name, epochs=6, lr=1e-2, params={"delta_rel": 0.02}))[0]
    assert r.test_map > 70


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ll-r", "ll-cp"])
def test_members_equal_separate_runs(toy_bundle, name):
    cfg = TrainConfig(method=name, epochs=4, batch_size=8, params={"delta_rel": 0.05})
    for r, alone in members_and_separate_runs(toy_bundle, cfg, [1e-2, 1e-3, 1e-2], [0, 0, 1]):
        assert alone.best_epoch == r.best_epoch
        assert alone.val_history == pytest.approx(r.val_history, abs=1e-4)
        assert alone.test_map == pytest.approx(r.test_map, abs=1e-4)


def test_resume_gives_the_same_result(toy_bundle, tmp_path):
    cfg = TrainConfig(method="ll-cp", epochs=5, lr=1e-2, params={"delta_rel": 0.05})
    assert_resume_equals_uninterrupted(toy_bundle, cfg, tmp_path, killed_after=3)
