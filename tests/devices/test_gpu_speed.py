"""benchmarks/gpu_speed.py's SINR-scale section (issue 32) runs on the CPU at smoke size:
the data are stored sparse (one int32 a record) and the report has the section."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from tests.helpers import REPO


@pytest.fixture(scope="module")
def gs():
    spec = importlib.util.spec_from_file_location("gpu_speed_bench", REPO / "benchmarks" / "gpu_speed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_sinr_data_are_single_positives_stored_sparse(gs):
    X, Z, ((Xv, Yv), (Xt, Yt)) = gs.sinr_arrays(5000, 1000, seed=3)
    assert X.shape == (5000, 4) and X.dtype == np.float32 and np.abs(X).max() <= 1.0
    assert Z.shape == (5000, 1000) and Z.count(1) == 5000 and Z.indices.dtype == np.int32
    assert (Z.row_counts(1) == 1).all() and Z.indices.nbytes == 4 * 5000  # one int32 a record
    counts = Z.col_counts(1)
    assert counts[0] > counts[10] > counts[500]  # Zipf: the first species are the common ones
    for Xh, Yh in ((Xv, Yv), (Xt, Yt)):
        per_row = Yh.row_counts(1)
        assert len(Xh) == Yh.shape[0] and per_row.min() == 1 and per_row.max() == 2


def test_sinr_section_smoke_run_writes_its_table(gs, tmp_path):
    out = tmp_path / "speed.md"
    assert gs.main(["--smoke-cpu", "--sections", "sinr", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "## SINR scale (synthetic: 4,096 records × 300 species" in text
    assert "| spmlkit `train_linear` (epoch + validation) |" in text and "Ratio spmlkit ÷ bare: " in text
