"""``spml estimate-k`` (spmlkit.cli.estimate_k) on a built-in dataset and a bundle."""

import pytest

from spmlkit.cli import main


def test_cli_on_builtin_dataset_and_bundle(capsys, yeast_bundle):
    assert main(["estimate-k", "yeast", "--trials", "2000", "--m", "5", "25"]) == 0
    out = capsys.readouterr().out
    assert "k* = 4.228" in out  # Yeast's 1,500 official training examples
    rows = [line.split() for line in out.splitlines() if line.strip().startswith(("5 ", "25 "))]
    assert [r[0] for r in rows] == ["5", "25"]
    assert main(["estimate-k", str(yeast_bundle.path), "--trials", "1000", "--json"]) == 0
    import json

    d = json.loads(capsys.readouterr().out)
    assert [i["m"] for i in d["intervals"]] == [5, 10, 25]
    assert d["k_star"] == pytest.approx(float(yeast_bundle.labels("train").sum(1).mean()))
    assert main(["estimate-k", str(yeast_bundle.path), "--m", "100000", "--trials", "10"]) == 2
    assert "without replacement" in capsys.readouterr().err
