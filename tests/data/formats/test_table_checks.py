"""The label checks of a user's table (spmlkit.data.formats.table_checks)."""
import numpy as np
import pytest

from spmlkit.data.formats.table_checks import CLASS_CODES, columns_listed, refuse_contradicting_ids
from spmlkit.errors import DataFormatError


def test_every_column_is_listed_up_to_the_limit():
    assert columns_listed(["a", "b"]) == "the columns are: 'a', 'b'"
    many = [f"c{i}" for i in range(45)]
    assert columns_listed(many).endswith("'c39' and 5 more")


def test_repeated_ids_refused_only_when_their_labels_differ():
    rows, cols, vals = np.array([0, 1, 2]), np.array([0, 1, 0]), np.array([1, 1, 1])
    refuse_contradicting_ids("t.csv", ["a", "b", "a"], rows, cols, vals, [2, 3, 4])  # the same labels: fine
    with pytest.raises(DataFormatError, match=r"id 'b' \(lines 3 and 4\) repeated with different labels"):
        refuse_contradicting_ids("t.csv", ["a", "b", "b"], rows, cols, vals, [2, 3, 4])
    assert {"-1", "0", "1"} <= CLASS_CODES
