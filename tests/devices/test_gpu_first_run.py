"""benchmarks/gpu/first_run.py and prepare.py (issue 38): the first GPU run, prepared as one
call of the lent GPU machine, known to work here before any GPU minute is spent.

The dry run (``first_run.py --dry-run``, marked slow: about a minute) runs every step on
the CPU with the GPU parts skipped and the GPU machine's package set simulated; the other
tests check its pieces on tiny inputs."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from tests.helpers import REPO

GPU = REPO / "benchmarks" / "gpu"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"gpu_{name}", GPU / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def fr():
    return _load("first_run")


@pytest.fixture(scope="module")
def prep():
    return _load("prepare")


@pytest.mark.slow
def test_the_dry_run_runs_every_step_and_skips_the_gpu_ones(tmp_path):
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, str(GPU / "first_run.py"), "--dry-run", "--out", str(out)], cwd=REPO,
                       capture_output=True, text=True, timeout=600, env=dict(os.environ, OUT=str(tmp_path / "no")))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert p.stdout.rstrip().splitlines()[-1].startswith("OK (dry run")
    names = sorted(f.name for f in out.iterdir())
    assert names == sorted(["first_run.log", "environment.txt", "pytest-gpu.log", "pytest-gpu.xml",
                            "pytest-gpu-summary.md", "gpu_speed.log", "gpu_speed.md"]) and len(names) <= 8
    assert not (tmp_path / "no").exists()  # --out wins over $OUT
    log = (out / "first_run.log").read_text(encoding="utf-8")
    assert "hidden modules: " in log and "river" in log.split("hidden modules: ")[1].splitlines()[0]
    assert "spmlkit installed from the carried tree" in log or "src/ is on PYTHONPATH" in log
    assert "nvidia-smi: skipped" in log and "speed (skipped: no GPU; CPU smoke run)" in log
    summary = (out / "pytest-gpu-summary.md").read_text(encoding="utf-8")
    assert "passed 0, failed 0, errors 0, skipped " in summary and "× needs a CUDA device" in summary
    n_skipped = int(summary.split("skipped ")[1].split()[0])
    assert n_skipped >= 100  # every gpu test of tests/devices/test_gpu.py was collected (and skipped)
    speed = (out / "gpu_speed.md").read_text(encoding="utf-8")
    assert speed.startswith("# GPU speed: SMOKE RUN on the CPU")
    for section in ("## Fine-tuning", "## Feature extraction", "## COCO-sized linear AN grid", "## mAP of",
                    "- command:", "- date:", "- wall time:", "- machine:"):
        assert section in speed, section
    # its wall time is measured by benchmarks/first_contact.py --steps gpu-dry-run (no timed assertion here)


def test_the_dry_run_hides_what_the_gpu_machine_lacks(tmp_path, fr):
    """The simulation's planted failure: an import of a package the machine lacks (river,
    installed here as spmlkit's dependency) fails in the dry run's processes; one the
    machine has (numpy) works."""
    if importlib.util.find_spec("river") is None:
        pytest.skip("river is not installed here: nothing to hide")
    (tmp_path / "sitecustomize.py").write_text(fr.SITECUSTOMIZE, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(tmp_path), SPML_GPU_MACHINE_PACKAGES=str(fr.MACHINE_PACKAGES))
    code = ("import numpy\ntry:\n    import river\nexcept ModuleNotFoundError as e:\n    print('hidden:', e)\n"
            "else:\n    print('imported')")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("hidden:") and "the GPU machine does not have it" in p.stdout, p.stdout


def test_junit_summary_counts_and_messages(tmp_path, fr):
    xml = tmp_path / "j.xml"
    xml.write_text("""<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="tests.devices.test_gpu" name="test_a"/>
<testcase classname="tests.devices.test_gpu" name="test_b"><failure message="assert 1 == 2&#10;more">tb
</failure></testcase>
<testcase classname="tests.devices.test_gpu" name="test_c"><error message="fixture broke">tb</error></testcase>
<testcase classname="tests.devices.test_gpu" name="test_d"><skipped message="needs a CUDA device"/></testcase>
<testcase classname="tests.devices.test_gpu" name="test_e"><skipped message="needs a CUDA device"/></testcase>
</testsuite></testsuites>""", encoding="utf-8")
    s = fr.junit_summary(xml)
    assert (s["passed"], s["failed"], s["errors"], s["skipped"]) == (1, 1, 1, 2)
    assert s["failures"] == [("failed", "tests.devices.test_gpu::test_b", "assert 1 == 2"),
                             ("errors", "tests.devices.test_gpu::test_c", "fixture broke")]
    assert s["skip_reasons"] == {"needs a CUDA device": 2}
    lines = fr.write_test_summary(tmp_path / "s.md", s, 1, 12.0, False, "python -m pytest -m gpu", "cuda:0 X")
    text = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert "passed 1, failed 1, errors 1, skipped 2" in text and "| failed | `tests.devices.test_gpu::test_b` |" in text
    assert lines[6].startswith("- pytest exit status 1")  # the summary printed last starts there
    assert "unreadable" in fr.junit_summary(tmp_path / "missing.xml")


def test_a_step_over_its_limit_is_stopped_with_its_children(tmp_path, fr):
    log = fr.Log(tmp_path / "first_run.log")
    rc, sec, timed_out = fr.run([sys.executable, "-c", "import subprocess, sys, time; "
                                 "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                                 "print('started', flush=True); time.sleep(60)"],
                                log=log, out_file=tmp_path / "step.log", limit=2, env=dict(os.environ))
    assert timed_out and rc != 0  # stopped at its limit (the log below says so), not after its 60 s sleep
    text = (tmp_path / "step.log").read_text()
    assert text.startswith("started\n") and text.count("KeyboardInterrupt") == 2  # the step and its child
    assert "time limit of 2 s reached" in (tmp_path / "first_run.log").read_text()
    rc, _, timed_out = fr.run([sys.executable, "-c", "raise SystemExit(3)"], log=log, out_file=None, limit=30,
                              env=dict(os.environ))
    assert (rc, timed_out) == (3, False)


def test_the_output_folder_is_never_one_of_the_users(tmp_path, fr, monkeypatch):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's")
    with pytest.raises(SystemExit, match="holds files this script did not write"):
        fr.output_folder(str(mine))
    assert (mine / "notes.txt").read_text() == "the user's"
    again = tmp_path / "again"
    again.mkdir()
    (again / "gpu_speed.md").write_text("a previous first run's")
    assert fr.output_folder(str(again)) == again and not (again / "gpu_speed.md").exists()
    monkeypatch.setenv("OUT", str(tmp_path / "device-out"))
    assert fr.output_folder(None) == tmp_path / "device-out"


def test_prepare_measures_what_travels_and_prints_the_call(prep, capsys):
    """What travels is measured file by file (the tree today: about 29 MiB with the run
    records compressed and the embedded VOC 2007 features)."""
    size = prep.carried_size([])
    assert size["total"] == sum(size["parts"].values()) and size["parts"]["tracked"] > 1 << 20
    assert size["total"] < prep.LIMIT
    assert prep.main(["--check-only"]) == 0
    out = capsys.readouterr().out
    assert '"command": "python3 benchmarks/gpu/first_run.py"' in out and '"timeout_s": 480' in out
    assert "river: not on the GPU machine, not carried" in out


def test_the_check_needs_no_wheel_today(prep):
    """Every package the check imports is on the GPU machine (its documented list), so
    nothing but the tree travels; a new import of a package the machine lacks shows here
    (then prepare.py downloads its wheel and the call carries .gpu-wheels)."""
    assert prep.wanted_wheels([], prep.machine_packages()) == []
    assert prep.wanted_wheels(["pytest-timeout==2.4.0"], prep.machine_packages()) == ["pytest-timeout==2.4.0"]
    assert "river" not in prep.machine_packages() and "scikit-learn" in prep.machine_packages()
