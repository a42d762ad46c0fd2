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
from spmlkit.training.linear import train_linear

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
