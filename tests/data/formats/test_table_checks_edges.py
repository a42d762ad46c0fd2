"""Repeated ids at their edge (spmlkit.data.formats.table_checks.refuse_contradicting_ids):
two rows of one id naming the same labels with different values (an observed positive
and an observed negative of one label) describe the example two ways and are refused;
the same labels with the same values, in any order, are one example written twice."""
import numpy as np
import pytest

from spmlkit.data.formats.table_checks import refuse_contradicting_ids
from spmlkit.errors import DataFormatError


def test_the_same_labels_with_other_values_are_refused():
    rows, cols = np.array([0, 0, 1, 1]), np.array([0, 2, 2, 0])
    refuse_contradicting_ids("w.csv", ["a", "a"], rows, cols, np.array([1, -1, -1, 1]), [2, 3])  # same, reordered
    with pytest.raises(DataFormatError, match=r"id 'a' \(lines 2 and 3\) repeated with different labels"):
        refuse_contradicting_ids("w.csv", ["a", "a"], rows, cols, np.array([1, -1, 1, 1]), [2, 3])
