import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.io import read_jsonl
from spmlkit.training import StackedAdam, train_linear
from spmlkit.training.optim import fused_available
from tests.helpers.training_checks import assert_resume_equals_uninterrupted, host_reads_during, members_and_separate_runs


@pytest.mark.parametrize("impl", ["fused", "reference"])
def test_stacked_adam_matches_torch_adam(impl):
    if impl == "fused" and not fused_available():
        pytest.skip("no fused Adam kernel in this torch")
    torch.manual_seed(0)
    w0 = torch.randn(1, 5, 3)
    a = w0.clone().requires_grad_()
    b = w0[0].clone().requires_grad_()
    c = w0[0].clone().requires_grad_()
    opt_a = StackedAdam([a], [0.01], impl=impl)
    opt_b = torch.optim.Adam([b], lr=0.01)
    opt_c = torch.optim.Adam([c], lr=0.01, fused=True) if impl == "fused" else None
    for i in range(50):
        g = torch.randn(5, 3) * 10.0 ** (i % 7 - 5)  # gradients over several magnitudes
        a.grad, b.grad, c.grad = g.unsqueeze(0).clone(), g.clone(), g.clone()
        opt_a.step()
        opt_b.step()
        if opt_c is not None:
            opt_c.step()
    assert opt_a.impl == impl
    torch.testing.assert_close(a[0], b, rtol=0, atol=1e-6)  # torch's default (for-loop) Adam
    if opt_c is not None:
        assert torch.equal(a[0], c)  # the same kernel as torch.optim.Adam(fused=True): bit for bit


@pytest.mark.parametrize("impl", ["fused", "reference"])
def test_stacked_adam_members_equal_separate_optimizers(impl):
    if impl == "fused" and not fused_available():
        pytest.skip("no fused Adam kernel in this torch")
    torch.manual_seed(1)
    lrs = [1e-2, 1e-3, 1e-4, 1e-2, 1e-3, 1e-4]  # members sharing an lr share a fused call
    W = torch.randn(6, 32, 16).requires_grad_()
    bias = torch.randn(6, 1, 16).requires_grad_()
    alone = [(W[g:g + 1].detach().clone().requires_grad_(), bias[g:g + 1].detach().clone().requires_grad_())
             for g in range(6)]
    opt = StackedAdam([W, bias], lrs, impl=impl)
    opts = [StackedAdam(list(p), [lrs[g]], impl=impl) for g, p in enumerate(alone)]
    for _ in range(30):
        gw, gb = torch.randn_like(W), torch.randn_like(bias)
        W.grad, bias.grad = gw.clone(), gb.clone()
        opt.step()
        for g, (w1, b1) in enumerate(alone):
            w1.grad, b1.grad = gw[g:g + 1].clone(), gb[g:g + 1].clone()
            opts[g].step()
    for g, (w1, b1) in enumerate(alone):
        assert torch.equal(W[g], w1[0]) and torch.equal(bias[g], b1[0])


def _same_weights(a, b, atol=0.0):
    for k in a.state["head"]:
        if atol == 0.0:
            assert torch.equal(a.state["head"][k], b.state["head"][k]), k
        else:
            torch.testing.assert_close(a.state["head"][k], b.state["head"][k], rtol=0, atol=atol)


def test_grid_members_equal_separate_runs(toy_bundle):
    # 5 labels: a member's (B, L) block is not a multiple of the SIMD width, so the
    # vectorised loss kernels split it differently when G changes; weights then differ
    # in the last bits (measured <= 1e-7) and the mAPs not at all.
    cfg = TrainConfig(method="an", epochs=4, batch_size=8)
    for r, alone in members_and_separate_runs(toy_bundle, cfg, [1e-2, 1e-3, 1e-2], [0, 0, 1], keep_state=True):
        assert alone.best_epoch == r.best_epoch
        assert alone.val_history == pytest.approx(r.val_history, abs=1e-9)
        assert alone.test_map == pytest.approx(r.test_map, abs=1e-9)
        _same_weights(alone, r, atol=1e-6)


@pytest.mark.parametrize("head", ["linear", "mlp"])
def test_grid_members_equal_separate_runs_bit_for_bit(tmp_path, head):
    # Linear head, 16 labels x batch 8 and 96 training rows (no partial batch): every
    # kernel treats a member's block identically whatever G is, so the grid is exactly
    # separate runs.  The MLP's 6-feature input layer is not SIMD-aligned: last bits only.
    from tests.helpers.factories import make_toy_dataset
    from spmlkit.data import prepare_bundle

    bundle = prepare_bundle(make_toy_dataset(L=16), tmp_path / "b", log=lambda m: None)
    assert bundle.size("train") % 8 == 0
    cfg = TrainConfig(method="an", epochs=3, batch_size=8, head=head, hidden=32)
    for r, alone in members_and_separate_runs(bundle, cfg, [1e-2, 1e-3, 1e-2], [0, 0, 1], keep_state=True):
        assert alone.val_history == pytest.approx(r.val_history, abs=0 if head == "linear" else 1e-9)
        assert alone.test_map == pytest.approx(r.test_map, abs=0 if head == "linear" else 1e-9)
        _same_weights(alone, r, atol=0.0 if head == "linear" else 1e-6)


def test_compaction_removes_stopped_members_without_changing_results(toy_bundle, tmp_path):
    cfg = TrainConfig(method="an", epochs=8, batch_size=16, patience=0)
    lrs, seeds = [0.5, 1e-3, 0.2], [0, 0, 1]
    grid = train_linear(toy_bundle, cfg, lrs=lrs, seeds=seeds, keep_state=True, run_dir=tmp_path / "g")
    assert min(r.epochs_run for r in grid) < max(r.epochs_run for r in grid)  # someone stopped early
    rows = read_jsonl(tmp_path / "g" / "metrics.jsonl")
    for g, r in enumerate(grid):  # a stopped member is no longer trained (no rows after it stopped)
        assert sum(1 for row in rows if row["member"] == g) == r.epochs_run
        (alone,) = train_linear(toy_bundle, cfg.replace(lr=r.lr, seed=r.seed), keep_state=True)
        assert (alone.epochs_run, alone.best_epoch) == (r.epochs_run, r.best_epoch)
        assert alone.val_history == pytest.approx(r.val_history, abs=1e-9)
        assert alone.test_map == pytest.approx(r.test_map, abs=1e-9)
        _same_weights(alone, r, atol=1e-6)
    # killed after the first member stopped, then resumed: same as uninterrupted
    first_stop = min(r.epochs_run for r in grid)
    part = tmp_path / "part"
    train_linear(toy_bundle, cfg.replace(epochs=first_stop + 1), lrs=lrs, seeds=seeds, run_dir=part)
    resumed = train_linear(toy_bundle, cfg, lrs=lrs, seeds=seeds, run_dir=part, keep_state=True)
    for a, b in zip(grid, resumed):
        assert a.val_history == b.val_history and a.test_map == b.test_map
        _same_weights(a, b)


def test_deterministic_and_seed_dependent(toy_bundle):
    cfg = TrainConfig(method="an", epochs=3)
    a, b = train_linear(toy_bundle, cfg)[0], train_linear(toy_bundle, cfg)[0]
    c = train_linear(toy_bundle, cfg.replace(seed=1))[0]
    assert a.val_history == b.val_history and a.val_history != c.val_history


def test_best_epoch_selection_and_patience(toy_bundle):
    r = train_linear(toy_bundle, TrainConfig(method="an", epochs=30, lr=0.05, patience=0))[0]
    assert r.epochs_run == r.best_epoch + 1 or r.epochs_run == 30
    assert r.val_score == max(r.val_history)


def test_learns_beyond_chance(toy_bundle):
    bce = train_linear(toy_bundle, TrainConfig(method="bce", epochs=15, lr=1e-2))[0]
    assert bce.test_map > 70  # random scores give ~ the label frequency (~25)


def test_resume_gives_the_same_result(toy_bundle, tmp_path):
    cfg = TrainConfig(method="an", epochs=6, lr=1e-2)
    assert_resume_equals_uninterrupted(toy_bundle, cfg, tmp_path, killed_after=3)


def test_memory_mapped_features_give_the_same_result(toy_bundle):
    cfg = TrainConfig(method="an", epochs=3)
    a = train_linear(toy_bundle, cfg)[0]
    b = train_linear(toy_bundle, cfg.replace(max_memory_mb=0.0001))[0]
    assert b.val_history == pytest.approx(a.val_history, abs=1e-4)


def test_no_host_synchronisation_inside_an_epoch(toy_bundle, monkeypatch):
    """The training loop never reads a tensor value on the host per step (.item(),
    .tolist(), float(), bool(), .numpy()): on an accelerator each would stall the queue."""
    from spmlkit.training.linear import assemble_linear
    from spmlkit.training.loop import train_epoch

    run = assemble_linear(toy_bundle, TrainConfig(method="an", batch_size=8), lrs=[1e-2, 1e-3], seeds=[0, 1])
    learner, method = run.learner, run.parts.method
    (loss_sum, n_steps), calls = host_reads_during(monkeypatch, lambda: train_epoch(learner, method, 1))
    assert n_steps == 12 and loss_sum.shape == (2,)
    assert calls == [], f"host synchronisation in the training loop: {calls[:5]}"


def test_threads_option_is_applied_and_restored(toy_bundle):
    before = torch.get_num_threads()
    seen = []
    train_linear(toy_bundle, TrainConfig(method="an", epochs=1, threads=1),
                 on_epoch=lambda info: seen.append(torch.get_num_threads()))
    assert seen == [1] and torch.get_num_threads() == before


def test_standardize_auto_depends_on_the_data(toy_bundle):
    """Default (None): tabular features are z-scored, cached backbone features are fed raw."""
    from types import SimpleNamespace

    from spmlkit.training.linear import resolve_standardize

    cfg = TrainConfig()
    assert cfg.standardize is None
    assert resolve_standardize(toy_bundle, cfg) is True
    assert resolve_standardize(SimpleNamespace(kind="images"), cfg) is False
    assert resolve_standardize(SimpleNamespace(kind="images"), cfg.replace(standardize=True)) is True
    assert resolve_standardize(toy_bundle, cfg.replace(standardize=False)) is False
