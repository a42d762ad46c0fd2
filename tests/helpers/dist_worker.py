"""Worker for tests/training/test_distributed.py, launched by ``torchrun --nproc_per_node 2``.

Runs the training cases given as JSON on every rank, checks that all ranks end with
identical weights, exercises the collective helpers, and has rank 0 save the results
for the test to compare with one process."""
import json
import sys

import torch

from spmlkit.training import distributed
from spmlkit.training.linear import train_linear
from tests.helpers.torchrun import exit_worker, worker_cases


def main(bundle_path: str, out: str, cases_json: str, cli_json: str = "[]") -> None:
    ctx, bundle, cases = worker_cases(bundle_path, cases_json)
    results = {}
    for name, case, cfg in cases:
        for epochs in case.get("stages", [cfg.epochs]):  # several stages = killed and resumed
            res = train_linear(bundle, cfg.replace(epochs=epochs), lrs=case.get("lrs"), seeds=case.get("seeds"),
                               keep_state=True, run_dir=case.get("run_dir"))
        heads = [{k: v.numpy().tobytes() for k, v in r.state["head"].items()} for r in res]
        assert distributed.all_equal(heads), f"{name}: ranks ended with different weights"
        results[name] = [{"val_history": r.val_history, "test_map": r.test_map, "train_map": r.train_map,
                          "best_epoch": r.best_epoch, "epochs_run": r.epochs_run, "head": r.state["head"]}
                         for r in res]

    # collective helpers
    r = ctx.rank
    cat = distributed.all_gather_cat(torch.arange(r + 1).float().view(1, -1, 1).expand(2, -1, 3).contiguous(), dim=1)
    assert cat.shape == (2, 3, 3) and cat[0, :, 0].tolist() == [0.0, 0.0, 1.0], cat
    table = torch.zeros(2, 10, 3)
    index = torch.tensor([[r, 5 + r], [9 - r, 2 + r]])
    rows = torch.full((2, 2, 3), float(r + 1))
    distributed.sync_rows_(table, index, rows)
    assert table[0, [0, 5], 0].tolist() == [1.0, 1.0] and table[0, [1, 6], 0].tolist() == [2.0, 2.0], table
    assert table[1, [9, 2], 0].tolist() == [1.0, 1.0] and table[1, [8, 3], 0].tolist() == [2.0, 2.0], table
    assert float(table.sum()) == 3 * 2 * 2 * (1 + 2)
    s = distributed.all_reduce_(torch.tensor([float(r + 1)]))
    assert s.item() == 3.0
    assert distributed.broadcast_object({"from": r})["from"] == 0
    assert not distributed.all_equal(r)
    if ctx.is_main:
        torch.save(results, out)
    cli_args = json.loads(cli_json)
    if cli_args:  # the command line under torchrun (it shuts the process group down itself)
        from spmlkit.cli import main as cli_main

        assert cli_main(cli_args) == 0
    distributed.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:5])
    exit_worker()  # (after the results and the teardown: not the interpreter's, tests/helpers/torchrun.py)
