"""The streamed evaluation (spmlkit.rank_counts): the difference-array update, the
refusals of missing rows and bad scores, and the streamed observed-label scores against
the dense ones (moved from test_metrics.py with the module; the property tests against
the dense metrics stay there and in tests/twins)."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.metrics import evaluate_scores


def _chunks(S, rows):
    return lambda: ((s, S[..., s:s + rows, :]) for s in range(0, S.shape[-2], rows))


def test_subtracted_counts_equal_bincount_on_narrow_and_wide_spans():
    """The difference array's per-chunk update (bincount over the touched span, or an
    unbuffered subtract when the span is wide) equals a whole-length bincount."""
    from spmlkit.rank_counts import _subtract_counts

    rng = np.random.default_rng(0)
    for size, span in ((1000, 10), (1000, 1000), (10, 1000), (1, 1), (0, 5)):
        idx = np.sort(rng.integers(0, span, size)) + 3
        diff = np.zeros(span + 4, np.int64)
        _subtract_counts(diff, idx)
        np.testing.assert_array_equal(diff, -np.bincount(idx, minlength=span + 4))


def test_streamed_counts_refuse_missing_rows_and_bad_scores():
    from spmlkit.errors import DataFormatError
    from spmlkit.rank_counts import stream_rank_counts
    from spmlkit.sparse_labels import SparseLabels

    Y = SparseLabels.single([0, 1, 0], 2)
    with pytest.raises(DataFormatError, match="3"):
        stream_rank_counts(Y, lambda: iter([(0, np.zeros((2, 2), np.float32))]))
    with pytest.raises(DataFormatError, match="NaN or inf"):
        stream_rank_counts(Y, lambda: iter([(0, np.full((3, 2), np.nan, np.float32))]))


def test_streamed_observed_scores_equal_evaluate_scores():
    from spmlkit.rank_counts import streamed_observed_scores

    rng = np.random.default_rng(3)
    Z = np.zeros((40, 6), np.int8)
    Z[np.arange(40), rng.integers(0, 6, 40)] = 1
    Z[rng.random((40, 6)) < 0.1] = -1
    S = rng.normal(size=(1, 40, 6)).astype(np.float32)
    (got,) = streamed_observed_scores(Z, _chunks(S, 7))
    want = evaluate_scores(S[0], Z=Z)
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], abs=1e-12), k
