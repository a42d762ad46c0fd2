"""Distributed training: 2 gloo processes on CPU reproduce 1 process.

The worker (tests/helpers/dist_worker.py) is launched by ``torchrun --standalone`` (a free port
is chosen by the rendezvous).  ``batch_size`` is the global batch, so both runs use the
same configuration.  Tolerance: the only difference is the order of floating-point
sums (the weight gradient is a sum of two per-rank partial products instead of one
product): weights agree to 1e-5 (measured ~3e-8 on the toy problem) and the
validation/test mAPs, which depend only on the ranking of the scores, to 1e-6 (measured
identical)."""
import json

import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.training.distributed import DistContext, all_gather_cat, context, shard_bounds, shard_sizes, sync_rows_
from spmlkit.training.finetune import train_finetune
from spmlkit.training.linear import train_linear
from tests.helpers.image_fixtures import tiny_digits_bundle
from tests.helpers.torchrun import torchrun


def test_shard_bounds_cover_the_batch_contiguously():
    for n in range(0, 23):
        for world in (1, 2, 3, 4):
            bounds = [shard_bounds(n, world, r) for r in range(world)]
            assert bounds[0][0] == 0 and bounds[-1][1] == n
            assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))  # contiguous, in rank order
            sizes = shard_sizes(n, world)
            assert max(sizes) - min(sizes) <= 1 and sum(sizes) == n
    assert [shard_bounds(16, 2, r) for r in range(2)] == [(0, 8), (8, 16)]  # W·b rows: b each


def test_helpers_are_identities_in_one_process():
    assert context() == DistContext() and not context().enabled
    t = torch.arange(6.0).view(1, 6)
    assert all_gather_cat(t, dim=1) is t
    table = torch.zeros(1, 5, 2)
    sync_rows_(table, torch.tensor([[3, 1]]), torch.tensor([[[1.0, 2.0], [3.0, 4.0]]]))
    assert table[0, 3].tolist() == [1.0, 2.0] and table[0, 1].tolist() == [3.0, 4.0] and table.sum() == 10


@pytest.mark.slow
def test_two_gloo_processes_reproduce_one_process(toy_bundle, tmp_path):
    # 96 training rows.  batch 7: every global batch splits 3 + 4 and the last one (5 rows)
    # 2 + 3; batch 1: rank 0 never has a row (empty shards); patience 0 with a large lr:
    # members stop and leave the stack; stages: killed after 2 epochs, resumed to 4.
    cases = {
        "grid_uneven": {"config": {"method": "an", "epochs": 3, "batch_size": 7}, "lrs": [1e-2, 1e-3],
                        "seeds": [0, 1]},
        "empty_shards": {"config": {"method": "bce", "epochs": 1, "batch_size": 1, "lr": 1e-2}},
        "compaction": {"config": {"method": "an", "epochs": 8, "batch_size": 16, "patience": 0},
                       "lrs": [0.5, 1e-3, 0.2], "seeds": [0, 0, 1]},
        "resume": {"config": {"method": "an", "epochs": 4, "batch_size": 10, "lr": 1e-2}, "stages": [2, 4],
                   "run_dir": str(tmp_path / "resumed")},
    }
    # stateful methods and batch-level rules: the global-batch loss makes them match too
    # (ROLE's estimator, APL's pseudo-labels, Large-Loss rejection, EPR's batch k-estimate,
    # OPML-SP's AP components and log-det regulariser, a weight regulariser)
    for m in ("role", "em-apl", "ll-r", "epr", "opml-sp", "l2r"):
        cases[m] = {"config": {"method": m, "epochs": 3, "batch_size": 7, "lr": 1e-2}, "lrs": [1e-2, 1e-3],
                    "seeds": [0, 1]}
    cli_out = tmp_path / "cli2"
    cli = ["train", str(toy_bundle.path), "-m", "an", "--epochs", "3", "--batch-size", "7", "--lr", "0.01",
           "-o", str(cli_out)]
    out = tmp_path / "dist.pt"
    torchrun(["tests/helpers/dist_worker.py", str(toy_bundle.path), str(out), json.dumps(cases), json.dumps(cli)])
    got = torch.load(out, weights_only=False)

    for name, case in cases.items():
        ref = train_linear(toy_bundle, TrainConfig(**case["config"]), lrs=case.get("lrs"), seeds=case.get("seeds"),
                           keep_state=True)
        assert len(got[name]) == len(ref)
        for a, b in zip(ref, got[name]):
            assert (b["epochs_run"], b["best_epoch"]) == (a.epochs_run, a.best_epoch), name
            assert b["val_history"] == pytest.approx(a.val_history, abs=1e-6), name
            assert b["test_map"] == pytest.approx(a.test_map, abs=1e-6), name
            assert b["train_map"] == pytest.approx(a.train_map, abs=1e-6), name
            for k, w in a.state["head"].items():
                torch.testing.assert_close(b["head"][k], w, rtol=0, atol=1e-5, msg=f"{name} {k}")
        if name == "compaction":  # the case really stopped members early
            assert min(r.epochs_run for r in ref) < case["config"]["epochs"]

    # the command line under torchrun: rank 0 alone wrote the run folder
    from spmlkit.cli import main
    from spmlkit.practitioner.saved import load_model

    assert main(cli[:-1] + [str(tmp_path / "cli1")]) == 0
    one, two = (json.loads((tmp_path / d / "result.json").read_text()) for d in ("cli1", "cli2"))
    assert two["world_size"] == 2 and one["world_size"] == 1
    assert two["val_history"] == pytest.approx(one["val_history"], abs=1e-6)
    assert two["test_map"] == pytest.approx(one["test_map"], abs=1e-6)
    assert len((cli_out / "metrics.jsonl").read_text().splitlines()) == 3  # one row per epoch, not per rank
    w1, w2 = load_model(tmp_path / "cli1").state, load_model(cli_out).state
    for k in w1:
        torch.testing.assert_close(w2[k], w1[k], rtol=0, atol=1e-5)


# Distributed fine-tuning: 2 gloo processes (torchrun) against 1 process on tiny images.
#
# With ``freeze_bn`` (BatchNorm statistics fixed, affine parameters trained) the only
# difference from one process is the order of floating-point sums (the weight gradient is
# a sum of per-rank partial products), as in the linear setting.  Asserted: same best
# epoch, validation history and test/training mAP within 1e-6 (measured equal), weights
# within 1e-4 (measured ≤ 1.1e-5 after 2–3 epochs at lr 1e-2 — larger than the linear
# setting's ~3e-8 because Adam rescales the sum-order differences of near-zero gradients
# of the convolution weights).  With BatchNorm in training mode each rank normalises its shard
# with the shard's statistics and rank 0's running statistics are broadcast after every
# step (DDP's default), so the run is not the one-process run; asserted there: the ranks
# hold identical models and training completes.  LAC's strong-view logits and label-wise
# embeddings are gathered like the logits (``Method.global_extras``), so every rank pushes
# the whole global batch into its queue, as one process does; its decoder's dropout is
# switched off for the comparison (dropout masks are drawn per rank, as under DDP).


TINY = dict(setting="finetune", backbone="tiny-random", image_size=32, lr=1e-2, finetune_epochs=2)


@pytest.mark.slow
def test_two_gloo_processes_fine_tune_like_one(tmp_path):
    bundle = tiny_digits_bundle(tmp_path)
    cases = {  # batch 7: uneven shards (3 + 4); batch 1: rank 0 never has a row
        "an": {"config": {"method": "an", "batch_size": 7, "freeze_bn": True, **TINY}},
        "empty_shards": {"config": {"method": "an", "batch_size": 1, "freeze_bn": True,
                                    **{**TINY, "finetune_epochs": 1}}},
        "role": {"config": {"method": "role", "batch_size": 7, "freeze_bn": True, **TINY}},
        "em-apl": {"config": {"method": "em-apl", "batch_size": 7, "freeze_bn": True,
                              **{**TINY, "finetune_epochs": 3}}},
        "resume": {"config": {"method": "an", "batch_size": 7, "freeze_bn": True, **TINY}, "stages": [1, 2],
                   "run_dir": str(tmp_path / "resumed")},
        # LAC: strong view, label-wise embeddings and the FIFO queue (stage 2 from epoch 2)
        "lac": {"config": {"method": "lac", "batch_size": 7, "freeze_bn": True, "params": {"stage1_epochs": 1},
                           **TINY}, "no_dropout": True},
        # LAC's stage 1 only: its projection head is unused, so one process never touches it; under
        # 2 processes it must stay untouched too (issue 28, item 6: zero gradients made AdamW decay it)
        "lac_stage1": {"config": {"method": "lac", "batch_size": 7, "freeze_bn": True, "params": {"stage1_epochs": 1},
                                  **{**TINY, "finetune_epochs": 1}}, "no_dropout": True},
        # LinearInit: rank 0 extracts the features, the linear phase and the hand-over are distributed too
        "role+li": {"config": {"method": "role", "batch_size": 7, "freeze_bn": True, "linear_init": True,
                               "epochs": 3, **TINY}},
        "bn_train": {"config": {"method": "an", "batch_size": 8, **TINY}},
    }
    out = tmp_path / "dist.pt"
    torchrun(["tests/helpers/dist_finetune_worker.py", str(bundle.path), str(out), json.dumps(cases)])
    got = torch.load(out, weights_only=False)
    for name, case in cases.items():
        b = got[name]
        assert b["epochs_run"] == case["config"]["finetune_epochs"], name
        if name == "bn_train":  # per-rank BatchNorm statistics: not the one-process run (see module docstring)
            assert b["test_map"] is not None and all(torch.isfinite(v).all() for v in b["model"].values())
            continue
        from tests.helpers.dist_finetune_worker import no_decoder_dropout

        no_decoder_dropout(case.get("no_dropout", False))
        try:
            (a,) = train_finetune(bundle, TrainConfig(**case["config"]), keep_state=True, log=lambda m: None)
        finally:
            no_decoder_dropout(False)
        assert b["best_epoch"] == a.best_epoch, name
        assert b["val_history"] == pytest.approx(a.val_history, abs=1e-6), name
        assert b["test_map"] == pytest.approx(a.test_map, abs=1e-6), name
        assert b["train_map"] == pytest.approx(a.train_map, abs=1e-6), name
        diff = max(float((b["model"][k].float() - w.float()).abs().max()) for k, w in a.state["model"].items())
        assert diff <= 1e-4, (name, diff)
        if name == "lac_stage1":  # the unused projection head: exactly the one-process (initial) weights
            proj = [k for k in a.state["model"] if ".projection." in k]
            assert proj and all(torch.equal(b["model"][k], a.state["model"][k]) for k in proj), name


def test_freeze_bn_keeps_batchnorm_statistics_and_trains_its_affine_parameters(tmp_path):
    from spmlkit.training.finetune import prepare_finetune

    bundle = tiny_digits_bundle(tmp_path)
    cfg = TrainConfig(method="an", batch_size=8, freeze_bn=True, **TINY)
    learner, method, _, _ = prepare_finetune(bundle, cfg, lr=1e-2, seed=0)
    bns = [m for m in learner.model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert bns
    stats = [(m.running_mean.clone(), m.weight.detach().clone()) for m in bns]
    learner.model.train()
    assert learner.model.training and not any(m.training for m in bns)
    batch = next(iter(learner.batches(1)))
    loss = method.compute_loss(method.forward(learner.model, batch), batch, learner.model)
    learner.zero_grad()
    loss.sum().backward()
    learner.step()
    assert all(torch.equal(m.running_mean, s) for m, (s, _) in zip(bns, stats))  # statistics fixed
    assert any(not torch.equal(m.weight, w) for m, (_, w) in zip(bns, stats))  # affine parameters train
