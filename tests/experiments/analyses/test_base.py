"""The analyses' shared parts (spmlkit.experiments.analyses.base): argument names, the
checks of list options, seeds, the CSV writer and the option filter of run_analysis."""
import csv

import pytest

from spmlkit.errors import ConfigError
from spmlkit.experiments.analyses.base import (ANALYSES, Arg, check_positive, prepare_out, register_analysis,
                                               run_analysis, seed_list, write_csv)


def test_an_arguments_name_is_its_long_flag_or_its_dest():
    assert Arg(("-k", "--k-values")).dest == "k_values"
    assert Arg(("source",)).dest == "source"
    assert Arg(("-o", "--out"), dict(dest="folder")).dest == "folder"


def test_list_options_are_positive_and_whole_where_asked():
    assert check_positive("--k", [1, 2.5]) == [1, 2.5]
    assert check_positive("--q", [3], integer=True) == [3]
    for bad, integer in (([0], False), ([-1], False), ([2.5], True), ([], False)):
        with pytest.raises(ConfigError, match="--x"):
            check_positive("--x", bad, integer=integer)


def test_seeds_start_at_the_seed():
    assert seed_list(5, 3) == [5, 6, 7] and seed_list(0, 1) == [0]
    with pytest.raises(ConfigError, match="--seeds must be >= 1, got 0"):
        seed_list(0, 0)


def test_csv_keeps_floats_exactly_and_writes_none_as_empty(tmp_path):
    out = prepare_out(tmp_path / "out")  # an analysis writes only into its claimed folder
    path = write_csv(out / "t.csv", [{"a": 0.1 + 0.2, "b": None, "c": 3}, {"a": 1.0, "b": "x", "c": 4}],
                     columns=["a", "b"])
    rows = list(csv.reader(open(path)))
    assert rows == [["a", "b"], [repr(0.1 + 0.2), ""], ["1.0", "x"]]


def test_run_analysis_passes_only_the_analysis_arguments():
    seen = {}

    @register_analysis("base-test", help="a test", paper="none", arguments=(Arg(("--extra",)),))
    def fake(**kw):
        seen.update(kw)
        return {"ok": True}

    try:
        out = run_analysis("base-test", {"source": "s", "out": "o", "extra": 3, "unrelated": 1}, log=print)
    finally:
        ANALYSES.remove("base-test")
    assert out == {"ok": True} and seen == {"source": "s", "out": "o", "extra": 3, "log": print}
