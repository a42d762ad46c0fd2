"""A practitioner's day (issue 25): train the deployed model on all rows, auto by default,
progress in logs, experiment tracking, and the small things a new user trips over."""
import csv

import numpy as np
import pytest

from spmlkit.cli import main
from spmlkit.data import Bundle
from tests.helpers import REPO
from tests.helpers.cli import run_cli as run

LABELS = ["cat", "dog", "sofa", "tree"]


@pytest.fixture
def own_csv(tmp_path):
    """train.csv: 150 rows of 5 features and one observed label each (a user's own data)."""
    rng = np.random.default_rng(0)
    W = rng.normal(size=(5, len(LABELS)))
    path = tmp_path / "train.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"f{i}" for i in range(5)] + ["label"])
        for _ in range(150):
            x = rng.normal(size=5)
            w.writerow([f"{v:.3f}" for v in x] + [LABELS[int(np.argmax(x @ W))]])
    return path


# ------------------------------------------------------------ item 1: train on all rows
def test_test_fraction_zero_trains_on_every_row_but_validation(tmp_path, capsys, own_csv):
    code, out, err = run(capsys, "prepare", own_csv, "--label-column", "label", "--test-fraction", "0",
                         "-o", tmp_path / "b")
    assert code == 0, err
    b = Bundle(tmp_path / "b")
    assert (b.size("train"), b.size("val"), b.size("test")) == (120, 30, 0)
    assert "no test split (--test-fraction 0)" in out
    # every row is used exactly once
    rows = np.concatenate([np.load(b.path / s / "index.npy") for s in ("train", "val")])
    assert sorted(rows.tolist()) == list(range(150))
    # the validation split still serves auto's choices; no test score is claimed
    code, out, err = run(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", "2", "-o", tmp_path / "r")
    assert code == 0, err
    assert "best epoch" in out and "test mAP" not in out
    from spmlkit.io import read_json

    res = read_json(tmp_path / "r" / "result.json")
    assert res["test_map"] is None and res["selection"] == "observed_map"


def test_val_fraction_zero_keeps_the_last_epoch_and_auto_says_why(tmp_path, capsys, own_csv):
    code, out, err = run(capsys, "prepare", own_csv, "--label-column", "label", "--test-fraction", "0",
                         "--val-fraction", "0", "-o", tmp_path / "b")
    assert code == 0, err
    assert (Bundle(tmp_path / "b").size("train")) == 150
    code, out, err = run(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", "2", "-o", tmp_path / "r")
    assert code == 0 and "final epoch 2 kept" in out
    code, out, err = run(capsys, "train", tmp_path / "b", "-m", "auto", "--epochs", "2", "-o", tmp_path / "r2")
    assert code == 2 and "--val-fraction > 0" in err


@pytest.mark.parametrize("option,value,words", [("--test-fraction", "1", "--test-fraction must be below 1"),
                                                ("--val-fraction", "0.001", "choose another --val-fraction")])
def test_hold_out_errors_name_the_option(tmp_path, capsys, own_csv, option, value, words):
    code, out, err = run(capsys, "prepare", own_csv, "--label-column", "label", option, value, "-o", tmp_path / "b")
    assert code == 2 and words in err and str(own_csv) in err
    assert len(err.strip().splitlines()) <= 2  # (the observed-labels note, then one error line)
    assert not (tmp_path / "b").exists()


# ------------------------------------------------------------ item 2: auto is the default
@pytest.fixture
def own_bundle(tmp_path, capsys, own_csv):
    assert main(["prepare", str(own_csv), "--label-column", "label", "-o", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    return tmp_path / "b"


def test_train_defaults_to_auto(tmp_path, capsys, own_bundle):
    from spmlkit.io import read_json

    code, out, err = run(capsys, "train", own_bundle, "--epochs", "2", "--param", "lrs=1e-2", "-o", tmp_path / "r")
    assert code == 0, err
    res = read_json(tmp_path / "r" / "result.json")
    from spmlkit.methods.recipe import DEFAULT_MEMBERS

    assert res["method"] == "auto" and [m["method"] for m in res["notes"]["members"]] == [
        n.partition(":")[0] for n in DEFAULT_MEMBERS.split(",")]
    # fine-tuning names one method: the default there is an, and the note says so
    from spmlkit.config import TrainConfig
    from spmlkit.practitioner.run_folder import default_method as _default_method

    name, why = _default_method(TrainConfig(setting="finetune"), Bundle(own_bundle))
    assert name == "an" and "fine-tuning trains 'an'" in why
    assert _default_method(TrainConfig(), Bundle(own_bundle)) == ("auto", None)


def test_train_help_and_estimator_say_auto():
    from spmlkit import SPMLClassifier
    from spmlkit.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command" or getattr(a, "choices", None))
    assert "default auto" in sub.choices["train"].format_help().replace("\n", " ").replace("  ", " ")
    assert SPMLClassifier().get_params()["method"] == "auto"


def test_default_falls_back_to_an_where_auto_does_not_apply(tmp_path, capsys, own_csv):
    from spmlkit.io import read_json

    assert main(["prepare", str(own_csv), "--label-column", "label", "--val-fraction", "0", "-o",
                 str(tmp_path / "b0")]) == 0
    capsys.readouterr()
    code, out, err = run(capsys, "train", tmp_path / "b0", "--epochs", "2", "-o", tmp_path / "r")
    assert code == 0, err
    assert read_json(tmp_path / "r" / "result.json")["method"] == "an"
    assert "no -m given and the bundle has no validation split: training 'an'" in err


def test_demo_takeaway_recommends_what_a_user_without_full_labels_gets(capsys):
    from spmlkit.experiments.demo import takeaway

    rows = [{"method": "bce", "regime": "full", "val_map": 48.0, "test_map": 43.0},
            {"method": "an", "regime": "single_positive", "val_map": 40.0, "test_map": 38.0},
            {"method": "pr", "regime": "single_positive", "val_map": 42.0, "test_map": 40.0},
            {"method": "auto", "regime": "single_positive", "val_map": 16.0, "test_map": 39.0}]
    lines = takeaway(rows)
    assert lines[0].startswith("Takeaway: with one positive label per example and no full labels, spml train's "
                               "default (auto") and "39.0 test mAP vs 38.0" in lines[0]
    assert "pr scores 40.0 here, but it was picked on full validation labels" in lines[2]
    assert lines[1].startswith("That is 4.0 mAP below full labels, closing 20% of the gap")
    assert main(["demo", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "  auto  " in out.replace("auto ", "auto  ") and "own" in out and "* chosen on observed labels" in out
    assert "spml train's default (auto" in out


# ------------------------------------------------------------ item 4: progress when not on a terminal
def test_line_progress_prints_elapsed_and_time_left(capsys, monkeypatch):
    from spmlkit import progress as P

    now = [100.0]
    monkeypatch.setattr("time.monotonic", lambda: now[0])
    bar = P.LineProgress(10, "bench", "step", every=5.0)
    now[0] += 2
    bar.set_postfix_str("group 1/2 yeast an bs 8")
    bar.update(2)  # the first line at once
    now[0] += 1
    bar.update(1)  # within 5 s: silent
    now[0] += 5
    bar.update(1)
    bar.advance_to(3)  # never back
    now[0] += 12
    bar.advance_to(10)  # the last always
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == ["bench: step 2/10 group 1/2 yeast an bs 8 (2 s elapsed, about 8 s left)",
                     "bench: step 4/10 group 1/2 yeast an bs 8 (8 s elapsed, about 18 s left)",
                     "bench: step 10/10 group 1/2 yeast an bs 8 (20 s elapsed)"]
    assert P.format_seconds(185) == "3 min 05 s"


def test_bench_into_a_log_prints_lines_per_group(tmp_path, capsys, monkeypatch, toy_bundle):
    monkeypatch.delenv("SPML_NO_PROGRESS", raising=False)
    monkeypatch.setattr("spmlkit.progress.EVERY", 0.0)
    assert main(["bench", "--datasets", str(toy_bundle.path), "--methods", "an", "iu", "--lrs", "0.01",
                 "--batch-sizes", "8", "--seeds", "1", "--epochs", "2", "--no-figures", "-o", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "group 1/2" in err and "group 2/2" in err and "elapsed" in err and "left)" in err


@pytest.mark.slow
def test_finetune_progress_inside_epochs_and_epochs_honoured(tmp_path, capsys, monkeypatch):
    from spmlkit.data import prepare_bundle
    from spmlkit.io import read_json
    from tests.helpers.image_fixtures import tiny_digits

    b = prepare_bundle(tiny_digits(tmp_path / "cache", n_train=40, n_val=8, n_test=8), tmp_path / "b",
                       log=lambda m: None)
    monkeypatch.delenv("SPML_NO_PROGRESS", raising=False)
    monkeypatch.setattr("spmlkit.progress.EVERY", 0.0)
    code, out, err = run(capsys, "train", b.path, "--setting", "finetune", "--backbone", "tiny-random",
                         "--image-size", "32", "--epochs", "1", "--batch-size", "8", "-o", tmp_path / "r")
    assert code == 0, err
    assert "no -m given: fine-tuning trains 'an'" in err
    steps = -(-b.size("train") // 8)
    assert f"an on {b.name}: step 1/{steps}" in err and f"step {steps}/{steps}" in err and "elapsed" in err
    assert read_json(tmp_path / "r" / "result.json")["epochs_run"] == 1  # --epochs 1 honoured (not 10)
    code, out, err = run(capsys, "train", b.path, "--setting", "finetune", "--backbone", "tiny-random",
                         "--image-size", "32", "--epochs", "1", "--finetune-epochs", "2", "-o", tmp_path / "r2")
    assert code == 0 and "--epochs 1 is not used: fine-tuning runs --finetune-epochs 2" in err


def test_resumed_run_progress_goes_on_from_its_epoch(tmp_path, capsys, monkeypatch, own_bundle):
    from spmlkit import progress as P

    monkeypatch.delenv("SPML_NO_PROGRESS", raising=False)
    monkeypatch.setattr(P, "EVERY", 0.0)
    real = P.advance_to

    def killed_in_epoch_3(bar, n):  # on_epoch runs before the epoch's checkpoint: last.pt stays at epoch 2
        if n == 3:
            raise KeyboardInterrupt
        real(bar, n)

    monkeypatch.setattr("spmlkit.training.callbacks.advance_to", killed_in_epoch_3)  # (the progress callback's)
    assert main(["train", str(own_bundle), "-m", "an", "--epochs", "5", "-o", str(tmp_path / "r")]) == 130
    monkeypatch.setattr("spmlkit.training.callbacks.advance_to", real)
    capsys.readouterr()
    assert main(["train", str(own_bundle), "-m", "an", "--epochs", "5", "-o", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert "after epoch 2" in err and "epoch 3/5" in err and "epoch 1/5" not in err, err


# ------------------------------------------------------------ item 5: experiment tracking
def _scalars(folder):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(folder))
    ea.Reload()
    return ea, {t: [(e.step, e.value) for e in ea.Scalars(t)] for t in ea.Tags()["scalars"]}


def test_train_logs_to_tensorboard_and_mlflow(tmp_path, capsys, monkeypatch, toy_bundle):
    pytest.importorskip("tensorboard")
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    store = (tmp_path / "mlruns").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    run_dir = tmp_path / "r"
    code, out, err = run(capsys, "train", toy_bundle.path, "-m", "auto", "--param", "lrs=1e-2,1e-3", "--epochs", "3",
                         "-o", run_dir, "--log-to", "tensorboard,mlflow")
    assert code == 0, err
    from spmlkit.io import read_json

    result = read_json(run_dir / "result.json")
    # TensorBoard: the event files read back
    ea, sc = _scalars(run_dir / "tensorboard")
    for member in ("em-apl", "gr", "wan", "l1r", "em-apl-mlp", "wan-mlp"):  # the defaults on tabular data
        assert [s for s, _ in sc[f"{member}/train_loss"]] == [1, 2, 3]
        assert len(sc[f"{member}/val_score"]) == 3
    assert sc["final/test_map"] == [(0, pytest.approx(result["test_map"], rel=1e-6))]
    assert "report.md/text_summary" in ea.Tags()["tensors"]
    # MLflow: the file store queried
    client = MlflowClient(store)
    exp = client.get_experiment_by_name("spmlkit")
    (r,) = client.search_runs([exp.experiment_id])
    assert r.info.run_name == f"r (auto on {toy_bundle.name})" and r.info.status == "FINISHED"
    assert r.data.params["config.method"] == "auto" and r.data.params["config.epochs"] == "3"
    assert r.data.params["method_params.lrs"] == "1e-2,1e-3"
    assert r.data.metrics["final.test_map"] == pytest.approx(result["test_map"], rel=1e-6)
    hist = client.get_metric_history(r.info.run_id, "wan/val_score")
    assert sorted(m.step for m in hist) == [1, 2, 3]
    arts = {a.path for a in client.list_artifacts(r.info.run_id)}
    assert {"report.md", "result.json", "config.json"} <= arts


def test_bench_logs_every_group_to_tensorboard(tmp_path, capsys, toy_bundle):
    pytest.importorskip("tensorboard")
    out = tmp_path / "o"
    assert main(["bench", "--datasets", str(toy_bundle.path), "--methods", "an", "iu", "--lrs", "0.01", "0.001",
                 "--batch-sizes", "8", "--seeds", "1", "--epochs", "2", "--no-figures", "-o", str(out),
                 "--log-to", "tensorboard"]) == 0
    groups = sorted(p.name for p in (out / "tensorboard").iterdir() if p.name != "_bench")
    assert len(groups) == 2 and groups[0].startswith(f"{toy_bundle.name}-an-bs8-")
    _, sc = _scalars(out / "tensorboard" / groups[0])
    assert [s for s, _ in sc["lr0.01-s0/val_score"]] == [1, 2] and "lr0.001-s0/test_map" in " ".join(sc)


def test_log_to_errors_and_nothing_imported_unless_asked(tmp_path, capsys, toy_bundle):
    import subprocess
    import sys

    code, out, err = run(capsys, "train", toy_bundle.path, "-m", "an", "--log-to", "wandb", "-o", tmp_path / "r")
    assert code == 2 and "unknown logger 'wandb'" in err and not (tmp_path / "r").exists()
    prog = ("import sys; from spmlkit.cli import main; "
            f"assert main(['train', {str(toy_bundle.path)!r}, '-m', 'an', '--epochs', '1', '-o', "
            f"{str(tmp_path / 'r2')!r}]) == 0; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mlflow', 'tensorboard') "
            "or m.startswith('torch.utils.tensorboard') or m == 'spmlkit.practitioner.loggers'))")
    p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip().splitlines()[-1] == "[]", p.stderr


# ------------------------------------------------------------ item 10: the small ones
def test_prepare_help_note_once_and_typo_warning(tmp_path, capsys, own_csv):
    from spmlkit.cli import build_parser

    sub = next(a for a in build_parser()._actions if getattr(a, "choices", None) and "prepare" in a.choices)
    assert "%%" not in sub.choices["prepare"].format_help() and "20%" in sub.choices["prepare"].format_help()
    code, out, err = run(capsys, "prepare", own_csv, "--label-column", "label", "-o", tmp_path / "b")
    assert code == 0 and (out + err).count("read as observed single positives") == 1
    assert "warning" not in err
    typo = tmp_path / "typo.csv"
    typo.write_text(own_csv.read_text() + "0.1,0.2,0.3,0.4,0.5,dgo\n")
    code, out, err = run(capsys, "prepare", typo, "--label-column", "label", "-o", tmp_path / "b2")
    assert code == 0 and "warning: " in err and "label 'dgo' appears in one row only" in err and "--label-names" in err
    code, out, err = run(capsys, "prepare", typo, "--label-column", "label", "--label-names", ",".join(LABELS),
                         "-o", tmp_path / "b3")
    assert code == 2 and "unknown label 'dgo'" in err


def test_methods_list_auto_first_and_no_issue_numbers(capsys):
    import re

    from spmlkit.cli import build_parser

    assert main(["methods", "-v"]) == 0
    out = capsys.readouterr().out
    names = [line.split()[0] for line in out.splitlines() if line and not line.startswith(" ")]
    assert names[:3] == ["auto", "bce", "an"]
    sub = next(a for a in build_parser()._actions if getattr(a, "choices", None) and "train" in a.choices)
    texts = [out] + [p.format_help() for p in sub.choices.values()]
    assert not [t for t in texts if re.search(r"\bissue \d", t, re.I)]


def test_default_run_folder_is_named_after_the_bundle_folder(tmp_path, capsys, own_csv, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["prepare", str(own_csv), "--label-column", "label", "-o", "songs"]) == 0
    assert main(["train", "songs", "-m", "an", "--epochs", "1"]) == 0
    assert (tmp_path / "runs" / "songs-an-lr0.001-s0" / "result.json").exists()


# ------------------------------------------------------------ item 9: GPU instructions for users
def test_readme_says_how_to_run_on_a_gpu():
    from spmlkit.cli import build_parser

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## On a GPU", 1)[1].split("\n## ", 1)[0]
    assert "download.pytorch.org/whl/cu" in section and "torch.cuda.is_available()" in section
    assert "Tested on CPU only so far" in section and "(docs/gpu.md)" in section
    sub = next(a for a in build_parser()._actions if getattr(a, "choices", None) and "train" in a.choices)
    train_help = sub.choices["train"].format_help()
    for option in ("--device", "--precision", "--compile", "--sync-bn"):
        assert f"`{option}" in section and option in train_help


# ------------------------------------------------------------ item 3: auto's output says what it did
def test_auto_output_shows_each_member(tmp_path, capsys, toy_bundle):
    from PIL import Image

    from spmlkit.io import read_json

    code, out, err = run(capsys, "train", toy_bundle.path, "--param", "lrs=1e-2,1e-3", "--epochs", "3",
                         "-o", tmp_path / "r")
    assert code == 0, err
    members = read_json(tmp_path / "r" / "result.json")["notes"]["members"]
    lines = out.splitlines()
    assert f"a weighted mean of {len(members)} member methods" in lines[0] and "best epoch" not in lines[0]
    for m in members:  # one line per member with the lr it kept and its weight
        assert any(line.split()[0] == m["label"] and f"lr {m['lr']:g}," in line and "weight" in line
                   for line in lines[1:len(members) + 1])
    assert "averaged model: validation observed_map" in out and "not comparable" in out
    report = (tmp_path / "r" / "report.md").read_text()
    assert "| lr | not used: each member keeps its own (see Members) |" in report
    assert "| backbone |" not in report and "| image_size |" not in report  # a features run
    for m in members:
        assert f"| {m['label']} | {m['lr']:g} | {m['best_epoch']} of {m['epochs_run']} |" in report
    with Image.open(tmp_path / "r" / "curves.png") as im:
        assert im.format == "PNG"
    assert "](curves.png)" in report


def test_estimator_verbose_names_the_member(capsys):
    from spmlkit import SPMLClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = np.array(LABELS)[rng.integers(0, 4, 60)]
    SPMLClassifier(epochs=1, method_params={"lrs": "1e-2", "longer": 1}, verbose=True).fit(X, y)
    err = capsys.readouterr().err.splitlines()
    assert [line.split("member ")[1].split(" (")[0] for line in err] == ["em-apl", "gr", "wan", "l1r", "em-apl-mlp",
                                                                         "wan-mlp"]


def test_features_into_a_log_prints_lines(tmp_path, capsys, monkeypatch):
    from tests.helpers.image_fixtures import tiny_digits_bundle

    b = tiny_digits_bundle(tmp_path)
    monkeypatch.delenv("SPML_NO_PROGRESS", raising=False)
    monkeypatch.setattr("spmlkit.progress.EVERY", 0.0)
    assert main(["features", str(b.path), "--backbone", "tiny-random", "--image-size", "32", "--batch-size", "8"]) == 0
    err = capsys.readouterr().err
    n = sum(b.size(s) for s in ("train", "val", "test"))
    assert f"features tiny-random-32: img 8/{n}" in err and f"img {n}/{n}" in err and "elapsed" in err


# ------------------------------------------------------------ item 8: claims drift
def test_table_only_rerender_keeps_the_runs_date_and_machine(tmp_path):
    import argparse
    import importlib.util
    import re
    import shutil

    repo = REPO
    spec = importlib.util.spec_from_file_location("lq", repo / "benchmarks" / "learning_quality.py")
    lq = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lq)
    src = repo / "benchmarks" / "results" / "learning-quality"
    out = tmp_path / "lq"
    shutil.copytree(src, out, ignore=shutil.ignore_patterns("runs.json", "runs.json.gz"))
    args = argparse.Namespace(out=out, data_root="../shared/data", jobs=2, seeds=3, epochs=25, table_only=True)
    text = lq.write_table(args).read_text(encoding="utf-8")
    dates = [re.search(r"^- date: (\S+ \S+) UTC", (p / "table.md").read_text(), re.M).group(1)
             for p in out.iterdir() if (p / "table.md").exists() and p.is_dir()]
    line = next(x for x in text.splitlines() if x.startswith("- date: "))
    assert line.startswith(f"- date: {max(dates)} UTC (the last part's runs); this table re-rendered ")
    assert "with `--table-only` (no training)" in line
    part_machine = re.search(r"^- machine: (.*)$", (out / "tabular-uniform" / "table.md").read_text(), re.M).group(1)
    assert f"- machine: {part_machine}" in text


def test_readme_wall_times_are_those_of_the_committed_tables():
    import re

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Results committed in this repository", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| [")]
    assert len(rows) >= 10
    checked = 0
    for row in rows:
        link = re.search(r"\]\((benchmarks/results/[^)]+)\)", row).group(1)
        cell = row.rstrip(" |").rsplit("|", 1)[1].strip()
        if cell.startswith("—"):
            continue
        when = re.match(r"[\d.]+ (?:h|min|s)(?: \d+ (?:min|s))?", cell).group(0)
        head = "\n".join((REPO / link).read_text(encoding="utf-8").splitlines()[:8])
        assert when in head, f"README says {cell!r} for {link}; its header: {head}"
        checked += 1
    assert checked >= 10


def test_practitioner_coco_table_is_the_committed_walkthrough():
    import re

    doc = (REPO / "docs" / "practitioner.md").read_text(encoding="utf-8")
    table = doc.split("| method | default: k̂ | labels / image |", 1)[1].split("\n\n", 1)[0]
    committed = (REPO / "benchmarks" / "results" / "practitioner_walkthrough.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([\w-]+)` \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| (\d+)% \| ([\d.]+) \|$", table,
                      re.M)
    assert len(rows) >= 2
    for m, k, size, f1, t_size, t_empty, t_f1 in rows:
        default = re.search(rf"^\| observations only \| {m} \| default \(the run's stored rule\) \| [\d.]+ \| "
                            rf"([\d.]+) \| ([\d.]+) \| \d+ \|$", committed, re.M)
        thr = re.search(rf"^\| observations only \| {m} \| threshold 0.5 \| [\d.]+ \| ([\d.]+) \| ([\d.]+) \| "
                        rf"(\d+) \|$", committed, re.M)
        assert default and thr, f"{m}: the committed walkthrough has no such run"
        assert (f1, size) == default.groups() and (t_f1, t_size, t_empty) == thr.groups()
        assert f"k={k}" in committed.split(f"observations only, {m}:", 1)[1].split("```", 2)[1]


def test_methods_show_aliases_as_aliases(capsys):
    import torch

    from spmlkit.cli import SAME_AT_DEFAULTS
    from spmlkit.methods import build_method

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(1, 16, 7, generator=g)
    Z = torch.zeros(1, 16, 7, dtype=torch.int8)
    Z[0, torch.arange(16), torch.randint(0, 7, (16,), generator=g)] = 1
    for alias, name in SAME_AT_DEFAULTS.items():
        a, b = build_method(alias), build_method(name)
        assert a.regime == b.regime and not a.components and not b.components
        assert torch.equal(a.loss(logits, Z, **a.loss_params).sum(-1), b.loss(logits, Z, **b.loss_params).sum(-1))
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    assert "(= wan at the default hyper-parameters)" in next(line for line in out.splitlines() if line.startswith("dw "))


# ------------------------------------------------------------ the README's own-data block runs as written
def readme_block(section: str) -> list[str]:
    import re

    text = (REPO / "README.md").read_text(encoding="utf-8")
    body = text.split(f"\n{section}\n", 1)[1]
    block = re.search(r"```bash\n(.*?)```", body, re.S).group(1)
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.startswith("spml ")]


@pytest.mark.slow
def test_readme_own_data_block_runs_as_written(tmp_path):
    import os
    import shlex
    import subprocess
    import sys

    pytest.importorskip("tensorboard")
    from tests.helpers.image_fixtures import tiny_digits

    ds = tiny_digits(tmp_path / "cache", n_train=40, n_val=1, n_test=6)
    rng = np.random.default_rng(0)
    with open(tmp_path / "photos.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["path", "label"])
        for p, y in zip(ds.splits["train"].paths, ds.splits["train"].Y):
            w.writerow([p, f"digit{rng.choice(np.flatnonzero(y))}"])
    with open(tmp_path / "new_photos.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["path"])
        w.writerows([p] for p in ds.splits["test"].paths)
    cmds = readme_block("### A CSV of image paths")  # (its subsection of "Your own single-positive data")
    assert any("--test-fraction 0" in c for c in cmds) and any("--log-to tensorboard" in c for c in cmds)
    env = {**os.environ, "SPML_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for cmd in cmds:
        p = subprocess.run([sys.executable, "-m", "spmlkit", *shlex.split(cmd)[1:]], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"{cmd}\n{p.stderr[-2000:]}"
    sets = list(csv.reader(open(tmp_path / "label_sets.csv")))
    assert sets[0] == ["id", "labels"] and len(sets) == 1 + 6
    assert list((tmp_path / "runs" / "mine-all" / "tensorboard").glob("events.out.tfevents.*"))


@pytest.mark.parametrize("doc,marker,result", [
    ("docs/practitioner.md", "| data (test k) | method | k of the default |", "default_label_rule.md"),
    ("docs/bench.md", "| variant | wall (s) | CPU (s) |", "bench_overhead.md")])
def test_doc_tables_are_the_committed_benchmark_output(doc, marker, result):
    text = (REPO / doc).read_text(encoding="utf-8")
    committed = (REPO / "benchmarks" / "results" / result).read_text(encoding="utf-8").splitlines()
    table = (marker + text.split(marker, 1)[1]).split("\n\n", 1)[0].splitlines()
    assert len(table) >= 4 and all(row in committed for row in table), f"{doc}: a row is not in {result}"


def test_default_rule_averages_quoted_are_the_committed_ones():
    import re

    text = " ".join((REPO / "docs" / "practitioner.md").read_text(encoding="utf-8").split())
    committed = (REPO / "benchmarks" / "results" / "default_label_rule.md").read_text(encoding="utf-8")
    m = re.search(r"default's example-F1 is ([\d.]+) on average against ([\d.]+) for threshold 0.5; worst row "
                  r"([\d.]+) against ([\d.]+); threshold 0.5 was warned about in (\d+) of (\d+) runs", committed)
    mean, thr, worst, worst_thr, warned, runs = m.groups()
    assert f"example-F1 is {mean} on average against {thr} for threshold 0.5" in text
    assert f"its worst row is {worst} against {worst_thr}" in text
    assert f"the fixed threshold did in {warned} of {runs} runs" in text


def test_default_rule_candidates_quoted_are_the_committed_ones():
    text = (REPO / "docs" / "practitioner.md").read_text(encoding="utf-8")
    committed = (REPO / "benchmarks" / "results" / "default_label_rule_candidates.md").read_text(encoding="utf-8")
    table = ("| candidate | mean example-F1 | worst example-F1 | worst row |"
             + text.split("| candidate | mean example-F1 | worst example-F1 | worst row |", 1)[1]).split("\n\n")[0]
    rows = table.splitlines()[2:]
    assert len(rows) == 5
    for row in rows:  # the committed summary row starts with the same cells
        assert any(line.startswith(row.rstrip(" |") + " |") for line in committed.splitlines()), row
    for dataset, method, default, top1 in (("yeast (4.25)", "an", "46.5", "22.7"), ("flags (3.34)", "an", "55.7", "20.0")):
        line = next(x for x in committed.splitlines() if x.startswith(f"| {dataset} | {method} |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[4].startswith(default) and cells[6].startswith(top1)
        assert f"{top1} against {default}" in text
