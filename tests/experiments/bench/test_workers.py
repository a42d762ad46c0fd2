"""The life of a bench worker (spmlkit.experiments.bench.workers): one GPU per worker,
the worker's GPU used for every group it trains and recorded, never part of a group's hash."""
import json

import pytest

from spmlkit.errors import ConfigError
from spmlkit.experiments import bench as B
from spmlkit.experiments.bench import workers as W


def _spec(bundle, **kw):
    args = dict(methods=["an", "bce"], lrs=(1e-2, 1e-3), batch_sizes=(4, 8), seeds=(0, 1), epochs=3)
    return B.BenchSpec(datasets=[str(bundle.path)], **{**args, **kw})


def test_one_gpu_per_worker_rule(two_gpus):
    assert W.worker_gpus("cuda", 2) == ["cuda:0", "cuda:1"]
    assert W.worker_gpus(None, 2) == ["cuda:0", "cuda:1"]  # auto: CUDA when available
    assert W.worker_gpus("cuda", 1) is None and W.worker_gpus("cpu", 4) is None
    with pytest.raises(ConfigError, match="--jobs 3 on CUDA .*2 visible GPUs.*--share-gpus"):
        W.worker_gpus("cuda", 3)
    assert W.worker_gpus("cuda", 3, share=True) == ["cuda:0", "cuda:1", "cuda:0"]
    with pytest.raises(ConfigError, match="one GPU is named"):
        W.worker_gpus("cuda:1", 2)
    assert W.worker_gpus("cuda:1", 2, share=True) == ["cuda:1", "cuda:1"]


def test_a_worker_trains_on_its_own_gpu_and_the_group_records_its_device(toy_bundle, tmp_path, monkeypatch):
    """The worker's GPU (taken once by the pool initialiser) replaces the bench's device for
    every group it trains; the trap stands in for CUDA training on this CPU machine."""
    import spmlkit.training.linear as lin

    seen = []

    def trap(bundle, config, **kw):
        seen.append(config.device)
        raise RuntimeError("trap")

    spec = B.validate_spec(_spec(toy_bundle, config={"device": "cuda"}))
    ds = [B.BenchDataset("toy", toy_bundle, B.bundle_fingerprint(toy_bundle))]
    g = B.plan_groups(spec, ds)[0]
    monkeypatch.setattr(lin, "train_linear", trap)
    monkeypatch.setattr(W, "_WORKER_DEVICE", "cuda:1")
    with pytest.raises(RuntimeError, match="trap"):
        W.run_group_in_worker(spec, str(tmp_path / "w"), g, str(toy_bundle.path))
    assert seen == ["cuda:1"]
    assert B.plan_groups(B.validate_spec(_spec(toy_bundle)), ds)[0].hash == g.hash  # the device is not in the hash
    monkeypatch.undo()
    out = tmp_path / "cpu"
    B.run_bench(_spec(toy_bundle, methods=["an"], batch_sizes=(8,), epochs=1), out, progress=False, figures=False,
                log=lambda m: None)
    (rec,) = [json.loads(p.read_text()) for p in (out / "groups").glob("*.json")]
    assert rec["device"] == "cpu"

