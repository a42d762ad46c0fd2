"""docs/extending.md's worked example runs as written: registered, trained as a stacked
grid (resumed from a checkpoint), on the CPU under the meta-device trap, different from AN."""
import re
import subprocess
import sys
import textwrap

from tests.helpers import REPO

DOC = REPO / "docs" / "extending.md"


def _blocks() -> list[str]:
    """The page's Python blocks: a method, a loss, a file format, a dataset, a backbone (in that order)."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 5
    return blocks


def _run(script: str) -> str:
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_worked_example_trains(toy_bundle, tmp_path):
    example = _blocks()[0]
    assert len(example.strip().splitlines()) < 60
    script = example + textwrap.dedent(f"""
        import math, sys
        from spmlkit.config import TrainConfig
        from spmlkit.training.linear import train_linear
        from spmlkit.data import Bundle
        sys.path.insert(0, {str(REPO)!r})
        from tests.helpers.device_trap import device_trap

        from spmlkit.errors import ConfigError
        from spmlkit.methods import build_method

        b = Bundle({str(toy_bundle.path)!r})
        cfg = TrainConfig(method="an-mean-weights", epochs=3, batch_size=16, device="cpu")
        members = dict(lrs=[1e-2, 1e-3], seeds=[0, 1])

        class Killed(Exception):
            pass

        def kill(info):  # killed in epoch 2, after its metrics, before its checkpoint
            if info["epoch"] == 2:
                raise Killed

        with device_trap():
            try:
                train_linear(b, cfg, run_dir={str(tmp_path / "run")!r}, on_epoch=kill, **members)
            except Killed:
                pass
            res = train_linear(b, cfg, run_dir={str(tmp_path / "run")!r}, **members)
        whole = train_linear(b, cfg, **members)
        an = train_linear(b, cfg.replace(method="an"), **members)
        assert all(math.isfinite(r.test_map) for r in res)
        assert [r.val_history for r in res] == [r.val_history for r in whole]  # the state came back on resume
        assert any(abs(r.test_map - a.test_map) > 1e-6 for r, a in zip(res, an))
        try:
            build_method("an-mean-weights", floor=2.0)
            raise AssertionError("floor=2 accepted")
        except ConfigError as e:
            assert "floor must be a finite number in [0, 1], got 2.0" in str(e), e
        print("ok", [round(r.test_map, 2) for r in res])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("ok")


def test_file_format_example_round_trips(tmp_path):
    """docs/extending.md's format: detected by its extension, prepared by ``spml prepare``,
    every example back unchanged; a bad line is one error naming the file and the line."""
    src, bad = tmp_path / "toy.svm", tmp_path / "bad.svm"
    script = _blocks()[2] + textwrap.dedent(f"""
        import numpy as np
        from spmlkit.cli import main
        from spmlkit.data import Bundle, detect_format, load_any

        rng = np.random.default_rng(1)
        X = (rng.random((60, 5)) < 0.5) * rng.integers(1, 9, (60, 5))
        Y = rng.random((60, 4)) < 0.4
        Y[np.arange(60), np.arange(60) % 4] = True
        Path({str(src)!r}).write_text("\\n".join(
            ",".join(str(j) for j in np.flatnonzero(y)) + " " + " ".join(f"{{f}}:{{v}}" for f, v in enumerate(x) if v)
            for x, y in zip(X, Y)) + "\\n")
        assert detect_format(Path({str(src)!r})) == "libsvm-ml"
        ds = load_any({str(src)!r}, n_features=5)
        assert (ds.splits["train"].X == X).all() and (ds.splits["train"].Y == Y).all()
        assert main(["prepare", {str(src)!r}, "-o", {str(tmp_path / "b")!r}]) == 0
        b = Bundle({str(tmp_path / "b")!r})
        got = sorted(tuple(x) + tuple(y) for s in ("train", "val", "test") if b.size(s)
                     for x, y in zip(np.asarray(b.features(s)), np.asarray(b.labels(s))))
        assert got == sorted(tuple(x) + tuple(y) for x, y in zip(X.astype(np.float32), Y))
        Path({str(bad)!r}).write_text("0,1 1:2\\n2 x:y\\n")
        import contextlib, io
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            assert main(["prepare", {str(bad)!r}, "-o", {str(tmp_path / "b2")!r}]) == 2
        assert "bad.svm" in err.getvalue() and "line 2" in err.getvalue() and err.getvalue().count("\\n") == 1, err.getvalue()
        print("ok")
    """)
    assert _run(script).splitlines()[-1] == "ok"


def test_dataset_example_prepares_and_trains_by_name(tmp_path):
    script = _blocks()[3] + textwrap.dedent(f"""
        from spmlkit.config import TrainConfig
        from spmlkit.data import load_dataset, prepare_bundle
        from spmlkit.training import train

        ds = load_dataset("blobs")
        assert ds.splits["train"].X.shape == (300, 10) and ds.n_labels == 6
        b = prepare_bundle(ds, {str(tmp_path / "blobs")!r}, log=lambda m: None)
        (r,) = train(b, TrainConfig(method="an", epochs=2, batch_size=32))
        assert 0 < r.test_map <= 100
        print("ok")
    """)
    assert _run(script).splitlines()[-1] == "ok"


def test_loss_example_is_an_at_its_limit_and_trains(toy_bundle):
    script = _blocks()[1] + textwrap.dedent(f"""
        from spmlkit.config import TrainConfig
        from spmlkit.data import Bundle
        from spmlkit.losses import get_loss
        from spmlkit.training import train

        g = torch.Generator().manual_seed(0)
        logits = torch.randn(2, 8, 5, generator=g) * 4
        observed = torch.randint(-1, 2, (2, 8, 5), generator=g)
        assert torch.allclose(get_loss("an-capped")(logits, observed, cap=1e9), get_loss("an")(logits, observed),
                              atol=1e-6)
        capped = get_loss("an-capped")(logits, observed, cap=0.5)
        assert capped[observed != 1].max() <= 0.5 and (capped < get_loss("an")(logits, observed)).any()
        b = Bundle({str(toy_bundle.path)!r})
        cfg = TrainConfig(method="an-capped", epochs=3, batch_size=16, params={{"cap": 0.3}})
        (r,) = train(b, cfg)
        (an,) = train(b, cfg.replace(method="an", params={{}}))
        assert 0 < r.test_map <= 100 and r.test_map != an.test_map
        print("ok")
    """)
    assert _run(script).splitlines()[-1] == "ok"


def test_backbone_example_builds_extracts_and_finetunes(tmp_path):
    """docs/extending.md's backbone: built by name with the declared feature size, its weights
    saved and read back (the same features), its features cached on an image bundle and a
    linear head trained on them, and fine-tuned end to end."""
    script = _blocks()[4] + textwrap.dedent(f"""
        import math, sys
        sys.path.insert(0, {str(REPO)!r})
        from pathlib import Path

        from spmlkit.config import TrainConfig
        from spmlkit.features import BACKBONES, build_backbone, extract_features
        from spmlkit.training import train
        from tests.helpers.image_fixtures import tiny_digits_bundle

        torch.manual_seed(0)
        net = build_backbone("patch-conv", image_size=64)
        x = torch.rand(2, 3, 64, 64)
        assert net.forward_map(x).shape == (2, 64, 2, 2) and net(x).shape == (2, BACKBONES["patch-conv"].out_dim)
        path = Path({str(tmp_path)!r}) / "patch-conv.pt"
        torch.save(net.state_dict(), path)
        again = build_backbone("patch-conv", weights=path, image_size=64)
        assert torch.equal(again(x), net(x))  # the weights came back from the file
        assert not torch.equal(build_backbone("patch-conv", image_size=64)(x), net(x))  # (a fresh one differs)

        b = tiny_digits_bundle(Path({str(tmp_path)!r}))
        name = extract_features(b, backbone="patch-conv", image_size=32, batch_size=8, progress=False,
                                log=lambda m: None)
        assert name == "patch-conv-32" and b.features("train", name).shape == (b.size("train"), 64)
        (r,) = train(b, TrainConfig(method="an", epochs=2, feature_set=name))
        assert math.isfinite(r.test_map)
        (f,) = train(b, TrainConfig(method="an", setting="finetune", backbone="patch-conv", image_size=32,
                                    batch_size=8, finetune_epochs=1))
        assert math.isfinite(f.test_map)
        print("ok")
    """)
    assert _run(script).splitlines()[-1] == "ok"
