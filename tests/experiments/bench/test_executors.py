"""Bench grids beyond one process pool (issue 27): ``--shard K/N`` run as concurrent
processes, ``--table-only``, ``--executor ray`` on a real local Ray cluster (bit-for-bit
tables, a worker killed mid-group retried, a killed driver resumed), and the bad-input
cases (one line, exit 2, nothing written)."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from spmlkit.errors import ConfigError, SpmlError
from spmlkit.experiments import bench as B
from spmlkit.experiments.bench import executors as E
from spmlkit.experiments.tables import strip_run_block
from spmlkit.io import read_json

GRID = ["--methods", "an", "bce", "--lrs", "0.01", "0.001", "--batch-sizes", "4", "8", "--seeds", "2",
        "--epochs", "3", "--no-figures"]


def _env():
    src = str(Path(B.__file__).parents[3])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in [src, os.environ.get("PYTHONPATH", "")] if p),
            "SPML_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}


def _cli(bundle, out, *extra):
    return [sys.executable, "-m", "spmlkit.cli", "bench", "--datasets", str(bundle.path), *GRID, *extra,
            "-o", str(out)]


def _tables(out: Path) -> dict:
    """The tables outside their run block and command line (date, wall time, how it was invoked)."""
    return {f: "".join(ln for ln in strip_run_block((out / f).read_text()).splitlines(keepends=True)
                       if not ln.startswith("- command:")) for f in ("table.md", "recovery.md")}


def _stable_runs(out: Path) -> list:
    runs = read_json(out / "runs.json.gz")["runs"]
    return sorted(json.dumps({k: v for k, v in r.items() if k not in ("seconds", "group_seconds")}, sort_keys=True)
                  for r in runs)


def _spec(bundle, **kw):
    args = dict(methods=["an", "bce"], lrs=(1e-2, 1e-3), batch_sizes=(4, 8), seeds=(0, 1), epochs=3)
    return B.BenchSpec(datasets=[str(bundle.path)], **{**args, **kw})


@pytest.fixture
def sequential(toy_bundle, tmp_path):
    out = tmp_path / "seq"
    B.run_bench(_spec(toy_bundle), out, progress=False, figures=False, log=lambda m: None)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------- shards
def test_parse_shard_and_partition():
    assert E.parse_shard("1/1") == (1, 1) and E.parse_shard("3/4") == (3, 4)
    for bad in ("3/2", "0/2", "1/0", "2", "a/b", "1/2/3", "-1/2"):
        with pytest.raises(ConfigError, match="--shard"):
            E.parse_shard(bad)
    groups = list(range(11))
    parts = [E.shard_groups(groups, k, 3) for k in (1, 2, 3)]
    assert sorted(sum(parts, [])) == groups and parts[0] == [0, 3, 6, 9]  # every group in exactly one shard


@pytest.mark.slow
def test_two_concurrent_shards_then_assembly_equal_the_sequential_bench(toy_bundle, tmp_path, sequential):
    """Two shard processes started together on one folder train disjoint halves (no group
    twice); the final bench trains nothing and writes the sequential bench's tables."""
    out = tmp_path / "sh"
    procs = [subprocess.Popen(_cli(toy_bundle, out, "--shard", f"{k}/2"), env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for k in (1, 2)]
    res = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], res
    assert "trained 2 of its 2 group(s)" in res[0][0] and "trained 2 of its 2 group(s)" in res[1][0]
    assert not (out / "table.md").exists()  # shards write no table
    assert len(list((out / "groups").glob("*.json"))) == 4
    # the same shard again: everything finished, nothing trained
    again = subprocess.run(_cli(toy_bundle, out, "--shard", "2/2"), env=_env(), capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0 and "trained 0 of its 2 group(s)" in again.stdout
    from spmlkit.cli import main

    assert main(["bench", "--datasets", str(toy_bundle.path), *GRID, "--table-only", "-o", str(out)]) == 0
    assert _tables(out) == _tables(sequential)
    assert _stable_runs(out) == _stable_runs(sequential)


def test_table_only_writes_what_is_finished(toy_bundle, tmp_path, capsys):
    from spmlkit.cli import main

    out = tmp_path / "sh"
    argv = ["bench", "--datasets", str(toy_bundle.path), "--methods", "an", "bce", "--lrs", "0.01",
            "--batch-sizes", "8", "--seeds", "1", "--epochs", "2", "--no-figures", "-o", str(out)]
    assert main(argv + ["--shard", "1/2"]) == 0  # only 'an'
    assert "1 of 2 finished" in capsys.readouterr().out
    assert main(argv + ["--table-only"]) == 0
    captured = capsys.readouterr()
    assert "1 of 2 group(s) not finished" in captured.err
    table = (out / "table.md").read_text()
    assert "| an | 1 P. & 0 N. | **" in table and "| bce | All P. & All N. | – |" in table
    assert "1/2 groups finished" in table


def test_shard_lock_refuses_a_full_bench_and_a_shard_of_another_grid(toy_bundle, tmp_path, capsys):
    from spmlkit.cli import main
    from spmlkit.io import FolderLock

    out = tmp_path / "sh"
    argv = ["bench", "--datasets", str(toy_bundle.path), "--methods", "an", "--lrs", "0.01", "--batch-sizes", "8",
            "--seeds", "1", "--epochs", "2", "--no-figures", "-o", str(out)]
    assert main(argv + ["--shard", "1/2"]) == 0
    capsys.readouterr()
    listing = sorted((p.relative_to(out), p.stat().st_mtime_ns) for p in out.rglob("*"))
    # a shard whose configuration differs from the folder's, or with another N: one line, exit 2, nothing written
    for extra, words in ((["--epochs", "3", "--shard", "2/2"], "differs in epochs"),
                         (["--shard", "1/3"], "split into 2 shards")):
        assert main(argv + extra) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1 and "shard-plan.json" in err
        assert sorted((p.relative_to(out), p.stat().st_mtime_ns) for p in out.rglob("*")) == listing
    # a running full bench (exclusive folder lock) refuses shards, and shards refuse a full bench
    with FolderLock(out, what="bench folder"):
        with pytest.raises(ConfigError, match="in use by a full spml bench"):
            E.SharedFolderLock(out).acquire()
    shared = E.SharedFolderLock(out).acquire()
    other = E.SharedFolderLock(out).acquire()  # shards share it
    try:
        with pytest.raises(ConfigError, match="in use"):
            FolderLock(out, what="bench folder").acquire()
    finally:
        shared.release()
        other.release()


# --------------------------------------------------------------------- bad input
@pytest.mark.parametrize("extra,words", [
    (["--shard", "3/2"], "--shard 3/2: K must be between 1 and N"),
    (["--shard", "1/2", "--jobs", "2"], "--shard 1/2 with --jobs"),
    (["--shard", "1/2", "--executor", "ray"], "--shard 1/2 with --executor ray"),
    (["--address", "127.0.0.1:6379"], "--address is the Ray cluster of --executor ray"),
    (["--executor", "ray", "--address", "127.0.0.1:{port}"], "no Ray cluster reachable there"),
])
def test_bad_engine_options_are_one_line_exit_2_nothing_written(toy_bundle, tmp_path, capsys, extra, words):
    from spmlkit.cli import main

    if "--executor" in extra and "--address" in extra:
        pytest.importorskip("ray")
    extra = [e.replace("{port}", str(_free_port())) for e in extra]
    out = tmp_path / "bad"
    assert main(["bench", "--datasets", str(toy_bundle.path), "--methods", "an", "--epochs", "1", *extra,
                 "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err
    assert not out.exists()


def test_the_same_command_with_table_only_rerenders_a_jobs_bench(toy_bundle, tmp_path, capsys):
    """Issue 37: the advice "the same command with --table-only" works when that command had
    --jobs (it was refused: "takes neither --executor nor --jobs"); nothing is trained."""
    from spmlkit.cli import main

    out = tmp_path / "res"
    cmd = ["bench", "--datasets", str(toy_bundle.path), "--methods", "an", "--epochs", "1", "--lrs", "1e-2",
           "--batch-sizes", "8", "--seeds", "1", "--no-figures", "-o", str(out)]
    assert main(cmd) == 0
    before = read_json(out / "runs.json.gz")
    capsys.readouterr()
    assert main(cmd + ["--jobs", "2", "--table-only"]) == 0, capsys.readouterr().err
    assert read_json(out / "runs.json.gz")["runs"] == before["runs"]


def test_a_shard_of_an_unknown_dataset_leaves_no_folder(tmp_path, capsys):
    from spmlkit.cli import main

    out = tmp_path / "bad"
    assert main(["bench", "--datasets", "no-such-dataset", "--methods", "an", "--shard", "1/2", "-o", str(out)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not out.exists()


def test_executor_ray_without_the_extra(toy_bundle, tmp_path, capsys, monkeypatch):
    from spmlkit.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as without the extra
    out = tmp_path / "bad"
    assert main(["bench", "--datasets", str(toy_bundle.path), "--methods", "an", "--epochs", "1", "--executor", "ray",
                 "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "pip install 'spmlkit[ray]'" in err and err.count("\n") == 1
    assert not out.exists()


def test_ray_is_imported_only_when_asked_for():
    code = ("import sys, spmlkit.cli, spmlkit.experiments.bench.executors, spmlkit.experiments.bench; "
            "p = spmlkit.cli.build_parser(); p.parse_args(['bench', '--datasets', 'x', '--shard', '1/2', '-o', 'y']); "
            "assert 'ray' not in sys.modules, 'ray imported'")
    r = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_group_resources(toy_bundle):
    spec = B.validate_spec(_spec(toy_bundle))
    ds = [B.BenchDataset("toy", toy_bundle, B.bundle_fingerprint(toy_bundle))]
    g = B.plan_groups(spec, ds)[0]
    r = E.group_resources(spec, g, toy_bundle, threads=2)
    feats = sum((toy_bundle.path / s / "X.npy").stat().st_size for s in ("train", "val", "test")
                if (toy_bundle.path / s / "X.npy").exists())
    assert r["num_cpus"] == 2 and r["num_gpus"] == 0 and r["memory"] >= feats + (256 << 20)
    cuda = B.validate_spec(_spec(toy_bundle, config={"device": "cuda"}))
    assert E.group_resources(cuda, g, toy_bundle, threads=1)["num_gpus"] == 1


@pytest.mark.parametrize("options, words", [
    (dict(shard="1/2", jobs=2), "--shard 1/2 with --jobs: a shard is one process"),
    (dict(shard="1/2", executor="ray"), "--shard 1/2 with --executor ray"),
    (dict(shard="1/2", table_only=True), "--shard 1/2 with --table-only"),
    (dict(shard="3/2"), "--shard 3/2: K must be between 1 and N"),
    (dict(address="h:1"), "--address is the Ray cluster of --executor ray"),
    (dict(executor="ray", address="h:1", jobs=2), "--jobs with --executor ray sets the CPUs"),
    (dict(jobs=3, device="cuda"), "CUDA"),
])
def test_check_engine_options_refuses(options, words):
    from spmlkit.experiments.bench.executors import check_engine_options

    with pytest.raises(SpmlError) as exc:
        check_engine_options(**options)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_check_engine_options_accepts_and_make_executor_chooses():
    from spmlkit.experiments.bench.executors import (LocalPool, RayExecutor, Sequential, Shard, TableOnly,
                                                     check_engine_options, make_executor)

    for ok in (dict(), dict(shard="2/2"), dict(jobs=4, device="cpu"), dict(executor="ray", address="h:1"),
               dict(executor="ray", jobs=2), dict(table_only=True),
               # "the same command with --table-only" (issue 37): the engine options are accepted, unused
               dict(table_only=True, jobs=2), dict(table_only=True, executor="ray", address="h:1"),
               dict(table_only=True, jobs=3, device="cuda")):
        check_engine_options(**ok)
    assert isinstance(make_executor(), Sequential) and isinstance(make_executor(jobs=1), Sequential)
    pool = make_executor(jobs=3, threads=2, share_gpus=True)
    assert isinstance(pool, LocalPool) and (pool.jobs, pool.threads, pool.share_gpus) == (3, 2, True)
    shard = make_executor(shard="2/3")
    assert isinstance(shard, Shard) and (shard.k, shard.n) == (2, 3)
    assert isinstance(make_executor(table_only=True), TableOnly)
    assert isinstance(make_executor(table_only=True, jobs=2, executor="ray"), TableOnly)
    ray = make_executor(executor="ray", address="h:1", jobs=3, threads=2)
    assert isinstance(ray, RayExecutor) and (ray.address, ray.num_cpus, ray.threads) == ("h:1", 3, 2)
    assert ray.ray is None  # nothing imported before connect()
    with pytest.raises(ConfigError, match="unknown executor 'dask'"):
        make_executor(executor="dask")


# --------------------------------------------------------------------------- Ray
@pytest.fixture
def ray_cluster():
    """A real local Ray cluster (2 CPUs, no dashboard) for the test, shut down after it."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             object_store_memory=80 << 20)
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_executor_equals_the_local_bench_and_retries_a_killed_worker(toy_bundle, tmp_path, sequential,
                                                                         ray_cluster):
    """Every group a Ray task on a real local cluster: the tables equal the local run's
    bit for bit.  A worker process SIGKILLed mid-group (its checkpoint written) is
    re-executed by Ray and resumes from the checkpoint: the table is still the same."""
    out = tmp_path / "ray"
    B.run_bench(_spec(toy_bundle), out, executor=E.RayExecutor(threads=1), progress=False, figures=False,
                log=lambda m: None)
    assert _tables(out) == _tables(sequential)
    assert _stable_runs(out) == _stable_runs(sequential)
    recs = [json.loads(p.read_text()) for p in (out / "groups").glob("*.json")]
    assert len(recs) == 4 and {r["worker"]["executor"] for r in recs} == {"ray"}
    assert len({r["worker"]["pid"] for r in recs}) == 2  # two workers (2 CPUs, 1 per group)

    # one long group; a watcher kills its worker once the group has checkpointed an epoch
    long = dict(methods=["an"], lrs=(1e-2,), batch_sizes=(4,), seeds=(0,), epochs=60)
    local = tmp_path / "long-local"
    B.run_bench(_spec(toy_bundle, **long), local, progress=False, figures=False, log=lambda m: None)
    out = tmp_path / "long-ray"
    killed = []

    def watch():
        deadline = time.time() + 120
        while time.time() < deadline and not killed:
            for w in (out / "work").glob("*/worker.json") if (out / "work").exists() else []:
                if (w.parent / "last.pt").exists():
                    pid = json.loads(w.read_text())["pid"]
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
            time.sleep(0.005)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    B.run_bench(_spec(toy_bundle, **long), out, executor=E.RayExecutor(threads=1), progress=False, figures=False,
                log=lambda m: None)
    t.join(timeout=5)
    assert killed, "the group finished before its worker could be killed; make it longer"
    (rec,) = [json.loads(p.read_text()) for p in (out / "groups").glob("*.json")]
    assert rec["worker"]["pid"] != killed[0]  # finished by another worker process
    assert _tables(out) == _tables(local)
    assert _stable_runs(out) == _stable_runs(local)


@pytest.mark.slow
def test_ray_driver_killed_then_resumed(toy_bundle, tmp_path, sequential):
    """``spml bench --executor ray`` SIGKILLed after a group finished, then rerun: the
    finished groups are kept, the rest trained, the tables equal the sequential run's."""
    pytest.importorskip("ray")
    out = tmp_path / "ray"
    argv = _cli(toy_bundle, out, "--executor", "ray", "--jobs", "1", "--threads", "1")
    proc = subprocess.Popen(argv, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None:
        if (out / "groups").exists() and list((out / "groups").glob("*.json")):
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the bench finished before it could be killed"
    # the local cluster the driver started (its own processes, same session) can still finish
    # the group it is training after the driver dies: stop it too before counting what is done
    if _group_alive(proc.pid):
        os.killpg(proc.pid, signal.SIGKILL)
    time.sleep(1.0)
    n_done = len(list((out / "groups").glob("*.json")))
    assert 1 <= n_done < 4
    again = subprocess.run(argv, env=_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    m = re.search(r"(\d+) already finished, (\d+) to run", again.stderr)
    assert m is not None, again.stderr
    # what the killed run finished is kept (a Ray worker outside the driver's session may
    # still have finished its group after the count: then one more is kept, never fewer)
    assert int(m.group(1)) >= n_done and int(m.group(1)) + int(m.group(2)) == 4
    assert _tables(out) == _tables(sequential)
    assert _stable_runs(out) == _stable_runs(sequential)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except OSError:
        return False


class _Submitted(Exception):
    pass


class _FakeRay:
    """What RayExecutor.train asks of Ray before the first task runs: the cluster's
    resources, a remote function, its options.  Submitting a task ends the test."""

    def __init__(self, resources):
        self.resources = resources
        self.requests = []

    def cluster_resources(self):
        return dict(self.resources)

    def remote(self, fn):
        fake = self

        class Task:
            def options(self, **kw):
                fake.requests.append(kw)
                return self

            def remote(self, *args):
                raise _Submitted

        return Task()


@pytest.mark.parametrize("short", [None, "CPU", "GPU", "memory"])
def test_ray_precheck_accepts_an_exact_fit_and_refuses_one_unit_short(tmp_path, short):
    """The resource pre-check: a group whose request equals what the cluster has is
    submitted; one unit less of any resource is refused in one line naming it, before
    anything is written or submitted (a request above the cluster would wait forever)."""
    from types import SimpleNamespace

    spec = SimpleNamespace(config={"device": "cuda"})
    g = SimpleNamespace(n_members=2, n_train=100, dataset="toy", method="an", batch_size=8, hash="h")
    bundle = SimpleNamespace(path=tmp_path / "no-bundle", meta={"label_names": ["a", "b"]})
    need = E.group_resources(spec, g, bundle, threads=3)
    assert need == {"num_cpus": 3, "num_gpus": 1, "memory": 16 * 2 * 100 * 2 + (256 << 20)}
    have = {"CPU": 3.0, "GPU": 1.0, "memory": float(need["memory"])}
    if short:
        have[short] -= 1
    ray = _FakeRay(have)
    ex = E.RayExecutor(threads=3)
    ex.ray = ray
    runner = SimpleNamespace(spec=spec, out=tmp_path / "out", draw_bundle=lambda g, by_label: bundle)
    if short is None:
        with pytest.raises(_Submitted):
            ex.train(runner, [g], {"by_label": {}}, None)
        assert ray.requests and {k: ray.requests[0][k] for k in need} == need
        return
    name = {"CPU": "num_cpus", "GPU": "num_gpus", "memory": "memory"}[short]
    with pytest.raises(ConfigError) as e:
        ex.train(runner, [g], {"by_label": {}}, None)
    msg = str(e.value)
    assert f"group toy an bs 8 needs {name}={need[name]} but the Ray cluster has {have[short]:g} {short}" == msg
    assert "\n" not in msg and not ray.requests and not (tmp_path / "out").exists()


# ------------------------------------------------------------- one GPU per worker
def test_jobs_beyond_the_gpus_is_refused_before_anything_is_written(two_gpus, toy_bundle, tmp_path, capsys):
    from spmlkit.cli import main

    out = tmp_path / "bad"
    assert main(["bench", "--datasets", str(toy_bundle.path), "--methods", "an", "--epochs", "1", "--jobs", "3",
                 "--device", "cuda", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--jobs 3 on CUDA (--device cuda)" in err and err.count("\n") == 1
    assert not out.exists()


