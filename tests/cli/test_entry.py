"""The ``spml`` command (spmlkit.cli): every command end to end on tiny data, unknown
names and missing files in one clear line, help for every option, one module per command."""
import csv

import numpy as np
import pytest

from tests.helpers.cli import run_cli as run


def test_prepare_train_evaluate_predict(tmp_path, capsys, toy_csv):
    b = tmp_path / "bundle"
    code, out, err = run(capsys, "prepare", toy_csv, "-o", b, "--labels-last", 3, "--full-labels", "--seed", 1)
    assert code == 0 and "train" in out and (b / "meta.json").exists()
    r = tmp_path / "run"
    code, out, err = run(capsys, "train", b, "-m", "an", "--epochs", 3, "--lr", "0.01", "-o", r)
    assert code == 0 and "test mAP" in out
    for f in ("config.json", "metrics.jsonl", "last.pt", "last.pt.sha256", "result.json", "model/model.json"):
        assert (r / f).exists(), f
    code, out, err = run(capsys, "evaluate", r, b, "--json")
    assert code == 0 and '"map"' in out
    pred = tmp_path / "p.csv"
    code, out, err = run(capsys, "predict", r, b, "-o", pred)
    assert code == 0
    rows = list(csv.reader(open(pred)))
    assert rows[0] == ["id", "a", "b", "c"] and len(rows) == 1 + 30
    np.save(tmp_path / "new.npy", np.zeros((2, 4), dtype=np.float32))
    code, out, err = run(capsys, "predict", r / "model", tmp_path / "new.npy", "-o", tmp_path / "q.csv")
    assert code == 0 and len(list(csv.reader(open(tmp_path / "q.csv")))) == 3


def test_unknown_names_and_missing_files(tmp_path, capsys, toy_csv):
    code, _, err = run(capsys, "prepare", "no_such_set", "-o", tmp_path / "b")
    assert code == 2 and "unknown dataset 'no_such_set'; expected one of:" in err
    code, _, err = run(capsys, "prepare", tmp_path / "missing.csv", "-o", tmp_path / "b")
    assert code == 2 and "missing.csv: file or folder not found" in err
    run(capsys, "prepare", toy_csv, "-o", tmp_path / "b", "--labels-last", 3, "--full-labels")
    code, _, err = run(capsys, "train", tmp_path / "b", "-m", "nope", "-o", tmp_path / "r")
    assert code == 2 and "unknown method 'nope'" in err
    code, _, err = run(capsys, "train", tmp_path / "b", "--param", "gamma", "-o", tmp_path / "r")
    assert code == 2 and "expected name=value" in err
    code, _, err = run(capsys, "train", tmp_path / "nobundle", "-o", tmp_path / "r")
    assert code == 2 and "not found" in err


def test_every_option_of_every_command_has_help():
    """Issue 2: every command has --help explaining every option."""
    import argparse

    from spmlkit.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = [(name, a.option_strings or a.dest) for name, sp in sub.choices.items() for a in sp._actions
               if not isinstance(a, argparse._HelpAction) and not a.help]
    assert len(sub.choices) >= 10 and not missing, missing


def test_one_module_per_command():
    """Every ``spml`` command is declared and run by a module of its own in ``spmlkit/cli/``
    (``add_parser`` + ``run``), and ``python -m spmlkit.cli`` is the same command."""
    import subprocess
    import sys

    from spmlkit import cli
    from spmlkit.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert list(sub.choices) == ["datasets", "methods", "clean", "prepare", "train", "features", "evaluate", "predict",
                                 "explain", "diagnose", "estimate-k", "demo", "bench", "figures", "analyze"]
    for name, parser in sub.choices.items():
        module = f"spmlkit.cli.{name.replace('-', '_')}"
        func = parser.get_default("func")
        if name == "analyze":  # (one sub-command per analysis, each with the same run)
            func = next(a for a in parser._actions if a.dest == "analysis").choices["zhou-landscape"].get_default(
                "func")
        assert func.__module__ == module and func.__name__ == "run", (name, func)
        assert sys.modules[module] in cli.COMMANDS
    p = subprocess.run([sys.executable, "-m", "spmlkit.cli", "--version"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and p.stdout.startswith("spmlkit "), p.stderr


# --------------------------------------------- issue 37: light commands import no torch
_LIGHT = [["methods"], ["methods", "wan"], ["methods", "-v"], ["datasets"], ["datasets", "--no-stats"], ["--help"],
          ["--version"], ["train", "--help"], ["bench", "--help"], ["demo", "--help"]]


def test_commands_that_need_no_tensor_do_not_import_torch():
    """`spml methods`, `spml datasets`, `--help` and `--version` in a fresh interpreter:
    torch (seconds to import, 15 s on a busy 2-core machine) is never imported."""
    import json
    import subprocess
    import sys

    code = ("import json, sys\nfrom spmlkit.cli import main\nseen = {}\nfor argv in json.loads(sys.argv[1]):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "    seen[' '.join(argv)] = 'torch' in sys.modules\nprint(json.dumps(seen), file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code, json.dumps(_LIGHT)], capture_output=True, text=True, timeout=300)
    seen = json.loads(r.stderr.strip().splitlines()[-1])
    assert seen == {" ".join(a): False for a in _LIGHT}, seen
    assert "wan" in r.stdout and "gamma" in r.stdout and "yeast" in r.stdout  # they did run


def test_the_command_list_says_what_train_does_by_default(capsys):
    """`spml --help` called train "train one method" while it trains auto (a recipe of
    several) unless -m names one."""
    from spmlkit.cli import main

    with pytest.raises(SystemExit):
        main(["--help"])
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("train "))
    assert "auto" in line and "one method" not in line
