"""``spml diagnose`` (spmlkit.cli.diagnose): Zhou et al.'s diagnostics of a trained run."""
import json

import pytest

from spmlkit.cli import main


@pytest.mark.slow
def test_diagnose_command_on_toy_bundle(toy_bundle, tmp_path, capsys):
    runs = {}
    for m, extra in (("an", []), ("em", []), ("em-apl", ["--param", "warmup=2"])):
        runs[m] = tmp_path / m
        code = main(["train", str(toy_bundle.path), "-m", m, "--epochs", "5", "--lr", "0.01", "-o", str(runs[m]),
                     *extra])
        assert code == 0
    capsys.readouterr()
    out = tmp_path / "diag"
    code = main(["diagnose", str(toy_bundle.path), *map(str, runs.values()), "-o", str(out)])
    text, err = capsys.readouterr()
    assert code == 0, err
    for name in ("wasserstein-em.png", "ap-change-em.png", "wasserstein-em-apl.png", "ap-change-em-apl.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG", name
    summary = json.loads((out / "diagnostics.json").read_text())
    assert summary["reference"] == str(runs["an"])
    by = {r["method"]: r for r in summary["runs"]}
    assert len(by["em"]["wasserstein"]) == toy_bundle.n_labels and 0 <= by["em"]["share_above_diagonal"] <= 1
    prec = by["em-apl"]["apl_precision"]
    U = int((toy_bundle.observations("train") == 0).sum())
    assert [r["epoch"] for r in prec["by_epoch"]] == [2, 3, 4]
    assert 0 < prec["final"]["n_negative"] <= 0.9 * U and 0 <= prec["final"]["negative"] <= 100
    assert "APL negative pseudo-labels" in text and "em-apl" in text
    # without an AN run the reference must be named
    code = main(["diagnose", str(toy_bundle.path), str(runs["em"]), str(runs["em-apl"]), "-o", str(out)])
    assert code == 2 and "--reference" in capsys.readouterr().err
    code = main(["diagnose", str(toy_bundle.path), str(runs["em-apl"]), "--reference", str(runs["em"]),
                 "-o", str(tmp_path / "d2")])
    assert code == 0 and (tmp_path / "d2" / "wasserstein-em-apl.png").exists()
