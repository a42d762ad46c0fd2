"""Cost as the data grows: the whole ``spml train`` beside a validating bare PyTorch loop, N x L.

For each size, synthetic single positives (one Zipf-distributed label per training row,
D = 64 float32 features: the label's prototype plus noise; 5,000 fully labelled test
rows with 1-4 labels each) are written as one ``.npz`` with the labels in CSR form, then
every stage runs as its own process, timed, with its peak resident memory (``wait4``; the
data are written by a process of their own too, so that this driver stays small: Linux
carries the parent's resident high-water mark into a child's ``ru_maxrss`` at ``exec``,
which floored every later stage's peak at the driver's):

* ``prepare``  — ``spml prepare data.npz -o B`` (20 % of the training rows for validation);
* ``floor``    — the bare loop a careful user writes: the prepared arrays loaded (features
  whole, **one int64 label per row**), z-scored, the same linear head, Adam, batch 256,
  the same AN loss with each batch's targets built on the fly, ``--epochs`` epochs, each
  followed by observed-label mAP on the validation split computed **label block by label
  block** (one sort per label, :func:`floor_map`), the best epoch kept and its test mAP
  computed the same way.  It never holds N x L: its memory is O(N·D + N + L·D + a 64 MiB
  block) — the floor;
* ``train an`` — ``spml train B -m an --epochs E --batch-size 256 --threads 1``: the
  epochs, their validation, test mAP, the saved model, label sets, report;
* ``evaluate`` — ``spml evaluate R B --split test``;
* ``predict``  — ``spml predict R B --split test --labels --threshold-rule top_k --k 5``;
* ``train auto`` — the default ``spml train`` (the ``auto`` recipe), the same epochs.

Ratios are spmlkit / floor: the **whole command's** wall time (process start to exit),
the peak memory, and the training part of an epoch; and the whole default command over
the whole ``-m an``.  Targets: whole ``-m an`` <= 1.5x the floor, memory <= 1.5x, auto <=
5x ``-m an``.  Every stage runs under ``--memory-cap-gb`` (``RLIMIT_AS`` is not usable with
torch, so the cap is checked by polling the process's resident memory and killing it
above the cap).

    python benchmarks/scale.py                        # the table: benchmarks/results/scale.md
    python benchmarks/scale.py --sizes 100000x10000   # one size
    python benchmarks/scale.py floor BUNDLE [EPOCHS]  # the bare loop alone (what the table runs)
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
SIZES = ["100000x10000", "1000000x10000", "100000x50000", "10000000x1000", "2000000x20000"]


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
#: the floor scores this many float32 entries at a time (label blocks of the validation/test rows)
FLOOR_BLOCK_ENTRIES = 2 ** 24


def _csr(root: Path, split: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    return np.load(root / split / f"{name}.indptr.npy"), np.load(root / split / f"{name}.indices.npy")


def floor_map(model, X, indptr, cols, L: int) -> float:
    """Mean AP over the labels with a positive, label block by label block: the block's
    logits for every row (``N x B`` float32, ``B`` chosen so a block is 64 MiB), one sort
    per label, precision at each positive — what a careful user writes, and never
    ``N x L``.  AP as :func:`spmlkit.metrics.average_precision` (ties counted as ``>=``)."""
    import torch

    n = X.shape[0]
    rows = np.repeat(np.arange(n), np.diff(indptr))
    order = np.argsort(cols, kind="stable")
    cols_sorted, rows_sorted = cols[order].astype(np.int64), rows[order]
    starts = np.searchsorted(cols_sorted, np.arange(L + 1))
    B = max(1, FLOOR_BLOCK_ENTRIES // max(n, 1))
    W, b = model.weight, model.bias
    aps = []
    with torch.no_grad():
        for l0 in range(0, L, B):
            l1 = min(L, l0 + B)
            if starts[l1] == starts[l0]:
                continue
            S = X @ W[l0:l1].T + b[l0:l1]  # (n, B)
            for c in range(l0, l1):
                pr = rows_sorted[starts[c]:starts[c + 1]]
                if not pr.size:
                    continue
                col = S[:, c - l0]
                t = col[torch.from_numpy(pr)]
                srt = torch.sort(col).values  # ascending
                ge_all = n - torch.searchsorted(srt, t, right=False)  # rows scoring >= each positive
                ts = torch.sort(t).values
                ge_pos = pr.size - torch.searchsorted(ts, t, right=False)
                aps.append(float((ge_pos.double() / ge_all.double()).mean()))
    return 100.0 * float(np.mean(aps)) if aps else float("nan")


def floor(bundle: str, *, epochs: int = 1, lr: float = 1e-3, seed: int = 0) -> dict:
    """The bare loop (module docstring): ``epochs`` epochs, each validated by observed-label
    mAP on the validation split (:func:`floor_map`), the best epoch's weights kept and
    scored on the test split; returns its timings."""
    import torch

    torch.set_num_threads(1)
    t_start = time.perf_counter()
    root = Path(bundle)
    meta = json.loads((root / "meta.json").read_text())
    L = len(meta["label_names"])
    X = torch.from_numpy(np.load(root / "train" / "X.npy"))
    label = torch.from_numpy(np.load(root / "observed" / "observed.indices.npy").astype(np.int64))  # one per row
    mean, std = X.mean(0), X.std(0, unbiased=False).clamp_min(1e-12)
    X.sub_(mean).div_(std)
    Xv = (torch.from_numpy(np.load(root / "val" / "X.npy")) - mean) / std
    v_indptr, v_cols = _csr(root, "val", "Z")
    gen = torch.Generator().manual_seed(seed)
    model = torch.nn.Linear(X.shape[1], L)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    train_s, val_s, best, best_state = [], [], -1.0, None
    for _ in range(epochs):
        t0 = time.perf_counter()
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
        t1 = time.perf_counter()
        val = floor_map(model, Xv, v_indptr, v_cols, L)
        train_s.append(t1 - t0)
        val_s.append(time.perf_counter() - t1)
        if val > best:
            best, best_state = val, {k: v.clone() for k, v in model.state_dict().items()}
    model.load_state_dict(best_state)
    t1 = time.perf_counter()
    Xt = (torch.from_numpy(np.load(root / "test" / "X.npy")) - mean) / std
    t_indptr, t_cols = _csr(root, "test", "Y")
    test_map = floor_map(model, Xt, t_indptr, t_cols, L)
    return {"epoch_seconds": float(np.mean(train_s)), "val_seconds": float(np.mean(val_s)), "val_map": best,
            "test_map": test_map, "eval_seconds": time.perf_counter() - t1,
            "seconds": time.perf_counter() - t_start}


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
    return {"seconds": time.perf_counter() - t0, "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "peak_gib": usage.ru_maxrss * 1024 / 2 ** 30, "rc": proc.returncode, "killed": killed["cap"],
            "output": out}


def _spml(*args) -> list[str]:
    return [sys.executable, "-m", "spmlkit.cli", *map(str, args)]


def run_size(n: int, L: int, work: Path, cap_bytes: int, log=print, auto_max_entries: float = 5e9,
             epochs: int = 3, bracket: bool = True) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    data, bundle, run = work / "data.npz", work / "bundle", work / "run"
    row = {"N": n, "L": L, "epochs": epochs}
    t0 = time.perf_counter()
    r = _peak_rss_run([sys.executable, __file__, "data", str(data), str(n), str(L)], cap_bytes)
    if r["rc"] != 0:
        raise SystemExit(f"scale.py: writing the {n:,} x {L:,} data failed:\n{r['output'][-2000:]}")
    row["data_seconds"] = time.perf_counter() - t0
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    floor_cmd = [sys.executable, __file__, "floor", str(bundle), str(epochs)]
    common = ("--epochs", epochs, "--batch-size", BATCH, "--threads", 1)
    stages = [("prepare", _spml("prepare", data, "-o", bundle, "--seed", "0")),
              ("floor", floor_cmd),
              ("train an", _spml("train", bundle, "-m", "an", *common, "-o", run)),
              ("floor again", floor_cmd),  # the load changes: the floor brackets train an
              ("evaluate", _spml("evaluate", run, bundle, "--split", "test")),
              ("predict", _spml("predict", run, bundle, "--split", "test", "--labels", "--threshold-rule", "top_k",
                                "--k", 5, "-o", work / "top5.csv")),
              ("train auto", _spml("train", bundle, *common, "-o", work / "run-auto"))]
    for name, cmd in stages:
        if name == "train auto" and n * L > auto_max_entries:
            row[name] = {"skipped": f"N x L above {auto_max_entries:.0e} (--auto-max-entries)"}
            continue
        if name == "floor again" and not bracket:
            continue
        log(f"  {n:,} x {L:,}: {name} ...")
        r = _peak_rss_run(cmd, cap_bytes, env=env)
        row[name] = {k: r[k] for k in ("seconds", "cpu_seconds", "peak_gib", "rc", "killed")}
        row[name]["load"] = os.getloadavg()[0]  # the machine's 1-minute load as the stage ended
        if r["rc"] != 0:
            row[name]["error"] = (r["output"].strip().splitlines() or ["?"])[-1][:300]
            log(f"    failed: {row[name]['error']}")
            if name == "prepare":
                break
        if name.startswith("floor") and r["rc"] == 0:
            row.setdefault("floor_results", []).append(json.loads(r["output"].strip().splitlines()[-1]))
        if name.startswith("train") and r["rc"] == 0:
            rdir = run if name == "train an" else work / "run-auto"
            res = json.loads((rdir / "result.json").read_text())
            key = "an" if name == "train an" else "auto"
            mfile = rdir / "metrics.jsonl"
            if mfile.exists():
                rows = [json.loads(x) for x in mfile.read_text().splitlines() if x.strip()]
                rows = [x for x in rows if "train_seconds" in x]
                if rows:
                    row[f"{key}_epoch_seconds"] = float(np.mean([x["train_seconds"] for x in rows]))
                    row[f"{key}_val_seconds"] = float(np.mean([x["epoch_seconds"] - x["train_seconds"] for x in rows]))
            row[f"{key}_result"] = {k: v for k, v in res.items() if k in ("test_map", "val_score", "best_epoch")}
            if key == "auto":
                notes = res.get("notes") or {}
                row["auto_notes"] = {"members": [m["method"] for m in notes.get("members", [])],
                                     "dropped": notes.get("dropped", []), "test_map": res["test_map"],
                                     "combine": notes.get("combine") or notes.get("selection")}
        log(f"    {r['seconds']:.1f} s (CPU {r['cpu_seconds']:.1f} s), peak {r['peak_gib']:.2f} GiB")
    return row


def _ok(r: dict, k: str) -> bool:
    s = r.get(k) or {}
    return s.get("rc") == 0 and not s.get("skipped")


def ratios(r: dict) -> dict:
    """The table's ratios for one size: spmlkit / floor (the floor's mean over its runs)."""
    out = {}
    floors = r.get("floor_results") or []
    fk = [k for k in ("floor", "floor again") if _ok(r, k)]
    if not floors or not fk:
        return out
    f_wall = float(np.mean([r[k]["seconds"] for k in fk]))
    f_cpu = float(np.mean([r[k]["cpu_seconds"] for k in fk]))
    f_peak = max(r[k]["peak_gib"] for k in fk)
    f_epoch = float(np.mean([f["epoch_seconds"] for f in floors]))
    if _ok(r, "train an"):
        out["an_whole"] = r["train an"]["seconds"] / f_wall
        out["an_whole_cpu"] = r["train an"]["cpu_seconds"] / f_cpu
        out["an_memory"] = r["train an"]["peak_gib"] / f_peak
        if "an_epoch_seconds" in r:
            out["an_epoch"] = r["an_epoch_seconds"] / f_epoch
    if _ok(r, "train auto") and _ok(r, "train an"):
        out["auto_vs_an"] = r["train auto"]["seconds"] / r["train an"]["seconds"]
        out["auto_vs_an_cpu"] = r["train auto"]["cpu_seconds"] / r["train an"]["cpu_seconds"]
    return out


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

    def fmt(x, d=2):
        return "—" if x is None else f"{x:.{d}f}"

    epochs = sorted({r.get("epochs", 1) for r in rows})
    lines = ["# Cost as N and L grow: the whole `spml train` beside a validating bare PyTorch loop", "",
             f"- command: `python {' '.join(shlex.quote(a) for a in ['benchmarks/scale.py', *argv])}`",
             f"- date: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
             f"- machine: {platform.platform()}; {os.cpu_count()} cores; python {platform.python_version()}; "
             f"torch {torch.__version__}; numpy {np.__version__}",
             f"- device: {device_info(torch.device('cpu'))}", f"- wall time: {wall / 60:.1f} min", "",
             "Synthetic single positives (module docstring of benchmarks/scale.py): one Zipf label per training row, "
             f"D = {D}, {N_TEST:,} fully labelled test rows; {', '.join(map(str, epochs))} epochs, batch {BATCH}, one "
             "thread.  The floor is a bare loop that never holds N x L: one int64 label per row, per-batch targets, "
             "and after every epoch observed-label mAP on the validation split computed label block by label block "
             "(one sort per label), the best epoch scored on the test split.  Each cell: wall time of the whole "
             "command (process start to exit) and its peak resident memory.  Ratios: **whole** = the whole `spml "
             "train -m an` command / the whole floor process (target <= 1.5); memory = peak / floor peak (target "
             "<= 1.5); epoch = the training part of an epoch (`train_seconds`) / the floor's; auto / an = the whole "
             "default `spml train` / the whole `-m an` (target <= 5); (CPU): the same ratio of the processes' CPU "
             "time (user + system), which other jobs on a shared machine inflate far less than wall time.  The "
             "floor runs before and after `train an` where bracketed (the mean of its walls, the larger of its "
             "peaks).",
             "", "| N x L | prepare | floor | train an | evaluate | predict top-5 | train auto (default) "
             "| whole an / floor | (CPU) | memory | epoch | auto / an | (CPU) |",
             "|---|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        q = ratios(r)
        lines.append(f"| {r['N']:,} x {r['L']:,} | " + " | ".join(cell(r, k) for k in (
            "prepare", "floor", "train an", "evaluate", "predict", "train auto"))
            + f" | {fmt(q.get('an_whole'))} | {fmt(q.get('an_whole_cpu'))} | {fmt(q.get('an_memory'))}"
            f" | {fmt(q.get('an_epoch'))} | {fmt(q.get('auto_vs_an'))} | {fmt(q.get('auto_vs_an_cpu'))} |")
    lines += ["", "Validation per epoch (seconds; spmlkit: `epoch_seconds - train_seconds` of `metrics.jsonl`, "
              "floor: its timed validation) and the mAPs (validation: observed labels; test: full labels):", "",
              "| N x L | validation rows | floor val s | an val s | auto val s (per member epoch) | val mAP an / floor "
              "| test mAP an / floor / auto |", "|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        floors = r.get("floor_results") or []
        fv = fmt(float(np.mean([f["val_seconds"] for f in floors])), 1) if floors else "—"
        an, au = r.get("an_result") or {}, r.get("auto_result") or {}
        vm = f"{fmt(an.get('val_score'))} / {fmt(floors[0]['val_map']) if floors else '—'}"
        tm = (f"{fmt(an.get('test_map'))} / {fmt(floors[0]['test_map']) if floors else '—'} / "
              f"{fmt(au.get('test_map'))}")
        lines.append(f"| {r['N']:,} x {r['L']:,} | {int(r['N'] * 0.2):,} | {fv} | {fmt(r.get('an_val_seconds'), 1)} "
                     f"| {fmt(r.get('auto_val_seconds'), 1)} | {vm} | {tm} |")
    lines += ["", f"The machine's 1-minute load average as each stage ended ({os.cpu_count()} cores; other jobs ran "
              "beside this one where it is above 1):", ""]
    for r in rows:
        loads = [f"{k} {r[k]['load']:.1f}" for k in ("prepare", "floor", "train an", "floor again", "evaluate",
                                                        "predict", "train auto") if "load" in (r.get(k) or {})]
        if loads:
            lines.append(f"- {r['N']:,} x {r['L']:,}: " + ", ".join(loads))
    lines += ["", "`train auto`: members kept and dropped (the reason `auto` gives), how they were combined, "
              "test mAP:", ""]
    for r in rows:
        notes = r.get("auto_notes")
        if notes:
            drops = "; ".join(f"{d['method']}: {d['reason']}" for d in notes["dropped"]) or "none"
            lines.append(f"- {r['N']:,} x {r['L']:,}: members {', '.join(notes['members'])}; dropped: {drops}; "
                         f"combined: {notes.get('combine')}; test mAP {notes['test_map']:.2f}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["floor"]:
        print(json.dumps(floor(argv[1], epochs=int(argv[2]) if len(argv) > 2 else 1)))
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
    p.add_argument("--epochs", type=int, default=3, help="epochs of every training stage (validated each epoch)")
    p.add_argument("--no-bracket", action="store_true", help="run the floor once per size, not before and after")
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
                           log=lambda m: print(m, flush=True), auto_max_entries=a.auto_max_entries,
                           epochs=a.epochs, bracket=not a.no_bracket)
            rows.append(row)
            import shutil

            shutil.rmtree(Path(tmp) / size, ignore_errors=True)
            Path(a.out).write_text(render(rows, argv, time.perf_counter() - t0))
            Path(a.out).with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")  # (the measurements)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
