"""``spml bench`` end to end on the toy bundle: resume, invalidation, regime override,
partial sweep, training fractions, figures, and a SIGKILL-and-resume subprocess."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError, UnknownNameError
from spmlkit.experiments import bench as B
from spmlkit.experiments.bench.runner import is_bench_folder
from spmlkit.experiments.tables import strip_run_block
from spmlkit.io import read_json

SMALL = dict(lrs=(1e-2, 1e-3), batch_sizes=(8, 16), seeds=(0, 1), epochs=2)


def spec(bundle, **kw):
    args = {**SMALL, **kw}
    return B.BenchSpec(datasets=[str(bundle.path)], **args)


@pytest.fixture
def count_trainings(monkeypatch):
    """Counts calls of train_linear made by the bench (one per training group)."""
    import spmlkit.training.linear as lin

    calls = []
    real = lin.train_linear

    def counting(*a, **kw):
        calls.append(kw.get("lrs"))
        return real(*a, **kw)

    monkeypatch.setattr(lin, "train_linear", counting)
    return calls


def test_bench_writes_tables_and_resumes(toy_bundle, tmp_path, count_trainings):
    out = tmp_path / "res"
    s = B.run_bench(spec(toy_bundle, methods=["bce", "an"]), out, progress=False, figures=False, log=lambda m: None)
    # stacked: one group per (method, batch size) holding lrs x seeds = 4 members
    assert len(count_trainings) == 4 and all(len(c) == 4 for c in count_trainings)
    assert s["groups_done"] == s["groups_total"] == 4
    for f in ("table.md", "recovery.md", "runs.csv", "runs.json.gz"):
        assert (out / f).exists(), f
    assert not (out / "work").exists()
    runs = read_json(out / "runs.json.gz")["runs"]
    assert len(runs) == 2 * 2 * 2 * 2
    assert {"dataset", "method", "params", "regime", "lr", "batch_size", "seed", "best_epoch", "val_score",
            "test_map", "train_map", "seconds"} <= set(runs[0])
    table = (out / "table.md").read_text()
    assert "| bce | All P. & All N. |" in table and "| an | 1 P. & 0 N. | **" in table
    assert "## Selected configuration" in table and "2 seeds" in table
    assert "| an | 1 P. & 0 N. |" in (out / "recovery.md").read_text()
    assert "bce" not in (out / "recovery.md").read_text().split("| Loss |")[1]

    # rerun: nothing trained, identical tables; the header keeps the wall time and date of
    # the invocation that trained (re-rendering must not claim "0 s")
    before = {f: strip_run_block((out / f).read_text()) for f in ("table.md", "recovery.md")}
    inv = read_json(out / "runs.json.gz")["invocations"]
    assert len(inv) == 1 and inv[0]["wall_seconds"] > 0
    run_lines = lambda: [ln for ln in (out / "table.md").read_text().splitlines() if ln.startswith("- wall time")]
    wall_before = run_lines()
    B.run_bench(spec(toy_bundle, methods=["bce", "an"]), out, progress=False, figures=False, log=lambda m: None)
    assert len(count_trainings) == 4
    assert before == {f: strip_run_block((out / f).read_text()) for f in ("table.md", "recovery.md")}
    assert read_json(out / "runs.json.gz")["invocations"] == inv
    assert run_lines() == wall_before and "re-rendered" in (out / "table.md").read_text()

    # the record is gzip-compressed, and the same record gives the same bytes (no time in
    # the archive); a folder written before records were compressed (a plain runs.json) is
    # read back (its invocations kept) and its runs.json replaced by runs.json.gz.  Such a
    # folder has no manifest (an older spmlkit's): its files are adopted by their layout
    import gzip

    gz = (out / "runs.json.gz").read_bytes()
    (out / "runs.json").write_bytes(gzip.decompress(gz))
    (out / "runs.json.gz").unlink()
    (out / ".spml-manifest").unlink()
    (out / ".spml-output.json").write_text('{"written_by": "spmlkit", "kind": "bench"}')  # (an older marker: no manifest)
    from spmlkit import ownership

    ownership._ROOTS.pop(os.path.abspath(out), None)  # (as a new process would meet it)
    assert is_bench_folder(out)
    B.run_bench(spec(toy_bundle, methods=["bce", "an"]), out, progress=False, figures=False, log=lambda m: None)
    assert not (out / "runs.json").exists() and (out / "runs.json.gz").read_bytes() == gz
    assert run_lines() == wall_before

    # a changed configuration (epochs) invalidates every group; a new method only adds its own
    B.run_bench(spec(toy_bundle, methods=["bce", "an"], epochs=3), out, progress=False, figures=False,
                log=lambda m: None)
    assert len(count_trainings) == 8
    B.run_bench(spec(toy_bundle, methods=["bce", "an", "iu"], epochs=3), out, progress=False, figures=False,
                log=lambda m: None)
    assert len(count_trainings) == 10
    # a changed grid changes the member list, hence the hash
    B.run_bench(spec(toy_bundle, methods=["an"], epochs=3, lrs=(1e-2,)), out, progress=False, figures=False,
                log=lambda m: None)
    assert len(count_trainings) == 12


def test_two_grids_sharing_a_results_folder_count_their_own_wall_time(toy_bundle, tmp_path, monkeypatch):
    """Issue 37: grid B written into grid A's folder sums B's invocations only (A's time is
    not B's); re-rendering A afterwards gives A's time again."""
    from spmlkit.experiments import tables as T

    out = tmp_path / "res"
    B.run_bench(spec(toy_bundle, methods=["an"]), out, progress=False, figures=False, log=lambda m: None)
    from spmlkit.io import write_json_gz

    inv = read_json(out / "runs.json.gz")["invocations"]
    inv[0]["wall_seconds"] = 1000.0  # (A "took" 1000 s: unmistakable in B's header if it were added)
    manifest = read_json(out / "runs.json.gz")
    manifest["invocations"] = inv
    from spmlkit import ownership

    ownership.write_json_gz(out / "runs.json.gz", manifest)  # (as spmlkit's own record: an edit of yours is not)
    B.run_bench(spec(toy_bundle, methods=["bce"]), out, progress=False, figures=False, log=lambda m: None)
    wall = next(ln for ln in (out / "table.md").read_text().splitlines() if ln.startswith("- wall time"))
    assert "16 min" not in wall and "over 2 invocations" not in wall, wall
    both = read_json(out / "runs.json.gz")["invocations"]
    assert len(both) == 2 and both[0]["grid"] != both[1]["grid"]  # both kept, each with its grid
    B.run_bench(spec(toy_bundle, methods=["an"]), out, progress=False, figures=False, log=lambda m: None)
    wall = next(ln for ln in (out / "table.md").read_text().splitlines() if ln.startswith("- wall time"))
    assert "16 min 40 s" in wall, wall  # A again: its own 1000 s
    assert T.grid_invocations([{"wall_seconds": 1}], "x") == [{"wall_seconds": 1}]  # older records: counted


@pytest.fixture
def solo_method():
    """A registered method whose component cannot stack members (trained one run at a time)."""
    from spmlkit.methods import METHODS, Component, Method, register_method

    class Solo(Component):
        supports_members = False

    @register_method("test-solo", regime="single_positive", reference="test only")
    def build_solo(scale: float = 1.0):
        """A test method that cannot stack members."""
        return Method("test-solo", "an", components=[Solo()])

    yield "test-solo"
    del METHODS["test-solo"]


def test_methods_that_cannot_stack_train_one_member_at_a_time(toy_bundle, tmp_path, count_trainings, solo_method):
    out = tmp_path / "res"
    B.run_bench(spec(toy_bundle, methods=[solo_method], batch_sizes=(8,)), out, progress=False, figures=False,
                log=lambda m: None)
    assert len(count_trainings) == 4 and all(len(c) == 1 for c in count_trainings)
    assert "| test-solo | 1 P. & 0 N. |" in (out / "table.md").read_text()
    # --param METHOD:NAME=VALUE reaches the method and is part of the hash
    B.run_bench(spec(toy_bundle, methods=[solo_method], batch_sizes=(8,), params={solo_method: {"scale": 2.0}}),
                out, progress=False, figures=False, log=lambda m: None)
    assert len(count_trainings) == 8
    assert "- test-solo: scale=2.0" in (out / "table.md").read_text()


def test_regime_override(toy_bundle, tmp_path):
    from spmlkit.methods import build_method
    from spmlkit.training.prepare import observations_for

    an = build_method("an")
    Z_own = observations_for(toy_bundle, an)
    assert ((Z_own == 1).sum(1) == 1).all() and not (Z_own == -1).any()
    Z_full = observations_for(toy_bundle, an, TrainConfig(method="an", regime="full"))
    np.testing.assert_array_equal(Z_full, np.where(toy_bundle.labels("train"), 1, -1))
    assert TrainConfig(regime="1p").regime == "single_positive"
    with pytest.raises(UnknownNameError):
        TrainConfig(regime="everything")
    # AN on full labels is BCE on full labels: same runs
    from spmlkit.training import train_linear

    a = train_linear(toy_bundle, TrainConfig(method="an", regime="full", epochs=2))[0]
    b = train_linear(toy_bundle, TrainConfig(method="bce", epochs=2))[0]
    assert a.val_history == pytest.approx(b.val_history) and a.test_map == pytest.approx(b.test_map)
    # in the bench every row moves to the full-label group and every row competes
    out = tmp_path / "res"
    B.run_bench(spec(toy_bundle, methods=["an", "iu"], regime="full", batch_sizes=(8,)), out, progress=False,
                figures=False, log=lambda m: None)
    table = (out / "table.md").read_text()
    assert "| an | All P. & All N. |" in table and "| iu |  |" in table
    assert "explicit --regime override" in table
    assert "nothing to recover" in (out / "recovery.md").read_text()


def test_bundle_partial_observations_per_hide_prob(toy_bundle):
    Y = toy_bundle.labels("train")
    Zs = {p: toy_bundle.observations("train", "partial", hide_prob=p) for p in (0.0, 0.3, 0.7)}
    assert (toy_bundle.path / "observed" / "partial-p0.3.header.npy").exists()
    np.testing.assert_array_equal(Zs[0.0], np.where(Y, 1, -1))
    hidden = {p: Z == 0 for p, Z in Zs.items()}
    assert 0.15 < hidden[0.3].mean() < 0.45 and 0.55 < hidden[0.7].mean() < 0.85
    assert (hidden[0.3] <= hidden[0.7]).all()  # nested draws
    assert ((Zs[0.7] != 0) <= (Zs[0.7] == np.where(Y, 1, -1))).all()  # what is shown is true
    np.testing.assert_array_equal(toy_bundle.observations("train", "partial", hide_prob=0.3), Zs[0.3])  # cached
    with pytest.raises(ConfigError, match="partial"):
        toy_bundle.observations("train", "single_positive", hide_prob=0.3)
    with pytest.raises(ConfigError):
        toy_bundle.observations("train", "partial", hide_prob=1.5)


def test_partial_sweep(toy_bundle, tmp_path):
    out = tmp_path / "res"
    s = B.run_bench(spec(toy_bundle, hide_fractions=(0.1, 0.5, 0.9), batch_sizes=(8,), seeds=(0,)), out,
                    progress=False, log=lambda m: None)
    assert s["written"]["partial"].name == "partial.md"
    text = (out / "partial.md").read_text()
    assert "| method | hide 0.1 | hide 0.5 | hide 0.9 |" in text
    assert "| iu |" in text and "| an |" in text  # the default methods that are registered
    runs = read_json(out / "partial-runs.json.gz")["runs"]
    assert {r["regime"] for r in runs} == {"partial"} and {r["hide_prob"] for r in runs} == {0.1, 0.5, 0.9}
    n_obs = {p: {r["n_observed"] for r in runs if r["hide_prob"] == p} for p in (0.1, 0.5, 0.9)}
    assert max(n_obs[0.9]) < min(n_obs[0.5]) < min(n_obs[0.1])
    assert (out / "partial.png").stat().st_size > 1000
    assert not (out / "table.md").exists()
    with pytest.raises(ConfigError):
        B.validate_spec(spec(toy_bundle, hide_fractions=(0.5,), regime="full"))


def test_train_fractions_and_figures(toy_bundle, tmp_path, capsys):
    from spmlkit.cli import main

    out = tmp_path / "res"
    s = B.run_bench(spec(toy_bundle, methods=["bce", "an"], batch_sizes=(8,), train_fractions=(0.25, 0.5)), out,
                    progress=False, log=lambda m: None)
    runs = read_json(out / "runs.json.gz")["runs"]
    n = {f: {r["n_train"] for r in runs if r["train_fraction"] == f} for f in (0.25, 0.5, 1.0)}
    N = toy_bundle.size("train")
    assert n == {0.25: {round(N / 4)}, 0.5: {N // 2}, 1.0: {N}}
    # x axis of Fig. 1: observed labels = examples x labels for BCE, one per example for AN
    obs = {(r["method"], r["train_fraction"]): r["n_observed"] for r in runs}
    assert obs[("an", 0.5)] == N // 2 and obs[("bce", 0.5)] == N // 2 * toy_bundle.n_labels
    assert "| an |" in (out / "fractions.md").read_text()
    names = sorted(p.name for p in s["written"]["figures"])
    assert names == ["fig1-train-fraction.png", "fig2-toy.png"]
    # histograms of unobserved positives: AN only (BCE observes every label); rows sum to 1
    group = json.loads(next((out / "groups").glob("*.json")).read_text())
    hists = [r.get("hist_unobserved_positives") for g in (out / "groups").glob("*.json")
             for r in json.loads(g.read_text())["runs"] if r["method"] == "an" and r["train_fraction"] == 1.0]
    assert hists and all(len(h) == 2 and len(h[0]) == B.HIST_BINS and abs(sum(h[0]) - 1) < 1e-4 for h in hists)
    assert group["key"]["format"] == B.BENCH_FORMAT
    for p in s["written"]["figures"]:
        p.unlink()
    assert main(["figures", str(out)]) == 0
    assert (out / "fig1-train-fraction.png").exists() and (out / "fig2-toy.png").exists()


def test_cli_bench_records_the_command(toy_bundle, tmp_path, capsys):
    from spmlkit.cli import main

    out = tmp_path / "res"
    argv = ["bench", "--datasets", str(toy_bundle.path), "--methods", "an", "--lrs", "0.01", "--batch-sizes", "8",
            "--seeds", "1", "--epochs", "2", "--no-figures", "-o", str(out)]
    assert main(argv) == 0
    stdout = capsys.readouterr().out
    assert "| an | 1 P. & 0 N. |" in stdout and "results in" in stdout
    table = (out / "table.md").read_text()
    assert f"- command: `spml bench --datasets {toy_bundle.path} --methods an" in table
    assert "- machine: " in table and "torch " in table and "cores" in table
    assert main(["bench", "--datasets", str(toy_bundle.path), "--methods", "nope", "-o", str(out)]) == 2
    assert "unknown method 'nope'" in capsys.readouterr().err


@pytest.mark.slow
def test_sigkill_mid_grid_then_resume_gives_identical_tables(toy_bundle, tmp_path):
    """A bench killed with SIGKILL mid-group (checkpoint present) and restarted ends with the
    same tables, byte for byte outside the run block, as an uninterrupted bench."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in [str(Path(B.__file__).parents[3]),
                                                                   os.environ.get("PYTHONPATH", "")] if p),
           "SPML_NO_PROGRESS": "1"}
    argv = [sys.executable, "-m", "spmlkit.cli", "bench", "--datasets", str(toy_bundle.path), "--methods", "an",
            "bce", "--lrs", "0.01", "0.001", "--batch-sizes", "4", "8", "--seeds", "2", "--epochs", "8",
            "--no-figures", "-o", "res"]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = subprocess.run(argv, cwd=tmp_path / "a", env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr

    res = tmp_path / "b" / "res"
    proc = subprocess.Popen(argv, cwd=tmp_path / "b", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    killed_mid_group = False
    while time.time() < deadline and proc.poll() is None:
        done = list((res / "groups").glob("*.json")) if (res / "groups").exists() else []
        ckpts = list((res / "work").glob("*/last.pt")) if (res / "work").exists() else []
        if done and ckpts:
            os.kill(proc.pid, signal.SIGKILL)
            killed_mid_group = True
            break
        time.sleep(0.02)
    proc.wait(timeout=60)
    assert killed_mid_group, "the bench finished before it could be killed; make the grid longer"
    n_done = len(list((res / "groups").glob("*.json")))
    assert 1 <= n_done < 4
    again = subprocess.run(argv, cwd=tmp_path / "b", env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    for f in ("table.md", "recovery.md"):
        a = (tmp_path / "a" / "res" / f).read_text()
        b = (res / f).read_text()
        assert strip_run_block(a) == strip_run_block(b), f  # only the run blocks (date, times) may differ

    def stable(path):
        runs = read_json(path)["runs"]
        return [{k: v for k, v in r.items() if k not in ("seconds", "group_seconds")} for r in runs]

    assert stable(tmp_path / "a" / "res" / "runs.json.gz") == stable(res / "runs.json.gz")


def test_histogram_of_matches_numpy():
    import torch

    p = torch.rand(3, 50, 4)
    p[0, 0, 0], p[0, 1, 1] = 1.0, 0.0  # both ends of [0, 1] are counted
    m = np.random.default_rng(0).random((50, 4)) < 0.5
    m[0, 0] = m[1, 1] = True
    h = B.histogram_of(p, m)
    for g in range(3):
        ref = np.histogram(p[g].numpy()[m], bins=B.HIST_BINS, range=(0, 1))[0] / m.sum()
        np.testing.assert_allclose(h[g], ref, atol=1e-6)


@pytest.mark.slow
def test_parallel_jobs_give_the_same_runs(toy_bundle, tmp_path):
    """Groups trained in two worker processes give exactly the runs of a sequential bench."""
    from spmlkit.experiments.bench import BenchSpec, run_bench

    spec = BenchSpec(datasets=[str(toy_bundle.path)], methods=["an", "bce"], lrs=(1e-2, 1e-3), batch_sizes=(4, 8),
                     seeds=(0, 1), epochs=3)
    run_bench(spec, tmp_path / "seq", progress=False, figures=False, log=lambda m: None)
    run_bench(spec, tmp_path / "par", progress=False, figures=False, log=lambda m: None, jobs=2, threads=1)
    sweep = BenchSpec(datasets=[str(toy_bundle.path)], methods=["an"], lrs=(1e-2,), batch_sizes=(8,), seeds=(0,),
                      epochs=2, hide_fractions=(0.3, 0.6))  # workers re-validate the spec: a sweep must survive it
    run_bench(sweep, tmp_path / "sweep", progress=False, figures=False, log=lambda m: None, jobs=2, threads=1)
    assert (tmp_path / "sweep" / "partial.md").exists()

    def stable(path):
        runs = read_json(path)["runs"]
        return sorted((json.dumps({k: v for k, v in r.items() if k not in ("seconds", "group_seconds")},
                                  sort_keys=True) for r in runs))

    assert stable(tmp_path / "seq" / "runs.json.gz") == stable(tmp_path / "par" / "runs.json.gz")


@pytest.mark.slow
def test_finetune_bench_with_linear_init_rows(tmp_path):
    """``--setting finetune`` with a LinearInit row ('role+li'): the row trains the linear
    phase on cached features, then fine-tunes; plain rows fine-tune for --epochs."""
    from tests.helpers.image_fixtures import tiny_digits_bundle
    from spmlkit.experiments.bench import BenchSpec, run_bench

    b = tiny_digits_bundle(tmp_path)
    spec = BenchSpec(datasets=[str(b.path)], methods=["an", "role+li"], lrs=(1e-3,), batch_sizes=(8,), seeds=(0,),
                     epochs=2, setting="finetune",
                     config={"backbone": "tiny-random", "image_size": 32, "finetune_epochs": 1})
    run_bench(spec, tmp_path / "res", progress=False, figures=False, log=lambda m: None)
    runs = {r["method"]: r for r in read_json(tmp_path / "res" / "runs.json.gz")["runs"]}
    assert set(runs) == {"an", "role+li"}
    assert runs["an"]["epochs_run"] == 2  # --epochs fine-tuning epochs
    li = runs["role+li"]["finetune"]
    assert runs["role+li"]["epochs_run"] == 1 and li["linear_init"]["epochs_run"] == 25  # 25 linear, then 1
    table = (tmp_path / "res" / "table.md").read_text()
    assert "| role+li |" in table and "LinearInit rows" in table


@pytest.mark.slow
def test_linear_bench_on_image_bundles_caches_features(tmp_path):
    from tests.helpers.image_fixtures import tiny_digits_bundle
    from spmlkit.data import Bundle
    from spmlkit.experiments.bench import BenchSpec, run_bench

    b = tiny_digits_bundle(tmp_path)
    spec = BenchSpec(datasets=[str(b.path)], methods=["an"], lrs=(1e-2,), batch_sizes=(8,), seeds=(0,), epochs=2,
                     config={"backbone": "tiny-random", "image_size": 32})
    run_bench(spec, tmp_path / "res", progress=False, figures=False, log=lambda m: None)
    assert Bundle(b.path).feature_sets() == ["tiny-random-32"]
    runs = read_json(tmp_path / "res" / "runs.json.gz")["runs"]
    assert len(runs) == 1 and runs[0]["test_map"] is not None


def test_inline_row_params_make_variants_of_one_method(toy_bundle, tmp_path):
    """``an-ls[epsilon=0]`` is a row of its own, and AN-LS with ε = 0 is AN (Cole Eq. 9):
    same runs, same numbers; inline values are validated like --param ones."""
    assert B.row_params("role[storage=factorised, rank=8]") == {"storage": "factorised", "rank": 8}
    assert B.split_row("role+li[storage=float16]") == ("role", {"linear_init": True})
    assert B.row_params("an") == {}
    s = spec(toy_bundle, methods=["an", "an-ls[epsilon=0]", "an-ls"], batch_sizes=(8,), seeds=(0,))
    B.run_bench(s, tmp_path / "res", progress=False, figures=False, log=lambda m: None)
    runs = read_json(tmp_path / "res" / "runs.json.gz")["runs"]
    by = {}
    for r in runs:
        by.setdefault(r["method"], []).append(r)
    assert set(by) == {"an", "an-ls[epsilon=0]", "an-ls"}
    assert [r["params"] for r in by["an-ls[epsilon=0]"]] == [{"epsilon": 0}] * len(by["an"])
    key = lambda r: (r["lr"], r["seed"])  # noqa: E731
    for a, b in zip(sorted(by["an"], key=key), sorted(by["an-ls[epsilon=0]"], key=key)):
        assert a["test_map"] == pytest.approx(b["test_map"], abs=1e-9) and a["best_epoch"] == b["best_epoch"]
    assert any(abs(a["test_map"] - b["test_map"]) > 1e-6 for a, b in
               zip(sorted(by["an"], key=key), sorted(by["an-ls"], key=key)))  # the default ε does differ
    assert "| an-ls[epsilon=0] |" in (tmp_path / "res" / "table.md").read_text()
    with pytest.raises(ConfigError, match=r"row an-ls\[gamma=1\]: method 'an-ls' has no hyper-parameter\(s\) "
                                          r"\['gamma'\]"):
        B.run_bench(spec(toy_bundle, methods=["an-ls[gamma=1]"]), tmp_path / "bad", progress=False,
                    figures=False, log=lambda m: None)
    with pytest.raises(ConfigError, match="expected NAME=VALUE"):
        B.row_params("role[storage]")


# ``spml bench --vary-draw``: seed s trains on the bundle prepared with prepare seed s, and the
# table says the spread is over draws.  Without the option nothing changes.


SMALL_DRAWS = dict(methods=["an"], lrs=(1e-2,), batch_sizes=(16,), seeds=(0, 1), epochs=1)


def test_vary_draw_trains_each_seed_on_its_own_draw(tmp_path):
    out = tmp_path / "b"
    summary = B.run_bench(B.BenchSpec(datasets=["yeast"], vary_draw=True, **SMALL_DRAWS), out, progress=False,
                          figures=False, log=lambda m: None)
    runner_groups = sorted((out / "groups").glob("*.json"))
    assert len(runner_groups) == 2  # one group per draw (a draw's seeds cannot share a stacked model)
    from spmlkit.data import Bundle

    b0, b1 = Bundle(out / "bundles" / "yeast-s0"), Bundle(out / "bundles" / "yeast-s1")
    assert b0.meta["seed"] == 0 and b1.meta["seed"] == 1
    assert not np.array_equal(np.load(b0.path / "val" / "index.npy"), np.load(b1.path / "val" / "index.npy"))
    runs = read_json(out / "runs.json.gz")["runs"]
    assert sorted((r["seed"], r["prepare_seed"]) for r in runs) == [(0, 0), (1, 1)]
    table = (out / "table.md").read_text()
    assert "mean ± std over draws" in table and "--vary-draw" in table
    assert summary["written"]["table"].exists()
    # rerunning resumes: nothing is trained again
    runner = B.BenchRunner(B.BenchSpec(datasets=["yeast"], vary_draw=True, **SMALL_DRAWS), out, progress=False,
                           figures=False, log=lambda m: None)
    runner.run(B.Sequential())
    assert runner.n_trained == 0


def test_vary_draw_on_image_datasets_caches_features_of_every_draw(tmp_path, monkeypatch):
    """With --vary-draw an image dataset has one bundle per draw; the linear setting caches
    backbone features for each of them (it used to refuse: 'mixes image and feature
    datasets', because it compared bundles with datasets)."""
    from tests.helpers.image_fixtures import tiny_digits_bundle

    import spmlkit.experiments.bench.runner as R

    draws = {s: (tiny_digits_bundle(tmp_path / f"d{s}", seed=s), f"fp{s}") for s in (0, 1)}
    ds = B.BenchDataset("digits", draws[0][0], "fp0", draws)
    seen = []
    monkeypatch.setattr(R, "ensure_features", lambda b, **kw: seen.append(b.path) or "efficientnet-lite0-32")
    runner = B.BenchRunner(B.BenchSpec(datasets=["digits"], vary_draw=True, **SMALL_DRAWS), tmp_path / "out",
                           progress=False, figures=False, log=lambda m: None)
    runner._cache_image_features([ds])
    assert sorted(seen) == sorted(b.path for b, _ in draws.values())
    assert runner.spec.config["feature_set"] == "efficientnet-lite0-32"
    tab = B.BenchDataset("yeast-like", object(), "fp", {})
    tab.bundle = type("FeatureBundle", (), {"kind": "features"})()
    fresh = B.BenchRunner(B.BenchSpec(datasets=["digits"], vary_draw=True, **SMALL_DRAWS), tmp_path / "out2",
                          progress=False, figures=False, log=lambda m: None)
    with pytest.raises(ConfigError, match="mixes image and feature"):
        fresh._cache_image_features([ds, tab])


