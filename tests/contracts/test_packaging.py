"""What the package ships besides its modules (issue 37): the embedded VOC 2007 features
with their provenance, the method catalogue and the demo's measured costs are package
data, so both an editable install and a wheel (a non-editable install) find them."""
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.helpers import REPO

DATA = ["spmlkit/data/embedded/voc2007-lite0.npz", "spmlkit/data/embedded/voc2007-lite0.json",
        "spmlkit/catalogue.json", "spmlkit/experiments/demo_costs.json", "spmlkit/py.typed"]


def test_the_package_data_is_in_the_source_tree_and_declared():
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    for f in DATA:
        assert (REPO / "src" / f).is_file(), f
        rel = f.split("/", 1)[1]
        assert rel in text or f"{rel.rsplit('/', 1)[0]}/*.{rel.rsplit('.', 1)[1]}" in text, f


def test_the_embedded_features_are_small_and_match_their_provenance():
    import json

    from spmlkit.io import sha256_file

    npz = REPO / "src/spmlkit/data/embedded/voc2007-lite0.npz"
    meta = json.loads(npz.with_suffix(".json").read_text(encoding="utf-8"))
    assert npz.stat().st_size < 14e6 and meta["bytes"] == npz.stat().st_size and meta["sha256"] == sha256_file(npz)
    assert "spml features" in meta["features_command"] or "voc2007.py features" in meta["features_command"]
    assert meta["embed_command"].startswith("python benchmarks/voc2007.py embed")


@pytest.mark.slow
def test_a_wheel_holds_the_package_data(tmp_path):
    """A non-editable install is a wheel: build one from a copy of the sources (nothing
    written into the repository) and look inside."""
    src = tmp_path / "src-copy"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                        str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("spmlkit-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert set(DATA) <= names, set(DATA) - names
