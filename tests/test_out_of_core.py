"""Out of core: features larger than a memory cap stay memory-mapped and a run completes.

The proof runs training in a subprocess under ``RLIMIT_DATA``: since Linux 4.7 it caps
the process's private writable memory (heap and anonymous mappings: every numpy or
torch buffer), but not read-only file mappings, i.e. not a memory-mapped bundle.  The
limit is set to what the warmed-up process already uses plus a headroom far below the
size of the features, so loading them (or any N x D copy) fails with a MemoryError.
A negative control — the same run with the features in memory under the same limit —
must fail, which shows the limit really bites.  (RLIMIT_AS would count the read-only
mapping of the bundle itself, and peak RSS counts its page-cache pages, so neither can
tell "read through a memory map" from "loaded".)  FeatureStore's own record of the
largest feature buffer it allocated is checked against the cap as well.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from spmlkit.config import TrainConfig
from spmlkit.training import train_linear
from spmlkit.training.linear import FeatureStore, feature_statistics
from tests.helpers import REPO


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
