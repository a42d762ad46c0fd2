"""The tree head on the shared data: its defaults chosen by validation scores only, its
cost against an MLP member, and ``auto`` with its tree members beside the committed rows.

    python benchmarks/trees.py choose      # -> benchmarks/results/trees/choose.md
    python benchmarks/trees.py choose-bins # -> benchmarks/results/trees/choose-bins.md
    python benchmarks/trees.py timing      # -> benchmarks/results/trees/timing.json
    python benchmarks/trees.py table       # -> benchmarks/results/trees/table.md
    python benchmarks/trees.py bins        # -> benchmarks/results/trees/bins.md
    python benchmarks/trees.py optimism --regions NZ,SWI,CAN,AWT  # -> benchmarks/results/trees/optimism.md

``table`` trains nothing: it reads ``auto``'s new runs (with its tree members), made by the
commands it names, from ``benchmarks/results/auto/trees/`` and the committed rows from
``benchmarks/results/auto/`` (the same draws, splits and protocol).

**Procedure.**  Every candidate ``(max_depth, eta)`` of ``GRID`` trains the tree head
(:mod:`spmlkit.training.trees`; its other settings as committed: subsample and column
sample 0.8, up to 400 rounds, early stopping 30 rounds after the best) with seed 0:

* on disdat's NZ region (``--regions``; the other three shared regions were left out for CPU
  time on a shared 2-core machine, so they are unseen by the choice; records view, 10,000 background rows, ``spml
  prepare``'s split with seed 0, as ``benchmarks/disdat.py``) with the full-weighted loss
  (Zbinden et al. 2024), each round scored by the **target-group AUC on the held-out
  records** (no absence, no test label);
* on the Mulan sets of ``--sets`` (default yeast only, for CPU time: a first run over the
  eight shared sets was stopped after yeast, its depth-6 candidate taking 200 s under the
  machine's load; uniform single positives, prepare seed 0, as ``spml bench``) with WAN, each round scored by the **observed-label mAP on the validation split's
  single positives** (no full label).

Per set, a candidate's *regret* is the best candidate's validation score minus its own; the
default is the candidate with the lowest mean regret over the sets.  No test label
is read (the table holds validation scores only); the chosen pair is then written into
``spmlkit/training/trees.py`` by hand, and the final tables run once with it.
"""
from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))
OUT = REPO / "benchmarks" / "results" / "trees"
TABULAR = ["yeast", "scene", "emotions", "medical", "genbase", "birds", "flags", "foodtruck"]
REGIONS = ["NZ", "SWI", "CAN", "AWT"]
#: (max_depth, eta) candidates
GRID = [(3, 0.1), (4, 0.1), (6, 0.1), (4, 0.2)]
#: max_bin candidates (``choose --bins``), the chosen depth and eta fixed
BINS = [256, 64, 32]
#: ``choose --bins`` takes the smallest max_bin whose mean validation regret is within this
#: many points (×100) of the best candidate's (fewer bins: a cheaper round, bins.md)
BIN_TOLERANCE = 0.25


def _bundles(data_root: Path, tmp: Path, regions: list[str], sets: list[str], val_blocks: int | None = None,
             val_block_folds: int | None = None):
    """``(name, bundle, method, selection)`` for the disdat regions (random validation
    records, or whole spatial blocks with ``val_blocks``, or fold 1 of the balanced block
    folds of a G x G grid with ``val_block_folds``, as ``disdat.py``) and the Mulan sets."""
    import disdat

    from spmlkit.data import load_any, prepare_bundle
    from spmlkit.data.formats.presence_only import load_presence_only_folder

    for region in regions:
        ds = load_presence_only_folder(data_root / "disdat", region, view="records", val_blocks=val_blocks,
                                       categorical=disdat.KNOWN_CATEGORICAL[region])
        if val_block_folds:
            ds = disdat.block_fold_validation(ds, val_block_folds)
        yield region, prepare_bundle(ds, tmp / region, seed=0, log=lambda m: None), "full-weighted", "target_group_auc"
    for name in sets:
        ds = load_any(name, data_root=str(data_root))
        yield name, prepare_bundle(ds, tmp / name, seed=0, log=lambda m: None), "wan", "observed_map"


def _run_header(title: str, date: str, t0: float) -> list[str]:
    """A table's first lines: its title, then the command, date, machine, load average and
    wall time (in minutes, from ``t0``) of this invocation, then a blank line."""
    from spmlkit.experiments.machine import machine_info  # (lazy: the module's commands import spmlkit late)

    return [title, "", f"- command: `{' '.join(shlex.quote(a) for a in sys.argv)}`", f"- date: {date}",
            f"- machine: {machine_info(threads=1, setting='linear')}",
            f"- load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())} (2 shared cores)",
            f"- wall time: {(time.perf_counter() - t0) / 60:.1f} min", ""]


def choose(args) -> None:
    from spmlkit.config import TrainConfig
    from spmlkit.training import trees

    t0, date = time.perf_counter(), dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    scores: dict = {}
    secs: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, bundle, method, selection in _bundles(Path(args.data_root), Path(tmp), [r for r in args.regions.split(",") if r],
                                                          [s for s in args.sets.split(",") if s]):
            for depth, eta in GRID:
                trees.MAX_DEPTH, trees.ETA = depth, eta  # (module defaults, read at each run)
                t = time.perf_counter()
                (r,) = trees.train_trees(bundle, TrainConfig(method=method, head="tree", selection=selection,
                                                             threads=1), seeds=[0])
                scores[name, depth, eta] = r.val_score
                secs[name, depth, eta] = time.perf_counter() - t
                print(f"{name} depth {depth} eta {eta}: val {r.val_score:.2f} (round {r.best_epoch}, "
                      f"{secs[name, depth, eta]:.1f} s)", flush=True)
    names = list(dict.fromkeys(k[0] for k in scores))
    regret = {c: np.mean([max(scores[n, *d] for d in GRID) - scores[n, *c] for n in names]) for c in GRID}
    best = min(GRID, key=lambda c: regret[c])
    lines = [*_run_header("# The tree head's defaults, chosen on validation scores of the shared data", date, t0),
             "Validation criterion per set (disdat: target-group AUC ×100 on held-out records, full-weighted loss; "
             "Mulan: observed-label mAP ×100 on the validation single positives, WAN); seed 0; no test label read. "
             "Regret = the set's best candidate minus the candidate, mean over the sets.", "",
             "| max_depth, eta | " + " | ".join(names) + " | mean regret | s (all sets) |",
             "|---|" + "---:|" * (len(names) + 2)]
    for c in GRID:
        lines.append(f"| {c[0]}, {c[1]:g}{' **(chosen)**' if c == best else ''} | "
                     + " | ".join(f"{scores[n, *c]:.2f}" for n in names)
                     + f" | {regret[c]:.2f} | {sum(secs[n, *c] for n in names):.0f} |")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "choose.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def choose_bins(args) -> None:
    """``max_bin`` on the same validation-only criteria as :func:`choose` (depth and eta
    as chosen there): the smallest candidate of :data:`BINS` whose mean regret is within
    :data:`BIN_TOLERANCE` of the lowest, a rule fixed before the run."""
    from spmlkit.config import TrainConfig
    from spmlkit.training import trees

    t0, date = time.perf_counter(), dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    scores: dict = {}
    secs: dict = {}
    rounds: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, bundle, method, selection in _bundles(Path(args.data_root), Path(tmp), [r for r in args.regions.split(",") if r],
                                                          [s for s in args.sets.split(",") if s]):
            for max_bin in BINS:
                trees.MAX_BIN = max_bin  # (module default, read at each run)
                t = time.perf_counter()
                (r,) = trees.train_trees(bundle, TrainConfig(method=method, head="tree", selection=selection,
                                                             threads=1), seeds=[0])
                scores[name, max_bin], rounds[name, max_bin] = r.val_score, r.epochs_run
                secs[name, max_bin] = time.perf_counter() - t
                print(f"{name} max_bin {max_bin}: val {r.val_score:.2f} (round {r.best_epoch}, "
                      f"{secs[name, max_bin]:.1f} s)", flush=True)
    names = list(dict.fromkeys(k[0] for k in scores))
    regret = {b: float(np.mean([max(scores[n, c] for c in BINS) - scores[n, b] for n in names])) for b in BINS}
    low = min(regret.values())
    best = min(b for b in BINS if regret[b] <= low + BIN_TOLERANCE)
    lines = [*_run_header("# The tree head's max_bin, chosen on validation scores of the shared data", date, t0),
             f"max_depth {trees.MAX_DEPTH}, eta {trees.ETA:g} (from [choose.md](choose.md)); the criteria of choose.md "
             "(disdat: target-group AUC ×100 on held-out records, full-weighted loss; Mulan: observed-label mAP ×100 "
             "on the validation single positives, WAN); seed 0; no test label read. Regret = the set's best candidate "
             f"minus the candidate, mean over the sets. Rule (fixed before the run): the smallest max_bin whose mean "
             f"regret is within {BIN_TOLERANCE:g} of the lowest (fewer bins: cheaper rounds, [bins.md](bins.md)).", "",
             "| max_bin | " + " | ".join(names) + " | mean regret | rounds run (all sets) | s (all sets) |",
             "|---|" + "---:|" * (len(names) + 3)]
    for b in BINS:
        lines.append(f"| {b}{' **(chosen)**' if b == best else ''} | "
                     + " | ".join(f"{scores[n, b]:.2f}" for n in names)
                     + f" | {regret[b]:.2f} | {sum(rounds[n, b] for n in names)} | {sum(secs[n, b] for n in names):.0f} |")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "choose-bins.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def optimism(args) -> None:
    """Why the target-group AUC picks a tree where it may not help: validation data only.

    Per region, ``full-weighted`` with the MLP head (lrs 1e-3 and 1e-2, 30 epochs, batch 256,
    hidden 256: ``benchmarks/disdat.py``'s grid, seed 0) and with the tree head (seed 0) train
    as in ``benchmarks/disdat.py``; every epoch's (round's) validation scores are also computed
    on the two halves of ``K`` random splits of the validation rows.  Per split, choosing the
    epoch (and lr) on one half and scoring it on the other gives an *honest* validation
    score; choosing and scoring on the same half gives the *selected* one; their difference
    is the selection's optimism (the winner's curse of picking the best of many candidates
    on a noisy criterion), averaged over both directions and the splits, so the halves'
    own levels cancel.  A model whose optimism is larger can look better on the full
    validation split than its honest score says.  No test label is read."""
    from spmlkit.config import TrainConfig
    from spmlkit.metrics import presence_target_group_auc
    from spmlkit.training import prepare
    from spmlkit.training.run import train

    K = 5
    t0, date = time.perf_counter(), dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    real = prepare.make_evaluator
    trace: list = []

    def recording(selection, **kw):
        name, evaluate = real(selection, **kw)
        Z = np.asarray(kw["Z_val"])
        halves = []
        for k in range(K):
            perm = np.random.default_rng(k).permutation(len(Z))
            halves.append((np.sort(perm[: len(Z) // 2]), np.sort(perm[len(Z) // 2:])))

        def wrapped(logits):
            full = evaluate(logits)
            for g, lg in enumerate(logits.cpu().numpy()):
                trace.append((g, full[g], [[presence_target_group_auc(Z[h], lg[h]) for h in pair] for pair in halves]))
            return full
        return name, wrapped

    prepare.make_evaluator = recording
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, bundle, method, selection in _bundles(Path(args.data_root), Path(tmp),
                                                              [r for r in args.regions.split(",") if r], [],
                                                              val_blocks=args.val_blocks,
                                                              val_block_folds=args.val_block_folds):
                for head in ("mlp", "tree"):
                    trace.clear()
                    lrs = [1e-3] if head == "tree" else [1e-3, 1e-2]
                    cfg = TrainConfig(method=method, head=head, epochs=30, batch_size=256, hidden=256,
                                      selection=selection, patience=None, threads=1)
                    torch_seed()
                    train(bundle, cfg, lrs=lrs, seeds=[0] * len(lrs))
                    rows.append((name, head, *_split_half(trace, K)))
                    print(rows[-1], flush=True)
    finally:
        prepare.make_evaluator = real
    lines = [*_run_header("# Why the target-group AUC picks the tree: split-half validation (no test label)", date, t0),
             " ".join(optimism.__doc__.split("\n\n")[1].split()), "",
             "target-group AUC ×100 on validation records ("
             + (f"whole spatial blocks: --val-blocks {args.val_blocks}, as benchmarks/disdat.py" if args.val_blocks
                else f"fold 1 of 5 balanced folds of whole blocks: --val-block-folds {args.val_block_folds}, as "
                     "benchmarks/disdat.py" if args.val_block_folds else "a random 20% of the records")
             + "); 'candidates' = epochs × lrs (MLP) or rounds (tree).", "",
             "| region | head | candidates | full split: best | halves: selected | halves: honest | optimism |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for name, head, n, best, sel, honest in rows:
        lines.append(f"| {name} | {head} | {n} | {best:.2f} | {sel:.2f} | {honest:.2f} | {sel - honest:+.2f} |")
    OUT.mkdir(parents=True, exist_ok=True)
    name = "optimism-blocks.md" if args.val_blocks else "optimism-block-folds.md" if args.val_block_folds else "optimism.md"
    (OUT / name).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def torch_seed() -> None:
    import torch

    torch.manual_seed(0)  # (as benchmarks/disdat.py before each method)


def _split_half(trace: list, K: int) -> tuple:
    """``(candidates, best full-split score, selected, honest)`` from the recorded
    ``(member, full score, [[half A, half B] per split])`` of every epoch (round)."""
    full = np.array([t[1] for t in trace], dtype=float)
    halves = np.array([t[2] for t in trace], dtype=float)  # (candidates, K, 2)
    sel, honest = [], []
    for k in range(K):
        for a, b in ((0, 1), (1, 0)):
            r = int(np.nanargmax(halves[:, k, a]))
            sel.append(halves[r, k, a])
            honest.append(halves[r, k, b])
    return len(trace), float(np.nanmax(full)), float(np.mean(sel)), float(np.mean(honest))


NEW = REPO / "benchmarks" / "results" / "auto" / "trees"
OLD = REPO / "benchmarks" / "results" / "auto"


def timing(args) -> None:
    """``wan`` with the MLP head (the learning rates of ``auto``, 1e-2 and 1e-3, stacked as
    ``auto`` trains a member, 25 epochs) and ``wan`` with the tree head (one run), seed 0, in
    turn twice in one process with one thread, on emotions and yeast (prepare seed 0):
    the cost of an MLP member and of a tree member of ``auto``."""
    import json

    import torch

    from spmlkit.config import TrainConfig
    from spmlkit.data import load_any, prepare_bundle
    from spmlkit.training.run import train

    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets.split(","):
            b = prepare_bundle(load_any(name, data_root=args.data_root), Path(tmp) / name, seed=0, log=lambda m: None)
            for head in ("mlp", "tree", "mlp", "tree"):
                cfg = TrainConfig(method="wan", head=head, epochs=25, batch_size=8, seed=0, threads=1,
                                  selection="observed_map", patience=5)
                t = time.perf_counter()
                train(b, cfg, lrs=[1e-2, 1e-3], seeds=[0, 0])
                rows.append({"dataset": name, "head": head, "seconds": time.perf_counter() - t})
                print(rows[-1], flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "timing.json").write_text(json.dumps({"command": " ".join(shlex.quote(a) for a in sys.argv),
                                                 "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                                                 "load": os.getloadavg(), "rows": rows}, indent=1))


def _bench_runs(folder: Path) -> list:
    import gzip
    import json

    with gzip.open(folder / "runs.json.gz", "rt") as f:
        return json.load(f)


def _disdat_cells(folder: Path, regions: list[str], method: str = "auto", head: str = "mlp") -> dict | None:
    """Per region, the (method, head) runs chosen as disdat.py chooses; None when a region lacks them."""
    import disdat

    cells = {}
    for R in regions:
        data = disdat.read_region(folder, R)
        runs = [r for r in data["runs"] if r["method"] == method and r["head"] == head]
        if not runs:
            return None
        cells[R] = disdat.choose(runs)
    return cells


def _tree_weight(run: dict) -> float:
    """The tree member's weight in an ``auto`` run's combination (0 when it has none)."""
    import ast

    notes = run.get("notes")
    try:
        notes = ast.literal_eval(notes) if isinstance(notes, str) else notes  # (a literal: no code runs)
    except (ValueError, SyntaxError):
        return math.nan
    members = (notes or {}).get("members", []) if isinstance(notes, dict) else []
    return float(sum(m.get("weight", 0.0) or 0.0 for m in members if m.get("head") == "tree"))


def _mulan_section() -> list:
    """Mulan: ``auto`` with its tree members (NEW/tabular) beside the committed MLP-member
    ``auto`` (OLD/tabular) and the rows chosen with full labels (the learning-quality
    tables and the MLP-head part), as ``benchmarks/auto_table.py`` selects them."""
    import auto_table
    from learning_quality import cells, load_runs

    if not (NEW / "tabular" / "runs.json.gz").exists():
        return ["## Mulan sets", "", "(no runs yet)", ""]
    d = _bench_runs(NEW / "tabular")
    g = auto_table.bench_group(["tabular", "tabular-mlp"], argparse.Namespace(out=OLD, data_root=None))
    summ = auto_table.summarise(g)
    sets = [x for x in summ["datasets"] if summ["datasets"][x]["auto"] is not None]
    an = {x: summ["datasets"][x]["an"] for x in sets}
    old = cells(load_runs(OLD / "tabular"))
    rows = [("**auto with tree members (new)**", [summ["datasets"][x]["auto"] for x in sets]),
            ("auto, committed (MLP members)", [old[(x, "auto")].test_mean for x in sets])]
    ranked = auto_table.delta_rows({**summ, "datasets": {x: summ["datasets"][x] for x in sets}})
    delta = {m: v for m, _, v in ranked}
    best_fixed = next(m for m, _, _ in ranked if not m.startswith(("**", "_")))  # (sorted by mean)
    lines = ["## Mulan sets (uniform single positives, 3 draws; test mAP − AN)", "",
             f"- new runs: `{d['command']}`; AN and every row chosen with full labels from the runs "
             "`benchmarks/auto_table.py` reads (learning-quality tables, the MLP-head part; same draws)", "",
             "| row | " + " | ".join(sets) + " | mean |", "|---|" + "---:|" * (len(sets) + 1)]
    for label, vals in rows:
        v = [x - an[s_] for x, s_ in zip(vals, sets)]
        lines.append(f"| {label} | " + " | ".join(f"{x:+.1f}" for x in v) + f" | {np.mean(v):+.2f} |")
    names = [best_fixed, *[n for n in ("wan:mlp", "em-apl:mlp", "gr:mlp") if n != best_fixed],
             "_per-set choice by full-label validation mAP_"]
    for name in names:
        if name in delta:
            label = f"{name} (best single row chosen with full labels)" if name == best_fixed else name
            lines.append(f"| {label} | " + " | ".join(f"{x:+.1f}" for x in delta[name])
                         + f" | {np.mean(delta[name]):+.2f} |")
    tree_dir = NEW / "tabular-tree"
    if (tree_dir / "runs.json.gz").exists():
        t = _bench_runs(tree_dir)
        tc = cells(t["runs"])
        for m in dict.fromkeys(r["method"] for r in t["runs"]):
            if all(tc.get((x, m)) is not None for x in sets):
                v = [tc[(x, m)].test_mean - an[x] for x in sets]
                lines.append(f"| {m}:tree (full-label choice of round) | " + " | ".join(f"{x:+.1f}" for x in v)
                             + f" | {np.mean(v):+.2f} |")
    w = {x: np.mean([_tree_weight(r) for r in d["runs"] if r["method"] == "auto" and r["dataset"] == x])
         for x in sets}
    lines.append("| _(the tree member's weight in auto, mean over draws and lrs)_ | "
                 + " | ".join(f"{w[x]:.2f}" for x in sets) + f" | {np.mean(list(w.values())):.2f} |")
    if (tree_dir / "runs.json.gz").exists():
        lines += ["", f"- tree rows: `{t['command']}`"]
    return lines + [""]


def table(args) -> None:
    from spmlkit.experiments.machine import machine_info

    lines = ["# `auto` with its tree members, beside the committed rows", "",
             "- command: `python benchmarks/trees.py table` (trains nothing; the runs' own commands below)",
             f"- date: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
             f"- machine: {machine_info(threads=1, setting='linear')}",
             f"- load average now: {', '.join(f'{x:.2f}' for x in os.getloadavg())} (2 cores shared with 8 other "
             "agents' jobs: wall times are upper bounds)",
             "- `auto` (new) = the committed `auto` plus `wan:tree` (tabular) / `full-weighted:tree` (presence-only), "
             "tree defaults from [choose.md](choose.md) and [choose-bins.md](choose-bins.md) (max_bin 32); every "
             "choice on observed labels only", ""]
    # disdat
    lines += ["## disdat (4 regions, 142 species; target-group AUC chooses, no test label)", ""]
    import disdat
    done = [R for R in REGIONS if disdat.region_record(NEW / "disdat", R).exists()]
    new, old = _disdat_cells(NEW / "disdat", done), _disdat_cells(OLD / "disdat", done)
    cmds = [c["command"] for R in done for c in disdat.read_region(NEW / "disdat", R).get("commands", [])]
    n_species = sum(len(cells["per_label"]) for cells in old.values())
    lines += [f"- new runs: `{cmds[0] if cmds else '?'}` (the regions run: {', '.join(done)}"
              + ("" if len(done) == len(REGIONS) else f"; not run in the time: "
                 f"{', '.join(R for R in REGIONS if R not in done)}") + ")", "",
              "| row | " + " | ".join(done) + f" | all {n_species} | s/run (wall) |", "|---|" + "---:|" * (len(done) + 2)]
    alone = _disdat_cells(NEW / "disdat", done, "full-weighted", "tree")
    rows = [("auto with tree members (new)", new), ("auto, committed (MLP members)", old)]
    rows += [("full-weighted:tree alone (its round by the same criterion)", alone)] if alone else []
    for label, cells in rows:
        allv = float(np.nanmean(np.concatenate([cells[R]["per_label"] for R in done])))
        secs = sum(cells[R]["seconds"] for R in done) / sum(cells[R]["n"] for R in done)
        lines.append(f"| {label} | " + " | ".join(f"{cells[R]['auc']:.3f}" for R in done)
                     + f" | {allv:.3f} | {secs:.1f} |")
    lines += ["", "s/run: wall seconds per seed as each run recorded them, each under the load of its day on 2 shared "
              "cores: not comparable; the cost section below measures a tree member against an MLP member in one "
              "process.", "",
              "Published over the 142 species of the four regions (target-group background): RF down-sampled "
              "0.746, an ensemble of 5 SDMs 0.755; committed `auto` 0.745 over the 142.", ""]
    lines += _mulan_section()
    tpath = OUT / "timing.json"
    if tpath.exists():
        import json

        t = json.loads(tpath.read_text())
        lines += ["## Cost: a tree member against an MLP member", "",
                  f"`{t['command']}` ({t['date']}, load {', '.join(f'{x:.1f}' for x in t['load'])}): `wan` with the "
                  "MLP head (lrs 1e-2 and 1e-3 stacked, 25 epochs, patience 5) and with the tree head, in turn twice "
                  "in one process, one thread; median seconds:", "", "| set | MLP member s | tree member s | tree / MLP |",
                  "|---|---:|---:|---:|"]
        for name in dict.fromkeys(r["dataset"] for r in t["rows"]):
            a = float(np.median([r["seconds"] for r in t["rows"] if r["dataset"] == name and r["head"] == "mlp"]))
            b = float(np.median([r["seconds"] for r in t["rows"] if r["dataset"] == name and r["head"] == "tree"]))
            lines.append(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.2f}× |")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def bins(args) -> None:
    """Seconds per boosting round of XGBoost alone (fixed drawn gradients, emotions' shape:
    400 rows, 72 features, 6 labels; depth 4, subsample 0.8), by tree strategy and
    ``max_bin``: the histogram's width dominates a multi-output tree's cost."""
    import xgboost as xgb

    from spmlkit.experiments.machine import machine_info

    t0, date = time.perf_counter(), dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 72)).astype(np.float32)
    L = 6
    g, h = rng.normal(size=(400, L)).astype(np.float32), np.full((400, L), 0.25, np.float32)
    rows = []
    for strategy in ("multi_output_tree", "one_output_per_tree"):
        for max_bin in (256, 64):
            d = xgb.DMatrix(X, nthread=1)
            b = xgb.Booster({"tree_method": "hist", "multi_strategy": strategy, "max_depth": 4, "nthread": 1,
                             "num_target": L, "max_bin": max_bin, "base_score": 0.0, "subsample": 0.8,
                             "colsample_bytree": 0.8, "min_child_weight": 1e-3, "disable_default_eval_metric": 1},
                            [d])
            t = time.perf_counter()
            for r in range(10):
                b.update(d, r, fobj=lambda p, _: (g, h))
            rows.append((strategy, max_bin, (time.perf_counter() - t) / 10))
    lines = ["# Seconds per boosting round of XGBoost by tree strategy and max_bin", "",
             f"- command: `{' '.join(shlex.quote(a) for a in sys.argv)}`", f"- date: {date}",
             f"- machine: {machine_info(threads=1, setting='linear')}",
             f"- load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())} (2 shared cores)",
             f"- wall time: {time.perf_counter() - t0:.1f} s", "",
             "400 rows x 72 features x 6 labels (emotions' shape), drawn gradients, depth 4, one thread, 10 rounds.", "",
             "| strategy | max_bin | s/round |", "|---|---:|---:|"]
    lines += [f"| {s_} | {m} | {v:.4f} |" for s_, m, v in rows]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "bins.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("part", choices=["choose", "choose-bins", "timing", "table", "bins", "optimism"])
    p.add_argument("--regions", default="NZ", help="disdat regions to choose on (default NZ: CPU time; the others "
                   "are left for the final table)")
    p.add_argument("--sets", default="yeast", help="Mulan sets to choose on (default yeast: CPU time; the table "
                   "runs on others too)")
    p.add_argument("--data-root", default=str(REPO.parent / "shared" / "data"))
    p.add_argument("--val-blocks", type=int, default=None, metavar="G",
                   help="optimism: validation records in whole spatial blocks of a G x G grid (default: random rows)")
    p.add_argument("--val-block-folds", type=int, default=None, metavar="G",
                   help="optimism: validation on fold 1 of 5 balanced folds of whole blocks of a G x G grid "
                        "(benchmarks/disdat.py --val-block-folds)")
    args = p.parse_args(argv)
    {"choose": choose, "choose-bins": choose_bins, "optimism": optimism, "timing": timing, "table": table, "bins": bins}[args.part](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
