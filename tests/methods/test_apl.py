"""Asymmetric pseudo-labelling (Zhou Algorithm 1, Eq. 6-8) as a component."""
import json
import math

import numpy as np
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from spmlkit.methods import Batch, build_method
from spmlkit.methods.apl import AsymmetricPseudoLabeler
from spmlkit.training import train_linear
from tests.helpers.training_checks import members_and_separate_runs
from tests.helpers.factories import single_positive, train_context

N, L, G = 60, 4, 2
T_T, T_W = 8, 3


def observations(seed=0):
    rng = np.random.default_rng(seed)
    Z = single_positive(N, L, rng)
    Z[(rng.random((N, L)) < 0.1) & (Z == 0)] = -1  # a few observed negatives (partial labels)
    return torch.from_numpy(Z)


def make(Z, **kw):
    apl = AsymmetricPseudoLabeler(**kw)
    apl.setup(train_context(Z, G=G, epochs=T_T))
    return apl


def run_epochs(apl, epochs, seed=1):
    gen = torch.Generator().manual_seed(seed)
    history = []
    for e in epochs:
        probs = torch.rand(G, N, L, generator=gen)
        before = {k: v.clone() for k, v in (("kind", apl.kind), ("target", apl.target), ("ep", apl.assigned_epoch))}
        logs = apl.on_epoch_end(e, lambda: probs)
        after = (apl.kind.clone(), apl.target.clone(), apl.assigned_epoch.clone())
        history.append((e, probs, before, after, logs))
    return history


def test_schedule_counts_lowest_and_freezing():
    Z = observations()
    apl = make(Z, theta=0.9, warmup=T_W)
    U = (Z == 0).sum(0).numpy()
    n_c = np.floor(0.9 * U / (T_T - T_W)).astype(int)  # ⌊θ/(T_t − T_w) · U_c⌋
    assert apl.n_negative.tolist() == n_c.tolist() and n_c.min() > 0
    assert apl.labels_epochs() == [3, 4, 5, 6, 7]  # T_w ≤ e < T_t
    for e, probs, before, (kind, target, ep), logs in run_epochs(apl, range(1, T_T + 1)):
        new = (kind != 0) & (before["kind"] == 0)
        if e < T_W or e >= T_T:  # warm-up, and no pass after the last epoch
            assert not new.any() and logs["apl_new_negatives"] == [0] * G
            continue
        # never re-labels, and soft targets stay frozen
        old = before["kind"] != 0
        assert torch.equal(kind[old], before["kind"][old]) and torch.equal(target[old], before["target"][old])
        assert torch.equal(ep[old], before["ep"][old])
        for g in range(G):
            for c in range(L):
                cand = (Z[:, c] == 0) & (before["kind"][g, :, c] == 0)
                chosen = new[g, :, c]
                assert int(chosen.sum()) == min(n_c[c], int(cand.sum()))  # exactly the scheduled number
                assert (kind[g, chosen, c] == -1).all() and (ep[g, chosen, c] == e).all()
                # the lowest predicted probabilities among the candidates
                rest = cand & ~chosen
                if chosen.any() and rest.any():
                    assert probs[g, chosen, c].max() <= probs[g, rest, c].min()
                # target = the probability at assignment time
                assert torch.equal(target[g, chosen, c], probs[g, chosen, c])
        assert logs["apl_new_negatives"] == [int(new[g].sum()) for g in range(G)]
    # observed entries are never touched; in total at most θ·U_c per class
    assert (apl.kind[:, Z != 0] == 0).all()
    per_class = (apl.kind == -1).sum(1)
    assert (per_class == torch.as_tensor(n_c * (T_T - T_W))).all()
    assert (per_class <= torch.as_tensor(np.floor(0.9 * U))).all()


def test_members_are_independent():
    Z = observations()
    apl = make(Z, warmup=T_W)
    probs = torch.rand(G, N, L, generator=torch.Generator().manual_seed(3))
    probs[1] = 1 - probs[0]
    apl.on_epoch_end(T_W, lambda: probs)
    assert not torch.equal(apl.kind[0], apl.kind[1])
    solo = AsymmetricPseudoLabeler(warmup=T_W)
    solo.setup(train_context(Z, epochs=T_T))
    solo.on_epoch_end(T_W, lambda: probs[1:])
    assert torch.equal(solo.kind[0], apl.kind[1]) and torch.equal(solo.target[0], apl.target[1])


def test_positive_option_and_hard_targets():
    Z = observations()
    apl = make(Z, warmup=T_W, theta=0.6, positive=True, positive_theta=0.3, soft=False)
    U = (Z == 0).sum(0).numpy()
    n_pos = np.floor(0.3 * U / (T_T - T_W)).astype(int)
    probs = torch.rand(G, N, L, generator=torch.Generator().manual_seed(5))
    apl.on_epoch_end(T_W, lambda: probs)
    for g in range(G):
        for c in range(L):
            pos = apl.kind[g, :, c] == 1
            neg = apl.kind[g, :, c] == -1
            assert int(pos.sum()) == n_pos[c] and pos.any()
            others = (Z[:, c] == 0) & ~pos
            assert probs[g, pos, c].min() >= probs[g, others, c].max()  # the highest probabilities
            assert (apl.target[g, pos, c] == 1).all() and (apl.target[g, neg, c] == 0).all()
    off = make(Z, warmup=T_W)
    off.on_epoch_end(T_W, lambda: probs)
    assert not (off.kind == 1).any()  # negative pseudo-labels only by default


def test_default_warmup_and_no_pass_when_warmup_covers_training():
    Z = observations()
    assert make(Z).warmup == T_T // 2
    late = make(Z, warmup=T_T)
    run_epochs(late, range(1, T_T + 1))
    assert not late.kind.any()
    with pytest.raises(ConfigError):
        AsymmetricPseudoLabeler(warmup=0)
    with pytest.raises(ConfigError):
        AsymmetricPseudoLabeler(theta=1.5)


def test_full_labels_nothing_to_label():
    Z = torch.where(torch.rand(N, L) < 0.3, 1, -1).to(torch.int8)
    apl = make(Z, warmup=1)
    run_epochs(apl, range(1, T_T + 1))
    assert not apl.kind.any()


def test_batch_inputs_gather_per_member_and_state_round_trip():
    Z = observations()
    apl = make(Z, warmup=T_W)
    run_epochs(apl, range(1, 6))
    idx = torch.tensor([[0, 5, 7], [7, 1, 59]])
    out = apl.batch_inputs(Batch(inputs=None, index=idx, observed=Z[idx]), torch.zeros(G, 3, L))["pseudo_targets"]
    for g in range(G):
        for b in range(3):
            n = idx[g, b]
            lab = apl.kind[g, n] != 0
            assert torch.equal(out[g, b, lab], apl.target[g, n, lab]) and torch.isnan(out[g, b, ~lab]).all()
    copy = make(Z, warmup=T_W)
    copy.load_state_dict(apl.state_dict())
    for k in ("kind", "target", "assigned_epoch"):
        assert torch.equal(getattr(copy, k), getattr(apl, k))


# ----------------------------------------------------------------- end to end
@pytest.mark.slow
def test_em_apl_end_to_end_on_toy_bundle(toy_bundle, tmp_path):
    cfg = TrainConfig(method="em-apl", epochs=6, lr=1e-2, params={"warmup": 2})
    run = tmp_path / "run"
    (res,) = train_linear(toy_bundle, cfg, run_dir=run)
    assert res.test_map > 50
    rows = [json.loads(line) for line in open(run / "metrics.jsonl")]
    counts = [r["apl_negatives"] for r in rows]
    U = (toy_bundle.observations("train") == 0).sum(0)
    per_pass = np.floor(0.9 * U / 4).sum()
    # passes at the end of epochs 2..5, none after epoch 6
    assert counts == [0, per_pass, 2 * per_pass, 3 * per_pass, 4 * per_pass, 4 * per_pass]
    assert rows[-1]["apl_new_negatives"] == 0
    # the pseudo-label state is in the checkpoint and a resumed run ends identically
    part = tmp_path / "part"

    class Killed(Exception):
        pass

    def kill_after_3(info):
        if info["epoch"] == 3:
            raise Killed

    with pytest.raises(Killed):
        train_linear(toy_bundle, cfg, run_dir=part, on_epoch=kill_after_3)
    (resumed,) = train_linear(toy_bundle, cfg, run_dir=part)
    assert resumed.val_history == res.val_history and resumed.test_map == res.test_map


def test_em_apl_grid_members_equal_separate_runs(toy_bundle):
    cfg = TrainConfig(method="em-apl", epochs=4, params={"warmup": 1})
    for r, alone in members_and_separate_runs(toy_bundle, cfg, [1e-2, 1e-3], [0, 1]):
        assert alone.val_history == pytest.approx(r.val_history, abs=1e-4)


def test_em_apl_method_defaults():
    m = build_method("em-apl")
    assert m.loss.name == "em-apl" and m.loss_params == {"alpha": 0.1, "beta": 0.2}
    assert m.params == {"alpha": 0.1, "beta": 0.2, "theta": 0.9, "warmup": None, "soft": True,
                        "positive": False, "positive_theta": 0.1}
    assert math.isclose(m.components[0].theta, 0.9)
