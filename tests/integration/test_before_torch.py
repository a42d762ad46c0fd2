"""Every ``spml`` command checks its arguments and input files before importing torch
(seconds quiet, up to a minute on a loaded machine): a mistake is one line at once.  Each
bad-input command runs in a subprocess whose import system refuses torch; the command
must still answer with its one-line error and exit status 2.  A command that does import
torch prints a progress line first."""
from __future__ import annotations

import csv
import os
import subprocess
import sys

import numpy as np
import pytest

from spmlkit.cli import main
from tests.helpers import SRC

GUARD = """
import sys
class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("TORCH WAS IMPORTED")
        return None
sys.meta_path.insert(0, NoTorch())
from spmlkit.cli import main
sys.exit(main(sys.argv[1:]))
"""


def spml(*args, guard=True, env=None):
    code = GUARD if guard else "import sys\nfrom spmlkit.cli import main\nsys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": str(SRC), **(env or {})}
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    d = tmp_path_factory.mktemp("before-torch")
    rng = np.random.default_rng(0)
    with open(d / "own.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["f1", "f2", "label"])
        for i in range(60):
            w.writerow([float(rng.normal()), float(rng.normal()), "abc"[i % 3]])
    assert main(["prepare", str(d / "own.csv"), "--observed", "--label-column", "label", "-o", str(d / "b")]) == 0
    (d / "notabundle").mkdir()
    (d / "notamodel").mkdir()
    (d / "model").mkdir()  # a model.json is all the checks before torch read
    (d / "model" / "model.json").write_text('{"format": 1, "label_names": ["a", "b", "c"], "head": "linear", '
                                            '"hidden": 8, "n_features": 2}', encoding="utf-8")
    return d


CASES = {
    "a typo in a method name": lambda d: ["train", d / "b", "-m", "an-lss", "-o", d / "r1"],
    "a folder that is not a bundle": lambda d: ["train", d / "notabundle", "-o", d / "r2"],
    "a missing bundle": lambda d: ["train", d / "missing", "-m", "an"],
    "a wrong head": lambda d: ["train", d / "b", "--head", "mlpp"],
    "a wrong device name": lambda d: ["train", d / "b", "--device", "gpu"],
    "predict: a folder that is not a model": lambda d: ["predict", d / "notamodel", d / "own.csv", "-o",
                                                        d / "p.csv"],
    "predict: a missing input file": lambda d: ["predict", d / "b", d / "missing.csv", "-o", d / "p.csv"],
    "evaluate: a missing model": lambda d: ["evaluate", d / "missing", d / "b"],
    "explain: a folder that is not a model": lambda d: ["explain", d / "notamodel", "-o", d / "e"],
    "features: a missing bundle": lambda d: ["features", d / "missing"],
    "bench: a typo in a dataset name": lambda d: ["bench", "--datasets", "yeasst", "-o", d / "bench"],
    "bench: a typo in a method name": lambda d: ["bench", "--datasets", d / "b", "--methods", "an", "rolee", "-o",
                                                 d / "bench"],
    "bench: a typo in a row with hyper-parameters": lambda d: ["bench", "--datasets", d / "b", "--methods",
                                                               "rolle[storage=float16]", "-o", d / "bench"],
    "bench: a LinearInit row in the linear setting": lambda d: ["bench", "--datasets", d / "b", "--methods",
                                                                "role+li", "-o", d / "bench"],
    "bench: a fine-tuning method in the linear setting": lambda d: ["bench", "--datasets", d / "b", "--methods",
                                                                     "lac", "-o", d / "bench"],
    "bench: a typo in --param's method": lambda d: ["bench", "--datasets", d / "b", "--methods", "an", "--param",
                                                    "ann:ls_coef=0.1", "-o", d / "bench"],
    "analyze: a typo in a method name": lambda d: ["analyze", "cole-k-sensitivity", d / "b", "--methods", "epr",
                                                   "rolee", "-o", d / "an1"],
    "analyze: a typo in the method": lambda d: ["analyze", "li-gradcam", d / "b", "--method", "opmll", "-o",
                                                d / "an2"],
    "analyze: a missing source": lambda d: ["analyze", "zhou-positive-loss", d / "missing", "-o", d / "an3"],
    "analyze: zero epochs": lambda d: ["analyze", "cole-role-estimator", d / "b", "--epochs", "0", "-o", d / "an4"],
    "analyze: a wrong device name": lambda d: ["analyze", "xie-sensitivity", d / "b", "--device", "gpu", "-o",
                                               d / "an5"],
    "analyze: a folder of the user's as --out": lambda d: ["analyze", "zhou-landscape", d / "b", "-o", d / "b"],
    "figures: a missing results folder": lambda d: ["figures", d / "missing"],
    "diagnose: a run that is not a model": lambda d: ["diagnose", d / "b", d / "model", d / "notamodel", "-o",
                                                      d / "diag"],
    "demo: a typo in a method name": lambda d: ["demo", "--methods", "bce", "auot"],
    "demo: a wrong device name": lambda d: ["demo", "--device", "gpu"],
    "predict: a wrong id column": lambda d: ["predict", d / "model", d / "own.csv", "--id-column", "nope", "-o",
                                             d / "p.csv"],
}


@pytest.mark.parametrize("case", CASES)
def test_a_bad_input_is_one_line_without_torch(world, case):
    p = spml(*CASES[case](world))
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("spml: error: "), p.stderr[-2000:]
    assert "TORCH WAS IMPORTED" not in p.stderr
    assert not any((world / f"an{i}").exists() for i in range(1, 6)) and not (world / "bench").exists()


@pytest.mark.parametrize("argv", [["bench", "--datasets", "{b}", "--methods", "an", "role[storage=float16]",
                                   "--param", "an:ls_coef=0.1", "-o", "{d}/bench-ok"],
                                  ["analyze", "cole-k-sensitivity", "{b}", "--methods", "epr", "role", "--epochs",
                                   "1", "-o", "{d}/an-ok"]])
def test_good_bench_and_analyze_options_pass_the_checks_before_torch(world, argv):
    """The checks before torch refuse only mistakes: these commands get as far as torch."""
    p = spml(*[a.format(b=world / "b", d=world) for a in argv])
    assert "TORCH WAS IMPORTED" in p.stderr, p.stderr[-2000:]


def test_data_commands_run_whole_without_torch(world, tmp_path):
    """prepare, estimate-k, clean, datasets and methods never need torch: whole runs, and
    their mistakes, under the guard."""
    (tmp_path / "occ.csv").write_text("species,x,y\n" + "".join(f"Aus bus,{1 + i / 10},2\n" for i in range(20)))
    for argv in (["prepare", world / "own.csv", "--label-column", "label", "-o", tmp_path / "b"],
                 ["estimate-k", "yeast", "--trials", "50"], ["estimate-k", tmp_path / "b"],
                 ["clean", tmp_path / "occ.csv", "-o", tmp_path / "clean.csv"], ["datasets"], ["methods", "role"]):
        p = spml(*argv)
        assert "TORCH WAS IMPORTED" not in p.stderr and p.returncode in (0, 2), (argv, p.stderr[-2000:])
        assert p.returncode == 0 or argv[:2] == ["estimate-k", tmp_path / "b"], (argv, p.stderr[-2000:])
    assert (tmp_path / "clean.csv").is_file() and (tmp_path / "b" / "meta.json").is_file()


def test_predict_input_check_needs_a_model_first(world, tmp_path):
    """(the missing-input case above runs on a folder that is a bundle, not a model: the
    model is checked first, and the line says so)"""
    p = spml("predict", world / "b", world / "missing.csv", "-o", tmp_path / "p.csv")
    assert "not a saved spmlkit model" in p.stderr


def test_a_progress_line_comes_before_the_torch_import(world):
    """A command that needs torch says so first (the import takes seconds, a minute under
    load), unless progress lines are off."""
    p = spml("train", world / "b", "-m", "an", "--device", "cuda:7", guard=False, env={"SPML_NO_PROGRESS": "0"})
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and lines[0].startswith("spml train: loading torch"), p.stderr
    assert lines[-1].startswith("spml: error: ") and len(lines) == 2
    quiet = spml("train", world / "b", "-m", "an", "--device", "cuda:7", guard=False, env={"SPML_NO_PROGRESS": "1"})
    assert quiet.returncode == 2 and len(quiet.stderr.strip().splitlines()) == 1


def test_the_heads_known_without_torch_are_the_registered_ones():
    from spmlkit.config import BUILTIN_HEADS
    from spmlkit.models.heads import HEADS

    assert set(BUILTIN_HEADS) == set(HEADS)
