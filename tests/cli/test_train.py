"""``spml train`` (spmlkit.cli.train): a damaged checkpoint is detected; the note on
``--head`` with ``auto`` on presence-only data names the heads its members train with."""

from types import SimpleNamespace

from spmlkit.cli.train import presence_head_note
from spmlkit.methods.base import build_method
from tests.helpers.cli import run_cli as run


def test_corrupted_checkpoint_is_detected(tmp_path, capsys, toy_csv):
    run(capsys, "prepare", toy_csv, "-o", tmp_path / "b", "--labels-last", 3, "--full-labels")
    run(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", 2, "-o", tmp_path / "r")
    ck = tmp_path / "r" / "last.pt"
    data = bytearray(ck.read_bytes())
    data[len(data) // 2] ^= 0xFF
    ck.write_bytes(bytes(data))
    (tmp_path / "r" / "result.json").unlink()  # an unfinished run (a finished one is not retrained)
    code, _, err = run(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", 2, "-o", tmp_path / "r")
    assert code == 2 and "checksum mismatch" in err


def test_val_rows_is_said_once_recorded_and_refused_when_malformed(tmp_path, capsys, toy_csv):
    import json

    run(capsys, "prepare", toy_csv, "-o", tmp_path / "b", "--labels-last", 3, "--full-labels")
    code, out, err = run(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", 2, "--val-rows", 5,
                         "-o", tmp_path / "r")
    assert code == 0 and err.count("fixed subsample of 5 of the") == 1
    result = json.loads((tmp_path / "r" / "result.json").read_text())
    assert "rows_scored" in json.dumps(result)
    assert json.loads((tmp_path / "r" / "config.json").read_text())["config"]["val_rows"] == 5
    code, out, err = run(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", 2, "-o", tmp_path / "r2")
    assert code == 0 and "subsample" not in err  # small data: every row, nothing said
    code, _, err = run(capsys, "train", tmp_path / "b", "--val-rows", "some", "-o", tmp_path / "r3")
    assert code == 2 and "--val-rows" in err and not (tmp_path / "r3").exists()


def _bundle(n_labels: int, background: int = 10):
    return SimpleNamespace(meta={"background_rows": background}, label_names=[f"s{i}" for i in range(n_labels)])


def test_the_note_names_the_heads_of_the_members_that_train():
    auto = build_method("auto")
    many = presence_head_note(auto, _bundle(3), "linear")
    assert many.startswith("auto trains its presence-only members with the mlp, tree heads") or \
        many.startswith("auto trains its presence-only members with the mlp head")  # (tree: with the extra)
    one = presence_head_note(auto, _bundle(1), "tree")
    heads = sorted({h for _, h in auto.members_for(True, n_labels=1)})
    assert heads == ["maxent", "maxent-x2", "maxent-x4"]
    assert "members with the maxent, maxent-x2, maxent-x4 heads (" in one and "not --head tree" in one
    assert presence_head_note(auto, _bundle(3), "mlp") is None  # the recipe's own head: nothing to say
    assert presence_head_note(auto, _bundle(3), None) is None
    assert presence_head_note(auto, _bundle(3, background=0), "linear") is None  # not presence-only data
    assert presence_head_note(build_method("an"), _bundle(3), "linear") is None  # a method, not the recipe
