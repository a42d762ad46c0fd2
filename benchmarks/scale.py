"""Cost as the data grows (issue 32): spmlkit beside a bare PyTorch loop, N examples x L labels.

For each size, synthetic single positives (one Zipf-distributed label per training row,
D = 64 float32 features: the label's prototype plus noise; 5,000 fully labelled test
rows with 1-4 labels each) are written as one ``.npz`` with the labels in CSR form, then
every stage runs as its own process, timed, with its peak resident memory (``wait4``; the
data are written by a process of their own too, so that this driver stays small: Linux
carries the parent's resident high-water mark into a child's ``ru_maxrss`` at ``exec``,
which floored every later stage's peak at the driver's):

* ``prepare``  — ``spml prepare data.npz -o B`` (20 % of the training rows for validation);
* ``floor``    — the bare loop: the prepared arrays loaded (features whole, **one int64
  label per row**), z-scored, the same linear head, Adam, batch 256, the same AN loss
  with each batch's targets built on the fly, one epoch; then test mAP from the whole
  test logits.  Its memory is O(N·D + N + L·D + N_test·L) — the floor;
* ``train an`` — ``spml train B -m an --epochs 1 --batch-size 256 --threads 1``: the epoch,
  validation (observed-label mAP), test mAP, the saved model, label sets, report;
* ``evaluate`` — ``spml evaluate R B --split test``;
* ``predict``  — ``spml predict R B --split test --labels --threshold-rule top_k --k 5``;
* ``train auto`` — the default recipe, one epoch per member.

Ratios are spmlkit / floor, for the peak memory of ``train an`` and for the training
epoch's time (``train_seconds`` in ``metrics.jsonl`` against the floor's timed epoch).
Targets: peak memory <= 1.5x, epoch time <= 1.3x.  A size whose floor does not fit in
``--memory-cap-gb`` is skipped (its line says so); every stage runs under that cap
(``RLIMIT_AS`` is not usable with torch, so the cap is checked by polling the process's
resident memory and killing it above the cap).

    python benchmarks/scale.py                        # the table: benchmarks/results/scale.md
    python benchmarks/scale.py --sizes 100000x1000    # one size (the quick check)
    python benchmarks/scale.py floor BUNDLE           # the bare loop alone (what the table runs)
    python benchmarks/scale.py data PATH N L          # the synthetic set alone
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "scale.md"
D = 64
N_TEST = 5000
BATCH = 256
#: the sizes of the table: N in {1e5, 1e6, 1e7} x L in {1e2, 1e3, 1e4, 5e4} where one floor epoch is minutes
#: on two cores (1M x 50k and 10M x 10k are hours: not in the default list)
SIZES = ["100000x100", "100000x1000", "100000x10000", "100000x50000", "1000000x100", "1000000x1000",
         "1000000x10000", "10000000x100", "10000000x1000"]


# ------------------------------------------------------------------------ data
def zipf_labels(rng, n: int, L: int, a: float = 1.1) -> np.ndarray:
    p = 1.0 / np.arange(1, L + 1) ** a
    return rng.choice(L, size=n, p=p / p.sum()).astype(np.int64)


def make_data(path: Path, n: int, L: int, seed: int = 0, chunk: int = 1_000_000) -> None:
    """Write the synthetic set (module docstring) to ``path`` without ever holding N x L."""
    rng = np.random.default_rng(seed)
    proto = rng.normal(size=(L, D)).astype(np.float32)
    y = zipf_labels(rng, n, L)
    X = np.empty((n, D), dtype=np.float32)
    for s in range(0, n, chunk):
        b = slice(s, min(s + chunk, n))
        X[b] = proto[y[b]] + rng.normal(scale=1.5, size=(b.stop - b.start, D)).astype(np.float32)
    # test rows: 1-4 distinct Zipf labels each, features the mean of their prototypes
    k = rng.integers(1, 5, N_TEST)
    rows, cols = [], []
    for i in range(N_TEST):
        labs = np.unique(zipf_labels(rng, int(k[i]), L))
        rows.append(np.full(labs.size, i))
        cols.append(labs)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    Xt = np.zeros((N_TEST, D), dtype=np.float32)
    np.add.at(Xt, rows, proto[cols])
    Xt /= np.bincount(rows, minlength=N_TEST)[:, None]
    Xt += rng.normal(scale=1.5, size=Xt.shape).astype(np.float32)
    indptr = np.zeros(N_TEST + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=N_TEST), out=indptr[1:])
    np.savez(path, X_train=X, Z_train_indptr=np.arange(n + 1, dtype=np.int64), Z_train_indices=y.astype(np.int32),
             Z_train_shape=np.array([n, L]), X_test=Xt, Y_test_indptr=indptr, Y_test_indices=cols.astype(np.int32),
             Y_test_shape=np.array([N_TEST, L]))


# ------------------------------------------------------------------------ floor
def floor(bundle: str, *, epochs: int = 1, lr: float = 1e-3, seed: int = 0) -> dict:
    """The bare loop (module docstring); returns its timings."""
    import torch

    torch.set_num_threads(1)
    root = Path(bundle)
    meta = json.loads((root / "meta.json").read_text())
    L = len(meta["label_names"])
    X = torch.from_numpy(np.load(root / "train" / "X.npy"))
    label = torch.from_numpy(np.load(root / "observed" / "observed.indices.npy").astype(np.int64))  # one per row
    mean, std = X.mean(0), X.std(0, unbiased=False).clamp_min(1e-12)
    X.sub_(mean).div_(std)
    gen = torch.Generator().manual_seed(seed)
    model = torch.nn.Linear(X.shape[1], L)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    t0 = time.perf_counter()
    for _ in range(epochs):
        perm = torch.randperm(len(X), generator=gen)
        for s in range(0, len(X), BATCH):
            idx = perm[s:s + BATCH]
            logits = model(X[idx])
            target = torch.zeros_like(logits)
            target[torch.arange(len(idx)), label[idx]] = 1.0  # assume negative: the one positive, else 0
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
    epoch = (time.perf_counter() - t0) / epochs
    t1 = time.perf_counter()
    with torch.no_grad():
        Xt = (torch.from_numpy(np.load(root / "test" / "X.npy")) - mean) / std
        S = model(Xt)
        indptr = np.load(root / "test" / "Y.indptr.npy")
        cols = np.load(root / "test" / "Y.indices.npy")
        Y = torch.zeros(S.shape, dtype=torch.bool)
        Y[torch.from_numpy(np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))), torch.from_numpy(cols)] = True
        aps = []
        for c in torch.nonzero(Y.any(0)).flatten().tolist():  # AP per label with a positive
            order = torch.argsort(S[:, c], descending=True)
            hits = Y[order, c].double()
            prec = torch.cumsum(hits, 0) / torch.arange(1, len(hits) + 1)
            aps.append(float((prec * hits).sum() / hits.sum()))
    return {"epoch_seconds": epoch, "test_map": 100 * float(np.mean(aps)), "eval_seconds": time.perf_counter() - t1}


# ------------------------------------------------------------------------ runner
def _peak_rss_run(cmd: list[str], cap_bytes: int, env=None, cwd=None) -> dict:
    """Run ``cmd``; wall time, peak RSS (``wait4``), exit status, and whether it was killed
    at the memory cap (its resident set polled every 0.2 s)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    killed = {"cap": False}
    done = threading.Event()

    def watch():  # never reaps the child (wait4 below must get its resource usage)
        status = Path(f"/proc/{proc.pid}/status")
        while not done.is_set():
            try:
                rss = next(int(line.split()[1]) * 1024 for line in status.read_text().splitlines()
                           if line.startswith("VmRSS:"))
            except (OSError, StopIteration, ValueError):
                rss = 0
            if rss > cap_bytes:
                killed["cap"] = True
                proc.kill()
                return
            time.sleep(0.2)

    w = threading.Thread(target=watch, daemon=True)
    w.start()
    out = proc.stdout.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    done.set()
    proc.returncode = os.waitstatus_to_exitcode(status)
    w.join()
    return {"seconds": time.perf_counter() - t0, "peak_gib": usage.ru_maxrss * 1024 / 2 ** 30,
            "rc": proc.returncode, "killed": killed["cap"], "output": out}


def _spml(*args) -> list[str]:
    return [sys.executable, "-m", "spmlkit.cli", *map(str, args)]


def run_size(n: int, L: int, work: Path, cap_bytes: int, log=print, auto_max_entries: float = 5e9) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    data, bundle, run = work / "data.npz", work / "bundle", work / "run"
    row = {"N": n, "L": L}
    t0 = time.perf_counter()
    r = _peak_rss_run([sys.executable, __file__, "data", str(data), str(n), str(L)], cap_bytes)
    if r["rc"] != 0:
        raise SystemExit(f"scale.py: writing the {n:,} x {L:,} data failed:\n{r['output'][-2000:]}")
    row["data_seconds"] = time.perf_counter() - t0
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    stages = [("prepare", _spml("prepare", data, "-o", bundle, "--seed", "0")),
              ("floor", [sys.executable, __file__, "floor", str(bundle)]),
              ("train an", _spml("train", bundle, "-m", "an", "--epochs", 1, "--batch-size", BATCH, "--threads", 1,
                                 "-o", run)),
              ("floor again", [sys.executable, __file__, "floor", str(bundle)]),  # the load changes: twice
              ("evaluate", _spml("evaluate", run, bundle, "--split", "test")),
              ("predict", _spml("predict", run, bundle, "--split", "test", "--labels", "--threshold-rule", "top_k",
                                "--k", 5, "-o", work / "top5.csv")),
              ("train auto", _spml("train", bundle, "--epochs", 1, "--batch-size", BATCH, "--threads", 1,
                                   "-o", work / "run-auto"))]
    for name, cmd in stages:
        if name == "train auto" and n * L > auto_max_entries:
            row[name] = {"skipped": f"N x L above {auto_max_entries:.0e} (--auto-max-entries): hours on 2 cores"}
            continue
        log(f"  {n:,} x {L:,}: {name} ...")
        r = _peak_rss_run(cmd, cap_bytes, env=env)
        row[name] = {k: r[k] for k in ("seconds", "peak_gib", "rc", "killed")}
        row[name]["load"] = os.getloadavg()[0]  # the machine's 1-minute load as the stage ended
        if r["rc"] != 0:
            row[name]["error"] = (r["output"].strip().splitlines() or ["?"])[-1][:300]
            log(f"    failed: {row[name]['error']}")
            if name == "prepare":
                break
        if name.startswith("floor") and r["rc"] == 0:
            row.setdefault("floor_results", []).append(json.loads(r["output"].strip().splitlines()[-1]))
        if name == "train auto" and r["rc"] == 0:
            res = json.loads((work / "run-auto" / "result.json").read_text())
            row["auto_notes"] = {"members": [m["method"] for m in (res.get("notes") or {}).get("members", [])],
                                 "dropped": (res.get("notes") or {}).get("dropped", []), "test_map": res["test_map"]}
        if name == "train an" and r["rc"] == 0:
            rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
            row["an_epoch_seconds"] = rows[-1]["train_seconds"]
            row["an_result"] = {k: v for k, v in json.loads((run / "result.json").read_text()).items()
                                if k in ("test_map", "val_score", "best_epoch")}
        log(f"    {r['seconds']:.1f} s, peak {r['peak_gib']:.2f} GiB")
    return row


def render(rows: list[dict], argv: list[str], wall: float) -> str:
    from spmlkit.device import device_info

    import torch

    def cell(r, k):
        s = r.get(k)
        if s is None:
            return "—"
        if s.get("skipped"):
            return "not run"
        if s.get("killed"):
            return f"killed at cap ({s['peak_gib']:.1f} GiB)"
        if s["rc"] != 0:
            return f"failed: {s.get('error', '')[:60]}"
        return f"{s['seconds']:.1f} s, {s['peak_gib']:.2f} GiB"

    lines = ["# Cost as N and L grow: spmlkit beside a bare PyTorch loop", "",
             f"- command: `python {' '.join(shlex.quote(a) for a in ['benchmarks/scale.py', *argv])}`",
             f"- date: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
             f"- machine: {platform.platform()}; {os.cpu_count()} cores; python {platform.python_version()}; "
             f"torch {torch.__version__}; numpy {np.__version__}",
             f"- device: {device_info(torch.device('cpu'))}", f"- wall time: {wall / 60:.1f} min", "",
             "Synthetic single positives (module docstring of benchmarks/scale.py): one Zipf label per training row, "
             f"D = {D}, {N_TEST:,} fully labelled test rows; one epoch, batch {BATCH}, one thread.  Each cell: wall "
             "time of the whole command and its peak resident memory.  Ratios: spmlkit `train an` peak memory / floor "
             "peak memory, and its training epoch (`train_seconds`) / the floor's epoch (the floor runs before and "
             "after `train an`: the mean of its two epochs, the larger of its two peaks); targets <= 1.5 and <= 1.3.  "
             "`train auto` is run where N x L <= --auto-max-entries; the members it dropped and why are below.",
             "", "| N x L | prepare | floor (1 epoch + test mAP) | train an (epoch + val + test + model + label sets) "
             "| evaluate | predict top-5 | train auto | memory ratio | epoch ratio | test mAP an / floor |",
             "|---|---|---|---|---|---|---|---:|---:|---|"]
    for r in rows:
        fl, an = r.get("floor"), r.get("train an")
        floors = r.get("floor_results") or []
        mem = ep = "—"
        if fl and an and fl["rc"] == 0 and an["rc"] == 0 and floors:
            peak = max(r[k]["peak_gib"] for k in ("floor", "floor again") if r.get(k, {}).get("rc") == 0)
            mem = f"{an['peak_gib'] / peak:.2f}"
            ep = f"{r['an_epoch_seconds'] / np.mean([f['epoch_seconds'] for f in floors]):.2f}"
        maps = "—"
        if r.get("an_result") and floors:
            maps = f"{r['an_result']['test_map']:.2f} / {floors[0]['test_map']:.2f}"
        lines.append(f"| {r['N']:,} x {r['L']:,} | " + " | ".join(cell(r, k) for k in (
            "prepare", "floor", "train an", "evaluate", "predict", "train auto")) + f" | {mem} | {ep} | {maps} |")
    lines += ["", f"The machine's 1-minute load average as each stage ended ({os.cpu_count()} cores; other jobs ran "
              "beside this one, so the time ratios are of a shared machine — the floor runs before and after "
              "`train an` to bracket the load):", ""]
    for r in rows:
        loads = [f"{k} {r[k]['load']:.1f}" for k in ("prepare", "floor", "train an", "floor again", "evaluate",
                                                        "predict", "train auto") if "load" in (r.get(k) or {})]
        if loads:
            lines.append(f"- {r['N']:,} x {r['L']:,}: " + ", ".join(loads))
    lines += ["", "`train auto`: members kept and dropped (the reason `auto` gives), test mAP:", ""]
    for r in rows:
        notes = r.get("auto_notes")
        if notes:
            drops = "; ".join(f"{d['method']}: {d['reason']}" for d in notes["dropped"]) or "none"
            lines.append(f"- {r['N']:,} x {r['L']:,}: members {', '.join(notes['members'])}; dropped: {drops}; "
                         f"test mAP {notes['test_map']:.2f}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["floor"]:
        print(json.dumps(floor(argv[1])))
        return 0
    if argv[:1] == ["data"]:
        make_data(Path(argv[1]), int(argv[2]), int(argv[3]))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", nargs="+", default=SIZES, help="NxL sizes (default: the table's)")
    p.add_argument("--memory-cap-gb", type=float, default=20.0, help="kill a stage above this resident memory")
    p.add_argument("--work", default=None, help="scratch folder (default: a temporary folder, removed)")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--auto-max-entries", type=float, default=5e9, help="run train auto only up to this N x L")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    rows = []
    if a.work:
        Path(a.work).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=a.work) as tmp:
        for size in a.sizes:
            n, L = (int(v) for v in size.lower().split("x"))
            print(f"{n:,} x {L:,}", flush=True)
            row = run_size(n, L, Path(tmp) / size, int(a.memory_cap_gb * 2 ** 30),
                           log=lambda m: print(m, flush=True), auto_max_entries=a.auto_max_entries)
            rows.append(row)
            import shutil

            shutil.rmtree(Path(tmp) / size, ignore_errors=True)
            Path(a.out).write_text(render(rows, argv, time.perf_counter() - t0))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
