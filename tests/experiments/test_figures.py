"""The figures of a bench folder (spmlkit.experiments.figures): which figures its runs
allow, PNG files, and runs.json read back schema-checked.  Figures from a real bench are
drawn in tests/experiments/test_bench.py."""
import json

import pytest

from spmlkit.errors import CorruptFileError
from spmlkit.experiments.figures import make_figures, read_runs

PNG = b"\x89PNG\r\n\x1a\n"


def _run(method, seed, *, fraction=1.0, hide=None, test=50.0, n_observed=100):
    return {"dataset": "toy", "method": method, "lr": 0.01, "batch_size": 8, "seed": seed, "train_fraction": fraction,
            "val_score": 60.0, "test_map": test + seed, "train_map": 90.0, "hide_prob": hide, "n_observed": n_observed, "group": "g"}


def _write(path, runs):
    path.write_text(json.dumps({"runs": runs}))
    return path


def test_train_fractions_and_a_partial_sweep_give_their_figures(tmp_path):
    _write(tmp_path / "runs.json", [_run(m, s, fraction=f, test=40 + 20 * f, n_observed=int(200 * f))
                                    for m in ("an", "role") for s in (0, 1) for f in (0.25, 1.0)])
    _write(tmp_path / "partial-runs.json", [_run("an", s, hide=h, test=60 - 20 * h) for s in (0, 1)
                                            for h in (0.2, 0.5, 0.8)])
    written = make_figures(tmp_path)
    assert [p.name for p in written] == ["fig1-train-fraction.png", "partial.png"]
    assert all(p.read_bytes().startswith(PNG) for p in written)
    assert [p.name for p in make_figures(tmp_path, methods=["an"])] == ["fig1-train-fraction.png", "partial.png"]


def test_one_training_fraction_and_no_histograms_give_no_figure(tmp_path):
    _write(tmp_path / "runs.json", [_run("an", s) for s in (0, 1)])
    assert make_figures(tmp_path) == []


def test_runs_json_is_schema_checked(tmp_path):
    assert read_runs(_write(tmp_path / "ok.json", [_run("an", 0)]))[0]["method"] == "an"
    with pytest.raises(CorruptFileError, match="expected a JSON object with a list of runs under 'runs'"):
        read_runs(_write(tmp_path / "r.json", None))
    bad = _run("an", 0)
    bad["seed"] = "0"
    with pytest.raises(CorruptFileError, match=r"run 1: 'seed' is missing or not of the expected type; re-run the "
                                               r"same 'spml bench' command to rewrite it"):
        read_runs(_write(tmp_path / "r.json", [bad]))
    with pytest.raises(CorruptFileError, match="'hist_unobserved_positives' is not a list of histograms"):
        read_runs(_write(tmp_path / "r.json", [{**_run("an", 0), "hist_unobserved_positives": [1, 2]}]))
