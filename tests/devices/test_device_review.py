"""Issue 28: the GPU path reviewed before any GPU runs it.  Every check here runs on the
CPU with stand-ins for CUDA (the ``meta`` device, a faked ``mem_get_info`` / device count,
a tensor that reports ``cuda``); the checks only a GPU can make are in tests/devices/test_gpu.py.
Each test failed on the code before its fix."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from tests.helpers.factories import train_context


# ------------------------------------------------------------------ item 8: the suite is pinned to the CPU
def test_the_ordinary_suite_is_pinned_to_the_cpu():
    from spmlkit.device import resolve_device

    assert os.environ.get("CUDA_VISIBLE_DEVICES") == ""  # subprocesses (CLI, torchrun) see no GPU
    assert torch.cuda.is_available() is False
    assert resolve_device("auto") == torch.device("cpu")


# ------------------------------------------------------------------ item 1: state loaded onto the run's device
def _ctx(device, G=1, N=6, L=3):

    obs = torch.zeros(N, L, dtype=torch.int8)
    obs[torch.arange(N), torch.arange(N) % L] = 1
    return train_context(obs, G=G, device=torch.device(device), epochs=4)


def test_lac_queue_resumes_on_the_runs_device():
    """A queue saved on the CPU (a checkpoint) and loaded by a run on another device (the
    ``meta`` device stands in for CUDA) lives on that device; before, it stayed on the CPU
    and the first stage-2 step's ``torch.cat([anchors, queue_z])`` mixed devices."""
    from spmlkit.methods import build_method
    from spmlkit.losses.lac import label_aware_contrastive

    saved = build_method("lac", queue_size=4)
    saved.setup(_ctx("cpu"))
    saved.state.queue.push(torch.randn(3, 2, 5), torch.tensor([0, 1, 2]))
    state = saved.state_dict()
    run = build_method("lac", queue_size=4)
    run.setup(_ctx("meta"))
    run.load_state_dict(state)
    qz, ql = run.state.queue.contents()
    assert qz.device.type == "meta" and ql.device.type == "meta" and run.state.queue.count == 3
    # the loss itself also accepts a queue left elsewhere
    z = torch.randn(2, 2, 5, device="meta")
    out = label_aware_contrastive(z, torch.tensor([0, 1], device="meta"), queue_z=saved.state.queue.contents()[0],
                                  queue_labels=saved.state.queue.contents()[1])
    assert out.device.type == "meta"


def test_opml_smoothing_weights_and_training_ap_resume_on_the_runs_device():
    """OPML's smoothing weights (AP^ρ) and training AP reload on the run's device, not the
    CPU (where they were copied to the device at every step of the epoch)."""
    from spmlkit.methods import build_method
    from spmlkit.methods.opml import APSmoothing, TrainingAP

    m = build_method("opml-soft")
    sm = m.component(APSmoothing)
    m.setup(_ctx("meta"))
    state = m.state_dict()
    key = next(k for k in state if k.endswith("APSmoothing"))
    state[key] = {"weights": torch.rand(1, 3), "ap": {"ap": torch.rand(1, 3), "epoch": 2, "raw": torch.rand(1, 3)}}
    m.load_state_dict(state)
    assert sm.weights.device.type == "meta"
    assert isinstance(sm.ap, TrainingAP) and sm.ap.ap.device.type == "meta"


# ------------------------------------------------------------------ item 2: torchrun ranks beyond the GPUs
def _gpus(monkeypatch, n):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: n)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)


@pytest.mark.parametrize("spec", ["auto", "cuda"])
def test_a_local_rank_beyond_the_gpus_is_a_clear_error(monkeypatch, spec):
    from spmlkit.device import resolve_device

    _gpus(monkeypatch, 1)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    with pytest.raises(ConfigError, match=r"LOCAL_RANK=1 but this machine has 1 CUDA device.*--nproc_per_node 1"):
        resolve_device(spec)
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert resolve_device(spec) == torch.device("cuda", 0)


def test_nccl_init_checks_the_local_rank_before_touching_the_gpu(monkeypatch):
    from spmlkit.training import distributed

    _gpus(monkeypatch, 1)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    with pytest.raises(ConfigError, match="LOCAL_RANK=1"):
        distributed.init_from_env(backend="nccl")


def test_torchrun_test_workers_choose_gloo_and_see_no_gpu():
    import inspect
    from tests.helpers import torchrun as _torchrun

    src = inspect.getsource(_torchrun)
    assert 'init_from_env(backend="gloo")' in src and 'env["CUDA_VISIBLE_DEVICES"] = ""' in src


# ------------------------------------------------------------------ item 3: one device budget for the features
def test_one_budget_for_every_split_and_the_method_state():
    from spmlkit.device import plan_device_features

    # before: each split took "half of the free memory" on its own (train, val and test all placed: 87.5 %)
    assert plan_device_features({"train": 400, "val": 200, "test": 200}, 1000) == \
        {"train": True, "val": False, "test": False}
    assert plan_device_features({"train": 400, "val": 50, "test": 50}, 1000) == \
        {"train": True, "val": True, "test": True}
    # the method state comes out of the same budget
    assert plan_device_features({"train": 400, "val": 50, "test": 50}, 1000, reserve=150) == \
        {"train": False, "val": True, "test": True}
    assert plan_device_features({"train": None, "test": 10}, 1000) == {"train": False, "test": True}


def test_the_linear_trainer_plans_all_splits_with_one_budget(toy_bundle, monkeypatch):
    """``train_linear`` on a (faked) GPU measures the free memory once and places the
    splits within one budget that also holds the method state (ROLE: 16 bytes per member,
    example and label); before, each store measured and took half of the free memory."""
    import spmlkit.device as dev
    import spmlkit.training.linear as lin

    placed = {}

    class Recorder:
        def __init__(self, array, **kw):
            placed[len(placed)] = (array.shape, kw.get("keep_on_device"))

    class Stop(Exception):
        pass

    def stop(*a, **k):
        raise Stop

    X = {s: toy_bundle.features(s) for s in ("train", "val", "test") if toy_bundle.size(s)}
    N, L = X["train"].shape[0], toy_bundle.n_labels
    from spmlkit.methods.base import TrainContext, build_method

    ctx = TrainContext(n_train=N, n_labels=L, observed=np.zeros((N, L), np.int8), n_members=2)
    reserve = build_method("role").state_bytes(ctx)  # what ROLE declares: 16 bytes an entry and member
    assert reserve >= 16 * 2 * N * L
    free = 2 * (reserve + X["train"].nbytes + 1)  # room for the training rows and the state, nothing more
    monkeypatch.setattr("spmlkit.training.prepare.resolve_device", lambda *a, **k: torch.device("cuda", 0))
    monkeypatch.setattr(dev, "free_memory_bytes", lambda d: free)
    monkeypatch.setattr(lin, "free_memory_bytes", lambda d: free)  # (imported by the trainer)
    monkeypatch.setattr(lin, "FeatureStore", Recorder)
    monkeypatch.setattr(lin, "LinearLearner", stop)
    with pytest.raises(Stop):
        lin.train_linear(toy_bundle, TrainConfig(method="role", epochs=1, batch_size=8), lrs=[1e-2, 1e-3], seeds=[0, 0])
    keep = [k for _, k in placed.values()]
    assert keep[0] is True and len(keep) == len(X) and not any(keep[1:]), placed


def test_features_left_on_the_host_are_not_pinned_whole(monkeypatch):
    """When the features do not fit on the device they stay in ordinary host memory (the two
    pinned staging buffers serve the copies); before, the whole array was pinned."""
    import spmlkit.training.linear as lin
    from spmlkit.training.linear import FeatureStore

    monkeypatch.setattr(lin, "free_memory_bytes", lambda d: 0)
    store = FeatureStore(np.ones((10, 3), dtype=np.float32), device="cuda")
    assert not store.on_device and store.tensor.device.type == "cpu" and not store.tensor.is_pinned()


# ------------------------------------------------------------------ item 4: SPLC's per-epoch counter
@pytest.mark.parametrize("on_cuda", [False, True])
def test_splc_counts_every_batch_of_the_epoch_on_any_device(on_cuda):
    """The counter is the sum over the epoch's batches on every device; on the CUDA branch
    (a tensor reporting ``cuda``) it was overwritten with the last batch's count."""
    from tests.helpers.cuda_standin import reports_cuda
    from spmlkit.methods import build_method
    from spmlkit.methods.base import Batch
    from spmlkit.methods.robust_mlml import SelfPacedCorrection

    m = build_method("splc")
    c = m.component(SelfPacedCorrection)
    m.setup(_ctx("cpu", L=3))
    c.on_epoch_start(c.start_epoch)
    counts = []
    for b in range(3):
        logits = torch.full((1, 4, 3), -5.0)
        logits[0, : b + 1, 1] = 5.0  # b+1 unobserved entries above tau
        obs = torch.zeros(1, 4, 3, dtype=torch.int8)
        obs[0, :, 0] = 1
        if on_cuda:
            logits, obs = reports_cuda(logits), reports_cuda(obs)
        c.batch_inputs(Batch(inputs=None, index=torch.arange(4).view(1, 4), observed=obs), logits)
        counts.append(b + 1)
    assert c.n_corrected == sum(counts) == 6


# ------------------------------------------------------------------ item 5: precision is part of the feature cache
def test_feature_caches_of_different_precisions_are_distinct(tmp_path):
    """A bf16 cache has its own name and meta; a float32 run never reuses it (before, both
    were ``backbone-size`` and the bf16 features were silently reused by float32 runs), and
    a cache resumed with another precision is refused instead of mixing precisions."""
    from tests.helpers.image_fixtures import tiny_digits_bundle
    from spmlkit.features.extract import ensure_features, extract_features, feature_set_meta

    b = tiny_digits_bundle(tmp_path)
    kw = dict(backbone="tiny-random", image_size=32, batch_size=8, progress=False, log=lambda m: None)
    bf = extract_features(b, precision="bf16", **kw)
    assert bf == "tiny-random-32-bf16" and feature_set_meta(b, bf)["precision"] == "bf16"
    f32 = ensure_features(b, backbone="tiny-random", weights=None, image_size=32, batch_size=8, log=lambda m: None,
                          precision="32")
    assert f32 == "tiny-random-32" and feature_set_meta(b, f32)["precision"] == "32"
    assert not np.array_equal(b.features("test", f32), b.features("test", bf))
    assert ensure_features(b, backbone="tiny-random", weights=None, image_size=32, log=lambda m: None,
                           precision="bf16") == bf
    with pytest.raises(ConfigError, match="precision"):
        extract_features(b, name=bf, precision="32", **kw)  # the bf16 folder, continued in float32


# ------------------------------------------------------------------ items 6 and 14: gradient all-reduce
class _FakeWork:
    def wait(self):
        pass


def _fake_collectives(monkeypatch, remote):
    """A 2-rank all-reduce where the other rank contributes ``remote(t)`` (gloo, no group)."""
    import torch.distributed as dist

    from spmlkit.training import distributed

    calls = []

    def all_reduce(t, op=None, async_op=False):
        calls.append(t.numel())
        t.add_(remote(t))
        return _FakeWork() if async_op else None

    monkeypatch.setattr(dist, "all_reduce", all_reduce)
    return distributed.DistContext(world_size=2, rank=0, backend="gloo"), calls


def test_unused_parameters_keep_no_gradient_after_the_all_reduce(monkeypatch):
    """A parameter no rank used keeps ``grad = None`` (one process: AdamW neither decays it
    nor counts a step); before, it got a zero gradient.  The other rank's gradients equal
    this rank's here, so the sums are twice the local ones."""
    from spmlkit.training import distributed

    ctx, calls = _fake_collectives(monkeypatch, lambda t: t.clone())
    used, unused = torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(2))
    used.grad = torch.tensor([1.0, 2.0, 3.0])
    distributed.all_reduce_gradients([used, unused], ctx)
    assert unused.grad is None
    assert torch.equal(used.grad, torch.tensor([2.0, 4.0, 6.0]))
    # AdamW on the result: the unused parameter is untouched, as in one process
    opt = torch.optim.AdamW([used, unused], lr=0.1, weight_decay=0.1)
    opt.step()
    assert torch.equal(unused.detach(), torch.ones(2)) and unused not in opt.state


def test_a_rank_without_rows_gets_the_other_ranks_gradients(monkeypatch):
    from spmlkit.training import distributed

    ctx, _ = _fake_collectives(monkeypatch, lambda t: torch.ones_like(t))  # the other rank: gradients of ones
    a, b = torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(2))
    distributed.all_reduce_gradients([a, b], ctx)  # this rank had an empty shard: no gradients
    assert torch.equal(a.grad, torch.ones(3)) and torch.equal(b.grad, torch.ones(2))


def test_gradients_are_reduced_in_buckets(monkeypatch):
    """Item 14: one collective per bucket (plus one for the used-flags), not per parameter."""
    from spmlkit.training import distributed

    ctx, calls = _fake_collectives(monkeypatch, lambda t: t.clone())
    params = [torch.nn.Parameter(torch.zeros(10)) for _ in range(50)]
    for p in params:
        p.grad = torch.ones(10)
    distributed.all_reduce_gradients(params, ctx)
    assert len(calls) == 2 and sorted(calls) == [50, 500]
    assert all(torch.equal(p.grad, torch.full((10,), 2.0)) for p in params)
    calls.clear()
    distributed.all_reduce_gradients(params, ctx, bucket_bytes=40 * 10)  # 10 parameters per bucket
    assert len(calls) == 1 + 5


# ------------------------------------------------------------------ item 11 and the stronger host-sync detector
@pytest.mark.parametrize("method", ["an", "an-ls", "bce-ls", "wan", "epr", "iun"])
def test_no_host_synchronisation_in_a_linear_epoch_of_the_stateless_losses(toy_bundle, monkeypatch, method):
    """The stronger detector (also ``.cpu()``, ``.to("cpu")``, ``as_tensor`` / ``tensor`` of
    Python data onto the run's device, ``nonzero``, mask indexing, ``torch.equal``) finds
    nothing in a linear epoch (prefetching path) of the stateless losses.  ``an-ls``,
    ``bce-ls`` and ``wan`` built their targets with ``torch.as_tensor(float, device=...)``,
    a blocking copy at every step on a GPU."""
    from tests.helpers.cuda_standin import host_syncs_during
    from spmlkit.methods import build_method
    from spmlkit.training.linear import FeatureStore, LinearLearner
    from spmlkit.training.loop import train_epoch

    Z = toy_bundle.observations("train")
    if method == "bce-ls":
        Z = np.where(toy_bundle.labels("train"), 1, -1).astype(np.int8)
    stores = {s: FeatureStore(toy_bundle.features(s)) for s in ("train", "val", "test")}
    stores["train"].on_device = False
    learner = LinearLearner(stores, Z, lrs=[1e-2, 1e-3], seeds=[0, 1], batch_size=8, n_labels=Z.shape[1])
    m = build_method(method)
    m.setup(train_context(learner.observed, G=2, expected_positives=1.5))
    (loss_sum, n_steps), calls = host_syncs_during(monkeypatch, lambda: train_epoch(learner, m, 1))
    assert n_steps == 12 and calls == [], f"host synchronisation in the training loop: {calls[:8]}"


def test_the_stronger_detector_sees_what_it_claims(monkeypatch):
    from tests.helpers.cuda_standin import host_syncs_during

    def work():
        x = torch.arange(6.0)
        x.cpu()
        x.to("cpu")
        torch.as_tensor(0.5, device=x.device)
        x.nonzero()
        x[x > 2]
        torch.equal(x, x)
        torch.tensor([1, 2], device="cpu")  # a host tensor: fine

    _, calls = host_syncs_during(monkeypatch, work)
    assert calls == ["cpu", "to(cpu)", "as_tensor(python data, device=...)", "nonzero", "mask indexing",
                     "torch.equal"]


# ------------------------------------------------------------------ item 16: bf16 only where the GPU has it
@pytest.mark.parametrize("capability, ok", [((7, 0), False), ((7, 5), False), ((8, 0), True), ((9, 0), True)])
def test_bf16_is_refused_on_gpus_that_only_emulate_it(monkeypatch, capability, ok):
    from spmlkit.device import check_precision

    _gpus(monkeypatch, 1)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i=None: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=None: "Tesla V100" if capability < (8, 0) else "A100")
    dev = torch.device("cuda", 0)
    assert check_precision("32", dev) == "32" and check_precision("16-mixed", dev) == "16-mixed"
    if ok:
        assert check_precision("bf16", dev) == "bf16"
    else:
        with pytest.raises(ConfigError, match=r"bf16: cuda:0 \(Tesla V100, compute capability 7\.\d\).*16-mixed or 32"):
            check_precision("bf16", dev)


# ------------------------------------------------------------------ items 9 and 10: fine-tuning steps
def test_finetuning_batches_make_no_blocking_copy_per_step(tmp_path, monkeypatch):
    """The fine-tuning learner's batches on a device (``meta`` standing in for CUDA) carry
    their row numbers and observations without a blocking host-to-device copy per step
    (before: ``idx.to(dev)`` and ``observed[idx].to(dev)`` from pageable memory, twice per
    step); on the CPU the batches are the same as before."""
    from tests.helpers.cuda_standin import host_syncs_during
    from tests.helpers.image_fixtures import tiny_digits_bundle
    from spmlkit.training.finetune import prepare_finetune

    bundle = tiny_digits_bundle(tmp_path)
    cfg = TrainConfig(method="an", setting="finetune", backbone="tiny-random", image_size=32, batch_size=8)
    learner, *_ = prepare_finetune(bundle, cfg, lr=1e-3, seed=0)
    cpu = [(b.index.clone(), b.observed.clone()) for b in learner.batches(1)]
    for idx, obs in cpu:  # what the batches held before: the permutation's rows and their observations
        assert idx.shape == (1, idx.shape[1]) and torch.equal(obs[0], torch.from_numpy(learner.observed.dense(idx[0].numpy())))
    learner.generator.manual_seed(0)
    learner.device = torch.device("meta")
    learner._observed_dev = learner.observed.to("meta")
    batches, calls = host_syncs_during(monkeypatch, lambda: list(learner.batches(1)))
    assert len(batches) == len(cpu) >= 3 and batches[0].observed.device.type == "meta"
    assert [c for c in calls if "to(" in c] == [], calls


def test_fused_optimizers_on_cuda_only():
    """Item 10: Adam / AdamW are fused on CUDA (the gradient scaler then needs no ``.item()``
    per step); on the CPU the default implementation keeps results unchanged."""
    from spmlkit.training.finetune import make_optimizer

    for name in ("adam", "adamw-onecycle"):
        w = [torch.nn.Parameter(torch.zeros(3))]
        opt, _ = make_optimizer(name, w, lr=1e-3, device=torch.device("cuda", 0), steps=4)
        assert opt.defaults["fused"] is True
        opt, _ = make_optimizer(name, w, lr=1e-3, device=torch.device("cpu"), steps=4)
        assert not opt.defaults.get("fused")


# ------------------------------------------------------------------ item 13: ROLE's table stays on its device
def test_role_epoch_end_and_snapshots_read_nothing_of_the_table_back(monkeypatch):
    """ROLE's epoch-end diagnostic is summed where the table lives and read once (one
    ``tolist`` for all members), and a member snapshot is a copy on the store's device;
    before, both copied whole tables to the host (252 MB per epoch at COCO size)."""
    from tests.helpers.cuda_standin import host_syncs_during
    from spmlkit.methods import build_method
    from spmlkit.methods.role import LabelEstimator

    m = build_method("role", adam="dense")
    ctx = _ctx("cpu", G=2, N=40, L=3)
    ctx.base_lrs, ctx.seeds, ctx.expected_positives = (1e-2, 1e-3), (0, 1), 1.5
    m.setup(ctx)
    est = m.component(LabelEstimator)
    before = {g: est.table(g) for g in range(2)}
    logs, calls = host_syncs_during(monkeypatch, lambda: m.on_epoch_end(1, None))
    assert calls == ["tolist"], calls
    expected = [float((1 / (1 + np.exp(-before[g].astype(np.float64)))).sum()) / 40 for g in range(2)]
    assert logs["estimator_mean_positives"] == pytest.approx(expected, rel=1e-6)
    state, calls = host_syncs_during(monkeypatch, lambda: est.member_state(1))
    assert [c for c in calls if c in ("numpy", "cpu", "item", "tolist")] == [], calls
    assert isinstance(state["logits"], torch.Tensor) and np.array_equal(state["logits"].numpy(), before[1])


# ------------------------------------------------------------------ item 15: --jobs > 1 on CUDA
def test_grid_workers_on_cuda_take_one_gpu_each(monkeypatch):
    from spmlkit.training.grid import gpu_worker_devices

    _gpus(monkeypatch, 2)
    assert gpu_worker_devices("auto", 2) == ["cuda:0", "cuda:1"]
    assert gpu_worker_devices("cuda", 1) is None and gpu_worker_devices("cpu", 4) is None
    with pytest.raises(ConfigError, match=r"--jobs 3 on CUDA .* 2 visible GPUs; use --jobs 2"):
        gpu_worker_devices("auto", 3)
    with pytest.raises(ConfigError, match=r"one GPU is named \(cuda:1\)"):
        gpu_worker_devices("cuda:1", 2)


def test_train_members_refuses_more_workers_than_gpus(toy_bundle, monkeypatch):
    """Before: every worker took the same GPU and half of its free memory each."""
    from spmlkit.training.grid import train_members

    _gpus(monkeypatch, 1)
    with pytest.raises(ConfigError, match="--jobs 2 on CUDA"):
        train_members(toy_bundle, TrainConfig(method="an", epochs=1), [1e-2, 1e-3], [0, 0], stack=1, jobs=2)


def test_a_grid_worker_runs_on_its_own_gpu(monkeypatch):
    import queue

    import spmlkit.training.grid as grid

    seen = {}
    monkeypatch.setattr(grid, "train", lambda b, cfg, **kw: seen.setdefault("device", cfg.device))
    monkeypatch.setattr(grid, "Bundle", lambda p: p)
    q = queue.Queue()
    q.put("cuda:1")
    grid._take_device(q)
    try:
        grid._run_group("b", TrainConfig(method="an"), [1e-2], [0], False)
    finally:
        grid._WORKER_DEVICE = None
    assert seen["device"] == "cuda:1"


# ------------------------------------------------------------------ item 12: extraction does not stop per batch
def test_extraction_writes_its_progress_marker_every_few_batches(tmp_path, monkeypatch):
    """The progress marker (an fsync'd file) and the flush of the memory map come every
    ``PROGRESS_EVERY`` batches and at the end of a split, not after every batch; a killed
    extraction still resumes from the last marker (tests/features/test_extract.py)."""
    import spmlkit.features.extract as ex
    from tests.helpers.image_fixtures import tiny_digits_bundle

    b = tiny_digits_bundle(tmp_path)
    writes = []
    orig = ex.write_json
    monkeypatch.setattr(ex, "write_json", lambda p, obj: (writes.append(p.name), orig(p, obj)))
    monkeypatch.setattr(ex, "PROGRESS_EVERY", 4)
    ex.extract_features(b, backbone="tiny-random", image_size=32, batch_size=2, progress=False, log=lambda m: None)
    n_batches = {s: -(-b.size(s) // 2) for s in ("train", "val", "test")}
    for s, n in n_batches.items():
        assert writes.count(f".{s}.progress.json") == -(-n // 4) < n, (s, writes)


# ------------------------------------------------------------------ item 7: CUDA arithmetic of a run, restored after
@pytest.mark.parametrize("precision, deterministic", [("32", False), ("32", True), ("bf16", False)])
def test_cuda_numerics_are_set_for_the_run_and_restored(monkeypatch, precision, deterministic):
    """``--precision 32`` on CUDA is float32 (TF32 off for matmuls and convolutions); cuDNN's
    kernel timing is on unless deterministic (then deterministic algorithms); everything is
    restored after the run (before, ``cudnn.benchmark`` stayed on for the process and TF32
    convolutions were on although docs/gpu.md said "float32 everywhere")."""
    from spmlkit.device import cuda_numerics

    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    outside = (cudnn.allow_tf32, matmul.allow_tf32, cudnn.benchmark)
    cudnn.allow_tf32 = matmul.allow_tf32 = True
    cudnn.benchmark = False
    try:
        _check_cuda_numerics(cuda_numerics, precision, deterministic)
    finally:
        cudnn.allow_tf32, matmul.allow_tf32, cudnn.benchmark = outside


def _check_cuda_numerics(cuda_numerics, precision, deterministic):
    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    before = (cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32, matmul.allow_tf32,
              torch.are_deterministic_algorithms_enabled())
    with cuda_numerics(torch.device("cuda", 0), precision, deterministic=deterministic):
        assert (cudnn.allow_tf32, matmul.allow_tf32) == ((False, False) if precision == "32" else (True, True))
        assert cudnn.benchmark is (not deterministic) and cudnn.deterministic is deterministic
        assert torch.are_deterministic_algorithms_enabled() is deterministic
        if deterministic:
            assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert (cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32, matmul.allow_tf32,
            torch.are_deterministic_algorithms_enabled()) == before
    with cuda_numerics(torch.device("cpu"), "32", deterministic=True):  # the CPU: nothing changes
        assert cudnn.allow_tf32 and not cudnn.benchmark and not torch.are_deterministic_algorithms_enabled()


def test_no_process_wide_cudnn_setting_is_left_behind():
    import inspect

    import spmlkit.features.extract as ex
    import spmlkit.training.finetune as ft

    for mod in (ex, ft):
        assert "cudnn.benchmark = True" not in inspect.getsource(mod)
