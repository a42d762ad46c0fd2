"""``spml train`` (spmlkit.cli.train): a damaged checkpoint is detected."""
import csv

import numpy as np
import pytest

from spmlkit.cli import main


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def toy_csv(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 4))
    Y = (X[:, :3] + rng.normal(scale=0.3, size=(150, 3))) > 0
    Y[~Y.any(1), 0] = True
    p = tmp_path / "toy.csv"
    with open(p, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["f1", "f2", "f3", "f4", "a", "b", "c"])
        for x, y in zip(X, Y.astype(int)):
            w.writerow([*map(float, x), *y])
    return p


def test_corrupted_checkpoint_is_detected(tmp_path, capsys, toy_csv):
    run(capsys, "prepare", toy_csv, "-o", tmp_path / "b", "--labels-last", 3)
    run(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", 2, "-o", tmp_path / "r")
    ck = tmp_path / "r" / "last.pt"
    data = bytearray(ck.read_bytes())
    data[len(data) // 2] ^= 0xFF
    ck.write_bytes(bytes(data))
    (tmp_path / "r" / "result.json").unlink()  # an unfinished run (a finished one is not retrained)
    code, _, err = run(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", 2, "-o", tmp_path / "r")
    assert code == 2 and "checksum mismatch" in err
