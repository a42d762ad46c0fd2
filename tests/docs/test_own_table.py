"""The walkthrough for one's own numeric table (README "A numeric table (no images)" and
docs/practitioner.md "A numeric table (no images)") runs as written on a tiny table of
each layout: a label column, a long table of (site, species) rows and a label-set
column, then train and predict by column name (the new table's columns in another
order)."""
from __future__ import annotations

import csv
import json
import re
import shlex

import numpy as np
import pytest

from spmlkit.cli import main
from spmlkit.cli.entry import build_parser
from tests.helpers import REPO

NAMES = ["oak", "pine", "fern", "moss"]
FILES = ("sites.csv", "records.csv", "sets.csv", "new_sites.csv")


def block(doc: str, heading: str = "A numeric table (no images)") -> list[str]:
    text = (REPO / doc).read_text(encoding="utf-8")
    body = text.split(f"# {heading}\n", 1)[1]
    lines = re.search(r"```bash\n(.*?)```", body, re.S).group(1).splitlines()
    return [line.split("  #", 1)[0].strip() for line in lines if line.startswith("spml ")]


def write_tables(folder, n=120, seed=0):
    """The files the walkthrough names, with the columns its comments describe."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + 12, 3)) * [5, 300, 400] + [12, 900, 600]
    z = (X - [12, 900, 600]) / [5, 300, 400]
    S = np.stack([z[:, 0] > 0, z[:, 1] > 0, z[:, 2] > 0.3, z[:, 0] + z[:, 1] < 0], 1)
    S[~S.any(1), 0] = True
    head = ["site", "temp", "rain", "alt", "species"]
    seen = [rng.choice(np.flatnonzero(s), size=min(int(s.sum()), 1 + int(rng.integers(0, 2))), replace=False)
            for s in S[:n]]
    with open(folder / "sites.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(head)
        w.writerows([f"s{i}", *np.round(X[i], 2), NAMES[o[0]]] for i, o in enumerate(seen))
    with open(folder / "records.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(head)
        w.writerows([f"s{i}", *np.round(X[i], 2), NAMES[j]] for i, o in enumerate(seen) for j in o)
    with open(folder / "sets.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(head)
        w.writerows([f"s{i}", *np.round(X[i], 2), ";".join(NAMES[j] for j in o)] for i, o in enumerate(seen))
    with open(folder / "new_sites.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["alt", "site", "rain", "temp"])  # another order than in training
        w.writerows([round(x[2], 2), f"n{i}", round(x[1], 2), round(x[0], 2)] for i, x in enumerate(X[n:]))


def test_both_documents_give_the_same_commands_and_they_parse(tmp_path):
    readme, guide = block("README.md"), block("docs/practitioner.md")
    assert readme == guide and len(readme) == 6
    assert [c.split()[1] for c in readme] == ["prepare", "prepare", "prepare", "train", "predict", "predict"]
    assert any("--label-set-column" in c for c in readme) and any("--labels" in c.split() for c in readme)
    files = {a for c in readme for a in shlex.split(c) if a.endswith(".csv") and not a.startswith(("label_", "prob"))}
    assert files == set(FILES)
    parser = build_parser()
    for c in readme:
        parser.parse_args(shlex.split(c)[1:])


@pytest.mark.slow
def test_the_python_version_runs_as_written(tmp_path, monkeypatch):
    """docs/practitioner.md's Python lines: the saved estimator and the generic loader give
    the same sets from the new table, its columns in another order."""
    pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    write_tables(tmp_path)
    text = (REPO / "docs" / "practitioner.md").read_text(encoding="utf-8").split("# A numeric table (no images)\n")[1]
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    lines = code.rstrip().splitlines()
    scope: dict = {}
    exec("\n".join(lines[:-2]), scope)  # noqa: S102 - the document's own lines
    a = eval(lines[-2].split("  #")[0], scope)  # noqa: S307
    b = eval(lines[-1].split("  #")[0], scope)  # noqa: S307
    assert a == b and len(a) == 12 and all(set(x) <= set(NAMES) for x in a)


@pytest.mark.slow
def test_the_walkthrough_runs_as_written(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_tables(tmp_path)
    for command in block("README.md"):
        assert main(shlex.split(command)[1:]) == 0, command
    out = capsys.readouterr().out
    assert "observed labels only" in out
    sites = [r for r in csv.reader(open(tmp_path / "label_sets.csv", newline=""))]
    assert sites[0] == ["id", "labels"] and [r[0] for r in sites[1:]] == [f"n{i}" for i in range(12)]
    assert all(r[1] and set(r[1].split(";")) <= set(NAMES) for r in sites[1:])
    proba = list(csv.reader(open(tmp_path / "probabilities.csv", newline="")))
    assert proba[0] == ["id", *sorted(NAMES)] and len(proba) == 13
    # by column name: the same table in the training order gives the same probabilities
    rows = list(csv.DictReader(open(tmp_path / "new_sites.csv", newline="")))
    with open(tmp_path / "ordered.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["site", "temp", "rain", "alt"])
        w.writerows([r["site"], r["temp"], r["rain"], r["alt"]] for r in rows)
    assert main(["predict", "runs/sites", "ordered.csv", "--id-column", "site", "-o", "p2.csv"]) == 0
    assert list(csv.reader(open(tmp_path / "p2.csv", newline=""))) == proba
    for name in ("sites", "records", "sets"):  # every layout: observations, never full labels
        meta = json.loads((tmp_path / "bundles" / name / "meta.json").read_text(encoding="utf-8"))
        assert meta["has_full_labels"] is False and sum(meta["sizes"].values()) == 120, name
