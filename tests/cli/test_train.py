"""``spml train`` (spmlkit.cli.train): a damaged checkpoint is detected."""


from tests.helpers.cli import run_cli as run


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
