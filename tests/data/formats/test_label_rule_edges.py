"""The label rule at its one-label edge (spmlkit.data.formats.label_rule): a table with a
single label column whose rows are all positive is not "single positives" (one label of
one is a complete label set, or no information), nor evidently partial."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.data.formats.label_rule import is_evidently_partial, is_single_positive


@pytest.mark.parametrize("n", [1, 5])
def test_one_label_is_never_read_as_single_positives(n):
    Y = np.ones((n, 1), dtype=bool)
    assert not is_single_positive(Y) and not is_evidently_partial(Y)
    two = np.zeros((n, 2), dtype=bool)
    two[:, 0] = True
    assert is_single_positive(two)  # two labels, one positive each: single positives
    assert not is_single_positive(np.zeros((0, 2), dtype=bool))  # no row: no evidence
