"""Worker for tests/training/test_distributed.py, launched by ``torchrun --nproc_per_node 2``:
fine-tunes each case on every rank, checks that the ranks end with identical weights
(parameters and BatchNorm buffers), and has rank 0 save the results."""
import sys

import torch

from spmlkit.training import distributed
from spmlkit.training.finetune import train_finetune
from tests.helpers.torchrun import exit_worker, worker_cases


def no_decoder_dropout(on: bool) -> None:
    """Dropout masks are drawn per rank (as under DDP), so an exact comparison with one
    process needs the label-wise decoder's dropout off (test only)."""
    import spmlkit.training.finetune as ft
    from spmlkit.models.image import ImageModel

    def build(*a, **kw):
        return ImageModel(*a, **kw, decoder={"dropout": 0.0}) if kw.get("head") == "decoder" else ImageModel(*a, **kw)

    ft.ImageModel = build if on else ImageModel


def main(bundle_path: str, out: str, cases_json: str) -> None:
    ctx, bundle, cases = worker_cases(bundle_path, cases_json)
    results = {}
    for name, case, cfg in cases:
        no_decoder_dropout(case.get("no_dropout", False))
        res = None
        for epochs in case.get("stages", [cfg.finetune_epochs]):  # several stages = killed and resumed
            (res,) = train_finetune(bundle, cfg.replace(finetune_epochs=epochs), keep_state=True,
                                    run_dir=case.get("run_dir"), log=lambda m: None)
        weights = {k: v.numpy().tobytes() for k, v in res.state["model"].items()}
        assert distributed.all_equal(weights), f"{name}: ranks ended with different weights"
        results[name] = {"val_history": res.val_history, "test_map": res.test_map, "train_map": res.train_map,
                         "best_epoch": res.best_epoch, "epochs_run": res.epochs_run, "model": res.state["model"]}
    if ctx.is_main:
        torch.save(results, out)
    distributed.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:4])
    exit_worker()  # (after the results and the teardown: not the interpreter's, tests/helpers/torchrun.py)
