"""Linear training on features (spmlkit.training.linear): stacked grids equal separate
runs, selection, resume, threads, standardisation, and features larger than memory."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.io import read_jsonl
from spmlkit.training import train_linear
from spmlkit.training.linear import FeatureStore, feature_statistics
from tests.helpers import REPO
from tests.helpers.training_checks import assert_resume_equals_uninterrupted, host_reads_during, members_and_separate_runs


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


# Out of core: features larger than a memory cap stay memory-mapped and a run completes.
#
# The proof runs training in a subprocess under ``RLIMIT_DATA``: since Linux 4.7 it caps
# the process's private writable memory (heap and anonymous mappings: every numpy or
# torch buffer), but not read-only file mappings, i.e. not a memory-mapped bundle.  The
# limit is set to what the warmed-up process already uses plus a headroom far below the
# size of the features, so loading them (or any N x D copy) fails with a MemoryError.
# A negative control — the same run with the features in memory under the same limit —
# must fail, which shows the limit really bites.  (RLIMIT_AS would count the read-only
# mapping of the bundle itself, and peak RSS counts its page-cache pages, so neither can
# tell "read through a memory map" from "loaded".)  FeatureStore's own record of the
# largest feature buffer it allocated is checked against the cap as well.


WORKER = r"""
import json, resource, sys
import torch
torch.set_num_threads(1)
from spmlkit.config import TrainConfig
from spmlkit.data import Bundle
from spmlkit.training import linear

stores = []
_init = linear.FeatureStore.__init__
def _record(self, *a, **k):
    _init(self, *a, **k)
    stores.append(self)
linear.FeatureStore.__init__ = _record

def vm(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024

small, big, mode, headroom_mb, cap_mb = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
linear.train_linear(Bundle(small), TrainConfig(method="an", epochs=1))  # warm-up: imports, allocator, autograd
stores.clear()
base = vm("VmData")
resource.setrlimit(resource.RLIMIT_DATA, (base + int(headroom_mb * 2**20), resource.RLIM_INFINITY))
cfg = TrainConfig(method="an", epochs=1, batch_size=8, max_memory_mb=cap_mb if mode == "capped" else None)
try:
    r = linear.train_linear(Bundle(big), cfg)[0]
    out = {"ok": True, "val_history": r.val_history, "test_map": r.test_map,
           "peak_buffer_bytes": max(s.peak_buffer_bytes for s in stores),
           "in_memory": [s.in_memory for s in stores]}
except (MemoryError, RuntimeError) as exc:
    out = {"ok": False, "error": str(exc)[:200]}
out["vmdata_growth_mb"] = (vm("VmData") - base) / 2**20
print(json.dumps(out))
"""


def _run(small, big, mode, headroom_mb, cap_mb):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    env["OMP_NUM_THREADS"] = "1"
    p = subprocess.run([sys.executable, "-c", WORKER, str(small), str(big), mode, str(headroom_mb), str(cap_mb)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA semantics are Linux's")
def test_training_completes_with_features_larger_than_the_memory_cap(tmp_path):
    from tests.helpers.factories import make_toy_dataset
    from spmlkit.data import prepare_bundle

    big = prepare_bundle(make_toy_dataset(n=7500, d=2048, L=5), tmp_path / "big", log=lambda m: None)
    small = prepare_bundle(make_toy_dataset(), tmp_path / "small", log=lambda m: None)
    feat_mb = {s: big.features(s).nbytes / 2 ** 20 for s in ("train", "val", "test")}
    assert feat_mb["train"] > 45  # ~47 MB of training features (6000 x 2048 float32), 94 MB in all
    cap_mb, headroom_mb = 5, 12  # the run may grow by 12 MB (measured 2.5), a quarter of the training features

    capped = _run(small.path, big.path, "capped", headroom_mb, cap_mb)
    assert capped["ok"], capped
    assert capped["in_memory"] == [False, False, False]
    assert capped["peak_buffer_bytes"] <= cap_mb * 2 ** 20
    assert capped["vmdata_growth_mb"] <= headroom_mb

    control = _run(small.path, big.path, "in_memory", headroom_mb, cap_mb)
    assert not control["ok"], "the memory limit did not stop an in-memory run: the test proves nothing"

    ref = train_linear(big, TrainConfig(method="an", epochs=1, batch_size=8))[0]  # no cap, in memory
    assert capped["val_history"] == pytest.approx(ref.val_history, abs=1e-6)
    assert capped["test_map"] == pytest.approx(ref.test_map, abs=1e-6)


def test_feature_store_reads_only_bounded_chunks(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 64)).astype(np.float32) * 3 + 1
    np.save(tmp_path / "X.npy", X)
    mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    mean, std = feature_statistics(mm, chunk_bytes=4096)  # 8 rows per chunk
    np.testing.assert_allclose(mean, X.mean(0, dtype=np.float64), rtol=0, atol=1e-5)
    np.testing.assert_allclose(std, X.std(0, dtype=np.float64), rtol=1e-5)
    mem = FeatureStore(X, mean=mean, std=std)
    disk = FeatureStore(mm, mean=mean, std=std, max_bytes=64 * 1024)  # array is 256 kB
    assert mem.in_memory and not disk.in_memory and disk.chunk_rows == 64  # (64 kB / 4) / (4 B x 64)
    import torch

    idx = torch.tensor([[5, 999, 0, 5], [3, 2, 1, 0]])
    assert torch.equal(disk.gather(idx), mem.gather(idx))
    assert disk.peak_buffer_bytes == 8 * 64 * 4  # the 8 gathered rows only
    assert torch.equal(torch.cat(list(disk.chunks())), mem.tensor)
    assert disk.peak_buffer_bytes == 64 * 64 * 4  # one chunk at a time
    assert torch.equal(torch.cat(list(disk.chunks(start=10, stop=300))), mem.tensor[10:300])


def test_training_on_presence_only_data_selects_by_it(presence_bundle):
    from spmlkit.training.linear import train_linear

    cfg = TrainConfig(method="an-full", epochs=3, batch_size=32, selection="target_group_auc", threads=1)
    (res,) = train_linear(presence_bundle, cfg, lrs=[1e-2], seeds=[0])
    assert res.selection == "target_group_auc"
    assert 0 <= res.val_score <= 100 and res.val_score == max(res.val_history)
    assert res.val_history[res.best_epoch - 1] == res.val_score
