"""docs/extending.md's worked example runs as written: registered, trained as a stacked
grid (resumed from a checkpoint), on the CPU under the meta-device trap, different from AN."""
import re
import subprocess
import sys
import textwrap
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def test_worked_example_trains(toy_bundle, tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 1
    example = blocks[0]
    assert len(example.strip().splitlines()) < 60
    script = example + textwrap.dedent(f"""
        import math, sys
        from spmlkit.config import TrainConfig
        from spmlkit.training.linear import train_linear
        from spmlkit.data import Bundle
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_device import device_trap

        b = Bundle({str(toy_bundle.path)!r})
        cfg = TrainConfig(method="an-prior", epochs=3, batch_size=16, device="cpu")
        with device_trap():
            train_linear(b, cfg.replace(epochs=1), lrs=[1e-2, 1e-3], seeds=[0, 1], run_dir={str(tmp_path / "run")!r})
            res = train_linear(b, cfg, lrs=[1e-2, 1e-3], seeds=[0, 1], run_dir={str(tmp_path / "run")!r})
        an = train_linear(b, cfg.replace(method="an"), lrs=[1e-2, 1e-3], seeds=[0, 1])
        assert all(math.isfinite(r.test_map) for r in res)
        assert any(abs(r.test_map - a.test_map) > 1e-6 for r, a in zip(res, an))
        print("ok", [round(r.test_map, 2) for r in res])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("ok")
