"""The rule by which a user's table's labels are read when nobody said
(spmlkit.data.formats.label_rule): its edges, and the Python API following it.  The
command line's side (every layout, the refusal, the flags, the bundle's record) is
tests/integration/test_label_rule.py."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.data import load_any
from spmlkit.data.formats.label_rule import (PARTIAL_MIN_LABELS, is_evidently_partial, is_single_positive,
                                             per_row_evidence)
from spmlkit.errors import ConfigError


def _wide(path, per_row, n=40, L=8, seed=0):
    rng = np.random.default_rng(seed)
    lines = ["f0,f1," + ",".join(f"lab_{j}" for j in range(L))]
    for _ in range(n):
        on = set(rng.choice(L, size=int(rng.integers(per_row[0], per_row[1] + 1)), replace=False).tolist())
        lines.append(f"{rng.normal():.3f},{rng.normal():.3f}," + ",".join(str(int(j in on)) for j in range(L)))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_python_api_follows_the_same_rule(tmp_path):
    src = _wide(tmp_path / "w.csv", (1, 5))
    with pytest.raises(ConfigError, match=r"--label-columns 'lab_\*' complete label sets"):
        load_any(str(src), label_columns=["lab_*"])
    assert load_any(str(src), label_columns=["lab_*"], observed=False).has_full_labels
    seen = []
    src = _wide(tmp_path / "p.csv", (1, 2))
    ds = load_any(str(src), label_columns=["lab_*"], log=seen.append)
    assert not ds.has_full_labels and len(seen) == 1 and "training rows name 1-2 labels each" in seen[0]


@pytest.mark.parametrize("per_row,labels,partial,single", [
    ((1, 2), 8, True, False), ((1, 1), 8, True, True), ((1, 1), 2, False, True), ((1, 2), PARTIAL_MIN_LABELS - 1,
                                                                                 False, False),
    ((0, 2), 8, False, False), ((1, 3), 8, False, False), ((2, 2), PARTIAL_MIN_LABELS, True, False)])
def test_the_rule_at_its_edges(per_row, labels, partial, single):
    """Rows with no label, three labels, fewer than five labels: not evidently partial;
    exactly one of two labels: single positives."""
    rng = np.random.default_rng(0)
    Y = np.zeros((20, labels), dtype=bool)
    for i in range(20):
        k = per_row[1] if i == 0 else (per_row[0] if i == 1 else int(rng.integers(per_row[0], per_row[1] + 1)))
        Y[i, rng.choice(labels, size=k, replace=False)] = True
    assert is_evidently_partial(Y) is partial and is_single_positive(Y) is single


def test_the_evidence_is_labels_per_row():
    Y = np.array([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 1, 1, 1]], dtype=bool)
    assert per_row_evidence(Y) == "training rows name 1-3 labels each (mean 2.00) of 5"
    assert per_row_evidence(Y, "examples").startswith("training examples name 1-3")
