"""The figures of a bench folder (spmlkit.experiments.figures): which figures its runs
allow, PNG files, and runs.json read back schema-checked.  Figures from a real bench are
drawn in tests/experiments/bench/test_runner.py."""
import json
import math

import numpy as np
import pytest

from spmlkit.errors import CorruptFileError
from spmlkit.experiments import figures
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


# ------------------------------------------------------------ the curve figures
# The two curve figures of a bench (Cole Fig. 1, Zhou Fig. 5c) share one drawing routine
# (``_curve_figure``, issue 26): the points, bands, axes and titles they plot, read back
# from the matplotlib Axes on a small synthetic runs list.
BASE = {("d1", "a"): 40.0, ("d1", "b"): 30.0, ("d2", "a"): 60.0, ("d2", "b"): 20.0}


def _runs(values, key):
    """Two datasets x two methods x ``values`` of ``key`` x lr {1e-2, 1e-3} x seeds {0, 1}.
    Method a validates best at lr 1e-2, b at 1e-3; the selected configuration's test mAP
    is BASE + 10 * index of the value + 2 * seed (mean BASE + 10 i + 1, std 1); the other
    learning rate's is 30 lower.  (d2, b) at the first value has no finite test mAP."""
    runs = []
    for (d, m), base in BASE.items():
        for i, v in enumerate(values):
            for lr in (1e-2, 1e-3):
                best = (lr == 1e-2) == (m == "a")
                for seed in (0, 1):
                    test = base + 10 * i + 2 * seed - (0 if best else 30)
                    if (d, m) == ("d2", "b") and i == 0:
                        test = math.nan
                    r = {"dataset": d, "method": m, "lr": lr, "batch_size": 8, "seed": seed, "train_fraction": 1.0,
                         "hide_prob": None, "val_score": 50.0 + (5 if best else 0) + seed, "test_map": test, "train_map": None,
                         "n_observed": 100 * (i + 1)}
                    r[key] = v
                    runs.append(r)
    return runs


@pytest.fixture
def drawn(monkeypatch):
    """The figure each call draws (instead of its PNG)."""
    got = []
    monkeypatch.setattr(figures, "_save", lambda fig, path: got.append(fig) or path)
    return got


def _curves(ax):
    return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.lines}


def _bands(ax):
    """(x, low, high) of each ±std band (the outline of its fill_between polygon)."""
    out = []
    for coll in ax.collections:
        v = coll.get_paths()[0].vertices
        out.append(sorted({(float(x), float(y)) for x, y in v}))
    return out


def test_train_fraction_figure_plots_the_selected_means_against_observed_labels(tmp_path, drawn):
    runs = _runs([0.25, 0.5, 1.0], "train_fraction")
    assert figures.figure_train_fraction(runs, tmp_path / "f.png") == tmp_path / "f.png"
    (fig,) = drawn
    ax1, ax2 = fig.axes
    assert _curves(ax1) == {"a": ([100, 200, 300], [41.0, 51.0, 61.0]), "b": ([100, 200, 300], [31.0, 41.0, 51.0])}
    assert _curves(ax2) == {"a": ([100, 200, 300], [61.0, 71.0, 81.0]), "b": ([200, 300], [31.0, 41.0])}
    assert ax1.get_xscale() == "log" and ax1.get_xlabel() == "observed training labels"
    assert ax1.get_ylabel() == "test mAP" and ax1.get_title() == "d1: training fractions 0.25–1"
    assert ax2.get_title() == "d2: training fractions 0.25–1"
    assert [t.get_text() for t in ax1.get_legend().get_texts()] == ["a", "b"]
    # the band is mean ± std (std 1 over the two seeds)
    low_high = {(x, y) for pts in _bands(ax1)[:1] for x, y in pts}
    assert {(100.0, 40.0), (100.0, 42.0), (300.0, 60.0), (300.0, 62.0)} <= low_high


def test_partial_figure_plots_the_selected_means_against_the_hidden_fraction(tmp_path, drawn):
    runs = _runs([0.1, 0.5], "hide_prob")
    assert figures.figure_partial(runs, tmp_path / "p.png", methods=["b", "a"]) == tmp_path / "p.png"
    (fig,) = drawn
    ax1, ax2 = fig.axes
    assert _curves(ax1) == {"b": ([0.1, 0.5], [31.0, 41.0]), "a": ([0.1, 0.5], [41.0, 51.0])}
    assert _curves(ax2) == {"b": ([0.5], [31.0]), "a": ([0.1, 0.5], [61.0, 71.0])}
    assert [line.get_label() for line in ax1.lines] == ["b", "a"]  # the order asked for
    assert ax1.get_xscale() == "linear" and ax1.get_xlabel() == "fraction of hidden training labels"
    assert ax1.get_ylabel() == "test mAP" and (ax1.get_title(), ax2.get_title()) == ("d1", "d2")
    assert np.allclose(sorted({y for x, y in _bands(ax1)[0]}), [30.0, 32.0, 40.0, 42.0])


def test_curve_figures_draw_nothing_without_their_sweep(tmp_path, drawn):
    assert figures.figure_train_fraction(_runs([1.0], "train_fraction"), tmp_path / "f.png") is None
    assert figures.figure_partial(_runs([1.0], "train_fraction"), tmp_path / "p.png") is None
    assert drawn == []
