"""`auto` everywhere (issue 35): one table of the recipe beside every method chosen with
full labels and beside the best-per-set oracle, on VOC 2007 (linear, EfficientNet-Lite0
and Lite2 features), the shared Mulan sets and COCO subsets (uniform single positives),
and disdat's four presence-only regions.

Each part trains **only** ``auto`` (and, on the bench parts, ``an`` again, as a check that
the part reproduces the committed runs and for the cost ratio) with exactly the protocol
of the committed table it is compared with; every other row is read from that committed
table's run records (``runs.csv`` / ``runs-<R>.json``), named in the output:

* ``voc2007-lite0`` / ``voc2007-lite2``: ``benchmarks/results/voc2007-linear/<part>/``
  (lr ∈ {1e-2, 1e-3, 1e-4, 1e-5} × batch ∈ {8, 16}, 25 epochs, 3 draws);
* ``tabular`` and ``images``: ``benchmarks/results/learning-quality/{tabular,images}-uniform/``
  (lr ∈ {1e-2, 1e-3, 1e-4}, batch 8, 25 epochs, 3 draws);
* ``disdat``: ``benchmarks/results/disdat/target-group/`` (every row chosen by the
  target-group AUC; MaxEnt from ``benchmarks/results/disdat/``).  ``auto`` alone chooses
  and weighs its members on **spatially blocked** validation records (``disdat.py
  --val-block-folds 10``: fold 1 of 5 balanced folds of whole blocks of a 10 × 10 grid)
  where the committed rows held out a random 20 % of the rows: random held-out records lie
  next to training records (spatial autocorrelation) and reward a member's local fit, the
  tree's most (``benchmarks/trees.py optimism``; Roberts et al. 2017, Valavi et al. 2019).
  The earlier random-split ``auto`` run is shown beside it;
* ``tabular-mlp`` / ``images-mlp``: ``em-apl``, ``wan`` and ``gr`` with the MLP head on the
  same bundles (full-label choice of lr): the committed tables hold linear heads only,
  and ``auto`` has MLP members on tabular data, so its rivals get the MLP head too;
* ``timing``: one ``an`` run (one lr) and one ``auto`` run per dataset, in turn in one
  process with one thread, so that their ratio is measured on one machine at one time.

The ``tabular`` and ``disdat`` parts' runs are ``auto`` with its tree members (the
``trees`` extra installed): they live in ``OUT/trees/tabular`` and ``OUT/trees/disdat-blocks``
(``part_dir``); ``OUT/trees/disdat`` keeps the same ``auto`` validated on a random 20 % of
the rows, and ``OUT/tabular`` and ``OUT/disdat`` the earlier MLP-member runs, which
``benchmarks/trees.py table`` compares on the random split.

Every method but ``auto`` takes the papers' full-label validation choice (lr, batch);
``auto`` reads no full label.  Run each part under ``flock /tmp/spml-heavy.lock``:

    python benchmarks/auto_table.py run voc2007-lite0 voc2007-lite2 --voc-bundles ../voccache/benchmarks/results/voc2007-linear
    python benchmarks/auto_table.py run tabular images tabular-mlp images-mlp --data-root ../shared/data
    python benchmarks/auto_table.py run disdat timing
    python benchmarks/auto_table.py table                       # OUT/table.md from the parts
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
RESULTS = REPO / "benchmarks" / "results"
OUT = RESULTS / "auto"
TABULAR = ["yeast", "scene", "emotions", "medical", "genbase", "birds", "flags", "foodtruck"]
IMAGES = ["digits", "coco-tiny", "coco-mini"]
LQ_LRS = ["1e-2", "1e-3", "1e-4"]
VOC_LRS = ["1e-2", "1e-3", "1e-4", "1e-5"]
PARTS = {
    "voc2007-lite0": dict(datasets=["voc2007"], lrs=VOC_LRS, batches=["8", "16"], features="efficientnet-lite0-224",
                          extra=["--backbone", "efficientnet-lite0", "--image-size", "224"],
                          ref=RESULTS / "voc2007-linear" / "efficientnet-lite0-224"),
    "voc2007-lite2": dict(datasets=["voc2007"], lrs=VOC_LRS, batches=["8", "16"], features="efficientnet-lite2-260",
                          extra=["--backbone", "efficientnet-lite2", "--image-size", "260"],
                          ref=RESULTS / "voc2007-linear" / "efficientnet-lite2-260"),
    # (the tabular part's runs: `auto` with its tree members, the trees extra installed)
    "tabular": dict(datasets=TABULAR, lrs=LQ_LRS, batches=["8"], extra=["--no-histograms"],
                    ref=RESULTS / "learning-quality" / "tabular-uniform", dir="trees/tabular"),
    "images": dict(datasets=IMAGES, lrs=LQ_LRS, batches=["8"], extra=["--no-histograms", "--image-size", "224"],
                   ref=RESULTS / "learning-quality" / "images-uniform"),
}
# MLP-head references for the tabular and image sets: the same protocol and draws, full-label
# choice of lr; the committed learning-quality tables hold linear heads only, while `auto`
# mixes linear and MLP members there, so its rivals should have the MLP head too
MLP_METHODS = ["em-apl", "wan", "gr"]
for _part in ("tabular", "images"):
    PARTS[f"{_part}-mlp"] = {**PARTS[_part], "methods": MLP_METHODS, "extra": [*PARTS[_part]["extra"], "--head", "mlp"],
                             "ref": None, "suffix": ":mlp", "dir": f"{_part}-mlp"}
DISDAT_REF = RESULTS / "disdat" / "target-group"
#: the disdat part's runs (under OUT): `auto` with its tree members (the trees extra installed),
#: choosing and weighing its members on spatially blocked validation records
DISDAT_DIR = "trees/disdat-blocks"
#: its validation split: fold 1 of 5 balanced folds of whole blocks of a 10 x 10 grid
#: (``disdat.py --val-block-folds``; the grid: the coarsest of 5, 10 and 20 whose fold holds
#: 15-25 % of every region's records and background rows; 5 x 5 puts 65 % of CAN's in it)
DISDAT_SPLIT = ["--val-block-folds", "10"]
#: the earlier run of the same `auto` on a random 20 % of the rows, shown beside it
DISDAT_RANDOM_DIR = "trees/disdat"
DISDAT_MAXENT = RESULTS / "disdat"
MIN_GAP = 3.0  # gap closed is averaged over the sets with BCE − AN ≥ 3 (the learning-quality table's rule;
# VOC's parts report it whatever the gap, as the target and the VOC tables do)
NOT_SP = {"bce", "bce-ls", "iun", "iu"}  # rows that see more than single positives


def part_dir(part: str, args) -> Path:
    """A part's runs folder: ``OUT/<part>``, or ``OUT/<dir>`` where the part names one."""
    if part == "disdat":
        return args.out / DISDAT_DIR
    return args.out / PARTS[part].get("dir", part)


def _env():
    return {**os.environ, "PYTHONPATH": str(REPO / "src") + (":" + os.environ["PYTHONPATH"]
                                                           if os.environ.get("PYTHONPATH") else "")}


def bench_command(part: str, args, display: bool = False) -> list[str]:
    p = PARTS[part]
    cmd = (["spml"] if display else [sys.executable, "-m", "spmlkit"]) + ["bench", "--datasets", *p["datasets"],
           "--methods", *p.get("methods", ["an", "auto"]),
           "--lrs", *p["lrs"], "--batch-sizes", *p["batches"], "--seeds", "3", "--vary-draw", "--epochs", "25",
           "--no-figures", "--jobs", "1", "--threads", "1", "-o", str(part_dir(part, args)), *p["extra"]]
    if args.data_root:
        cmd += ["--data-root", args.data_root]
    return cmd


def link_voc_bundles(part: str, args) -> None:
    """Point ``OUT/<part>/bundles/voc2007-s<k>`` at prepared VOC bundles (the three draws
    ``spml bench --vary-draw`` prepares, with their feature caches): features are not
    extracted again."""
    if not args.voc_bundles:
        return
    from spmlkit.io import claim_output_folder

    src = Path(args.voc_bundles) / PARTS[part]["features"] / "bundles"
    # the bench accepts only an empty folder or its own: claim it as a bench folder first
    # (its marker), so that the linked bundles do not make it refuse the folder
    claim_output_folder(args.out / part, kind="bench", what="a bench results folder")
    dst = args.out / part / "bundles"
    dst.mkdir(parents=True, exist_ok=True)
    for k in range(3):
        link = dst / f"voc2007-s{k}"
        if not link.exists():
            link.symlink_to((src / f"voc2007-s{k}").resolve(), target_is_directory=True)


def link_base_bundles(part: str, args) -> None:
    """An ``-mlp`` reference part trains on its base part's bundles (same draws, features
    extracted once): link them."""
    from spmlkit.io import claim_output_folder

    src = args.out / part.removesuffix("-mlp") / "bundles"
    if not src.is_dir():
        return
    claim_output_folder(args.out / part, kind="bench", what="a bench results folder")
    dst = args.out / part / "bundles"
    dst.mkdir(parents=True, exist_ok=True)
    for b in sorted(src.iterdir()):
        if not (dst / b.name).exists():
            (dst / b.name).symlink_to(b.resolve(), target_is_directory=True)


def run_part(part: str, args) -> None:
    if part in PARTS:
        if part.startswith("voc"):
            link_voc_bundles(part, args)
        if part.endswith("-mlp"):
            link_base_bundles(part, args)
        cmd = bench_command(part, args)
        print("$ " + shlex.join(cmd), flush=True)
        subprocess.run(cmd, check=True, env=_env())
    elif part == "disdat":
        out = part_dir("disdat", args).resolve()
        cmd = [sys.executable, "benchmarks/disdat.py", "--selection", "target_group_auc",  # run in REPO: the
               "--no-maxent", "--methods", "", "--mlp-methods", "auto", *DISDAT_SPLIT,  # record's command reads as typed
               "--out", str(out.relative_to(REPO)) if out.is_relative_to(REPO) else str(out)]
        if args.disdat:
            cmd += ["--data", str(Path(args.disdat).resolve())]
        print("$ " + shlex.join(cmd), flush=True)
        subprocess.run(cmd, check=True, env=_env(), cwd=REPO)
    elif part == "timing":
        timing(args)
    else:
        raise SystemExit(f"auto_table.py: unknown part {part!r} ({', '.join([*PARTS, 'disdat', 'timing'])})")


# --------------------------------------------------------------------------- timing
def timing(args) -> None:
    """One ``an`` run at its usual lr and one ``auto`` run per dataset, alternately, in
    one process with one thread (draw 0 of each part's bundles)."""
    import torch

    from spmlkit.config import TrainConfig
    from spmlkit.data import Bundle
    from spmlkit.training.run import train

    torch.set_num_threads(1)
    rows = []
    plan = [("voc2007-lite0", "voc2007", "efficientnet-lite0-224", 16),
            ("voc2007-lite2", "voc2007", "efficientnet-lite2-260", 16),
            ("tabular", "yeast", None, 8), ("tabular", "medical", None, 8), ("images", "coco-mini", None, 8)]
    for part, name, fs, batch in plan:
        path = args.out / part / "bundles" / f"{name}-s0"
        if not (path / "meta.json").exists():
            print(f"timing: {path} missing (run the part first)", file=sys.stderr)
            continue
        b = Bundle(path)
        if fs is None and b.kind == "images":
            fs = next(iter(b.feature_sets()))
        for method in ("an", "auto", "an", "auto"):
            cfg = TrainConfig(method=method, epochs=25, batch_size=batch, lr=1e-3, seed=0, feature_set=fs, threads=1)
            t0 = time.perf_counter()
            train(b, cfg)
            rows.append({"part": part, "dataset": name, "method": method, "seconds": time.perf_counter() - t0})
            print(rows[-1], flush=True)
    (args.out / "timing").mkdir(parents=True, exist_ok=True)
    (args.out / "timing" / "timing.json").write_text(json.dumps({
        "command": shlex.join([sys.executable, *sys.argv]), "date": now(), "rows": rows}, indent=1))


# --------------------------------------------------------------------------- table
def now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def rel(command: str) -> str:
    """A recorded command as one would type it in the repository root (also when it was
    run from another checkout: an absolute path to its ``benchmarks/`` is cut to that)."""
    command = command.replace(sys.executable, "python").replace(str(REPO) + "/", "")
    return re.sub(r"(?<![^\s'\"])/[^\s'\"]*/(?=benchmarks/)", "", command)


def fmt(x, d=1) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{d}f}"


def bench_group(parts: list[str], args) -> dict:
    """Selections per (dataset, method): ``auto`` (and the re-run ``an``) from OUT, every
    other method from the committed reference runs."""
    from learning_quality import cells, load_runs, run_date, run_machine, wall_seconds

    ref, new, info = {}, {}, []
    for part in parts:
        p = PARTS[part]
        mine = cells(load_runs(part_dir(part, args)))
        if p.get("suffix"):  # an MLP-head reference part: its rows join the full-label rows
            ref.update({(d, m + p["suffix"]): v for (d, m), v in mine.items()})
        else:
            ref.update({k: v for k, v in cells(load_runs(p["ref"])).items() if k[1] != "auto"})
            new.update(mine)
        info.append({"part": part, "ref": p["ref"], "date": run_date(part_dir(part, args)),
                     "machine": run_machine(part_dir(part, args)), "wall": wall_seconds(part_dir(part, args)),
                     "command": bench_command(part, argparse.Namespace(out=Path("benchmarks/results/auto"),
                                                                       data_root=args.data_root), display=True),
                     "have": bool(mine)})
    datasets = list(dict.fromkeys(d for part in parts for d in PARTS[part]["datasets"]))
    return {"ref": ref, "new": new, "datasets": datasets, "info": info}


def summarise(g: dict) -> dict:
    """Per dataset: BCE, AN, auto, the per-set full-label choice, the oracle; gap closed."""
    ref, new = g["ref"], g["new"]
    sp = sorted({m for (_, m) in ref if m not in NOT_SP})
    min_gap = g.get("min_gap", MIN_GAP)
    out = {"datasets": {}, "methods": sp, "min_gap": min_gap}
    for d in g["datasets"]:
        bce, an = ref.get((d, "bce")), ref.get((d, "an"))
        auto = new.get((d, "auto"))
        if bce is None or an is None:
            continue
        gap = bce.test_mean - an.test_mean
        methods = {m: ref[(d, m)] for m in sp if ref.get((d, m)) is not None}
        full_choice = max(methods, key=lambda m: methods[m].val_mean)  # full-label validation mAP
        oracle = max(methods, key=lambda m: methods[m].test_mean)  # on test: a reference, not a choice

        def gc(x, gap=gap, an_mean=an.test_mean):  # (bound now: a closure would see the last set's values)
            return None if x is None or gap <= 0 or gap < min_gap else 100 * (x - an_mean) / gap

        out["datasets"][d] = {
            "bce": bce.test_mean, "an": an.test_mean, "gap": gap, "an_rerun": None if new.get((d, "an")) is None
            else new[(d, "an")].test_mean,
            "auto": None if auto is None else auto.test_mean, "auto_std": None if auto is None else auto.test_std,
            "full_choice": (full_choice, methods[full_choice].test_mean),
            "oracle": (oracle, methods[oracle].test_mean),
            "per_method": {m: s.test_mean for m, s in methods.items()},
            "gc": gc, "auto_runs": None if auto is None else auto.runs}
    return out


def gap_rows(s: dict) -> tuple[list, list]:
    """(rows sorted by average gap closed, the datasets with a gap ≥ MIN_GAP)."""
    big = [d for d, v in s["datasets"].items() if v["gap"] > 0 and v["gap"] >= s["min_gap"]]
    rows = []
    for m in s["methods"]:
        vals = [s["datasets"][d]["gc"](s["datasets"][d]["per_method"].get(m)) for d in big]
        if all(v is not None for v in vals) and vals:
            rows.append((m, float(np.mean(vals)), vals))
    for key in ("auto",):
        vals = [s["datasets"][d]["gc"](s["datasets"][d][key]) for d in big]
        if all(v is not None for v in vals) and vals:
            rows.append((f"**{key}** (no full label)", float(np.mean(vals)), vals))
    for key, label in (("full_choice", "per-set choice by full-label validation mAP"),
                       ("oracle", "best single-positive method per set, picked on test (oracle)")):
        vals = [s["datasets"][d]["gc"](s["datasets"][d][key][1]) for d in big]
        if vals:
            rows.append((f"_{label}_", float(np.mean(vals)), vals))
    return sorted(rows, key=lambda r: -r[1]), big


def delta_rows(s: dict) -> list:
    """(row, mean test mAP − AN over every set, per set), sorted: each method with a
    selection on every set, `auto`, the per-set full-label choice and the oracle."""
    ds = list(s["datasets"])
    rows = []
    for m in s["methods"]:
        vals = [s["datasets"][d]["per_method"].get(m) for d in ds]
        if all(v is not None for v in vals):
            rows.append((m, [v - s["datasets"][d]["an"] for v, d in zip(vals, ds)]))
    if all(s["datasets"][d]["auto"] is not None for d in ds):
        rows.append(("**auto** (no full label)", [s["datasets"][d]["auto"] - s["datasets"][d]["an"] for d in ds]))
    for key, label in (("full_choice", "per-set choice by full-label validation mAP"),
                       ("oracle", "best single-positive method per set, picked on test (oracle)")):
        rows.append((f"_{label}_", [s["datasets"][d][key][1] - s["datasets"][d]["an"] for d in ds]))
    return sorted(((m, float(np.mean(v)), v) for m, v in rows), key=lambda r: -r[1])


def render_bench(title: str, g: dict, lines: list) -> dict:
    s = summarise(g)
    if not s["datasets"]:
        lines += [f"## {title}", "", "(no runs yet)", ""]
        return {}
    lines += [f"## {title}", ""]
    for i in g["info"]:
        if i["ref"] is None:
            lines.append(f"- `{i['part']}`: the rows `<method>:mlp` (MLP head, full-label choice of lr, like every "
                         f"row but `auto`) trained by `{shlex.join(i['command'])}` ({i['date'] or 'not run'}; "
                         f"{fmt((i['wall'] or math.nan) / 60, 0)} min)")
            continue
        lines.append(f"- `{i['part']}`: auto and an trained by `{shlex.join(i['command'])}`"
                     f" ({i['date'] or 'not run'}; {fmt((i['wall'] or math.nan) / 60, 0)} min); every other row "
                     f"from `{i['ref'].relative_to(REPO)}/runs.csv` (same protocol, draws and bundles)")
    lines += ["", "| set | BCE | AN (re-run) | `auto` | gap closed | full-label choice per set | best single method "
              "(fixed) | oracle per set |", "|---|---:|---:|---:|---:|---|---|---|"]
    rows, big = gap_rows(s)
    fixed = next((r for r in rows if not r[0].startswith(("**", "_"))), None)
    for d, v in s["datasets"].items():
        gcv = v["gc"](v["auto"])
        fc, oc = v["full_choice"], v["oracle"]
        fx = "—" if fixed is None else f"{fixed[0]} {fmt(v['per_method'].get(fixed[0]))}"
        lines.append(f"| {d} | {fmt(v['bce'])} | {fmt(v['an'])} ({fmt(v['an_rerun'])}) | "
                     f"{fmt(v['auto'])} ± {fmt(v['auto_std'])} | {'—' if gcv is None else f'{gcv:.0f}%'} | "
                     f"{fc[0]} {fmt(fc[1])} | {fx} | {oc[0]} {fmt(oc[1])} |")
    lines += ["", f"Gap closed (mAP − AN) / (BCE − AN) on the sets with BCE − AN ≥ {s['min_gap']:g}: "
              f"{', '.join(big)}; every method chosen with full labels, `auto` without:", "",
              "| method | average | " + " | ".join(big) + " |", "|---|---:|" + "---:|" * len(big)]
    for m, avg, vals in rows:
        lines.append(f"| {m} | {avg:.0f}% | " + " | ".join(f"{v:.0f}%" for v in vals) + " |")
    lines.append("")
    delta = delta_rows(s)
    if len(s["datasets"]) > 1 and delta:
        ds = list(s["datasets"])
        lines += [f"Test mAP − AN's, every set (also those with BCE − AN < {s['min_gap']:g}, where `auto`'s MLP members "
                  "may beat BCE's linear head), mean over the sets; the best ten fixed methods and the references:", "",
                  "| method | mean | " + " | ".join(ds) + " |", "|---|---:|" + "---:|" * len(ds)]
        fixed_shown = 0
        for m, avg, vals in delta:
            if not m.startswith(("**", "_")):
                fixed_shown += 1
                if fixed_shown > 10:
                    continue
            lines.append(f"| {m} | {avg:+.2f} | " + " | ".join(f"{v:+.1f}" for v in vals) + " |")
        lines.append("")
    auto_row = next((r for r in rows if r[0].startswith("**auto")), None)
    auto_delta = next((r for r in delta if r[0].startswith("**auto")), None)
    fixed_delta = next((r for r in delta if not r[0].startswith(("**", "_"))), None)
    return {"auto": None if auto_row is None else auto_row[1], "fixed": fixed, "summary": s,
            "auto_delta": None if auto_delta is None else auto_delta[1], "fixed_delta": fixed_delta,
            "full_choice_delta": next((r for r in delta if r[0].startswith("_per-set")), None),
            "full_choice": next((r for r in rows if r[0].startswith("_per-set")), None),
            "oracle": next((r for r in rows if r[0].startswith("_best")), None)}


def mulan_delta(s: dict | None):
    """``(auto, (best fixed row, its mean), per-set full-label choice)``: test mAP − AN
    averaged over the shared Mulan sets only (:data:`TABULAR`), or None without them all."""
    if not s or not all(d in s["datasets"] for d in TABULAR):
        return None
    rows = delta_rows({**s, "datasets": {d: s["datasets"][d] for d in TABULAR}})
    auto = next((r[1] for r in rows if r[0].startswith("**auto")), None)
    fixed = next((r[:2] for r in rows if not r[0].startswith(("**", "_"))), None)
    fc = next((r[1] for r in rows if r[0].startswith("_per-set")), None)
    return None if auto is None or fixed is None else (auto, fixed, fc)


#: the earlier random-split `auto` run's key in the disdat cells
EARLIER = ("auto", "mlp; random 20% validation")


def split_of(grid: str | None) -> str:
    """The validation split named in a disdat record's grid line (``disdat.grid_line``)."""
    part = next((g.strip() for g in (grid or "").split(";") if g.strip().startswith("validation ")), None)
    return part[len("validation "):] if part else "?"


def render_disdat(args, lines: list) -> dict:
    from disdat import REGIONS, choose, read_region, region_record

    new_dir = part_dir("disdat", args)
    if not all(region_record(new_dir, R).exists() for R in REGIONS):
        lines += ["## disdat: presence-only species data (4 regions, 142 species)", "", "(no runs yet)", ""]
        return {}
    cells, commands, grid = {}, [], None
    random_dir = args.out / DISDAT_RANDOM_DIR
    earlier = all(region_record(random_dir, R).exists() for R in REGIONS)
    for R in REGIONS:
        ref, mine, maxent = (read_region(d, R) for d in (DISDAT_REF, new_dir, DISDAT_MAXENT))
        commands += mine.get("commands", [])
        grid = grid or mine.get("grid")
        groups: dict = {}
        for r in [x for x in ref["runs"] if x["method"] != "auto"] + mine["runs"] + \
                [x for x in maxent["runs"] if x["method"].startswith("maxent")]:
            groups.setdefault((r["method"], r["head"]), []).append(r)
        if earlier:  # the same auto validated on a random 20 % of the rows, and that run's other rows
            runs = read_region(random_dir, R)["runs"]  # (full-weighted:tree; the random split, as the ref's)
            groups[EARLIER] = [x for x in runs if x["method"] == "auto"]
            for r in (x for x in runs if x["method"] != "auto"):
                groups.setdefault((r["method"], r["head"]), []).append(r)
        for k, rs in groups.items():
            cells.setdefault(k, {})[R] = choose(rs)
    keys = [k for k in cells if all(R in cells[k] for R in REGIONS)]

    def species_mean(k):
        return float(np.nanmean(np.concatenate([cells[k][R]["per_label"] for R in REGIONS])))

    def val_mean(k):
        return float(np.mean([cells[k][R]["val"] for R in REGIONS]))

    maxent = next(k for k in keys if k[0].startswith("maxent"))
    auto = next((k for k in keys if k[0] == "auto" and k != EARLIER), None)
    spml = [k for k in keys if k not in (maxent, auto, EARLIER)]
    chosen = max(spml, key=val_mean)  # the row the committed table chooses without test labels
    oracle = max(spml, key=species_mean)
    lines += ["## disdat: presence-only species data (4 regions, 142 species)", "",
              f"- `auto` trained by `{rel(commands[0]['command']) if commands else '?'}` (and the other regions alike; "
              f"{sum(c['wall_s'] for c in commands) / 60:.1f} min), validation: {split_of(grid)}; every other row "
              f"from `{DISDAT_REF.relative_to(REPO)}/runs-<R>.json` (validation: a random 20% of the rows; the same "
              f"grid and criterion)"
              + (f", the earlier `auto` and `full-weighted (tree)` from `{rel(str(random_dir))}/runs-<R>.json` "
                 "(the same `auto`, validated on a random 20% of the rows)" if earlier else "")
              + f"; MaxEnt (elapid, fitted on every record) from `{DISDAT_MAXENT.relative_to(REPO)}/runs-<R>.json`",
              "- test: per-species AUC-ROC on each species' surveyed sites; 'all 142' = mean over the 142 species; "
              "every row's lr and epoch chosen by the target-group AUC on held-out records (no test label)",
              "- why blocks: held-out records drawn at random lie next to training records (spatial "
              "autocorrelation), which rewards a model's local fit; validating on whole spatial blocks measures "
              "transfer to unseen places (Roberts et al. 2017; Valavi et al. 2019) — "
              "[trees/optimism.md](../trees/optimism.md), [trees/optimism-blocks.md](../trees/optimism-blocks.md)", "",
              "| row | " + " | ".join(REGIONS) + " | all 142 | − MaxEnt | s/run |", "|---|" + "---:|" * (len(REGIONS) + 3)]
    shown = [(auto, "**auto** (no test label; its own members, heads and choices)"),
             (EARLIER if EARLIER in keys else None, "auto, earlier run validated on a random 20% of the rows"),
             (chosen, "best row by validation target-group AUC (no test label)"), (maxent, "MaxEnt (elapid; every record, same covariates and test)"),
             (oracle, "best row on test (oracle, not a choice)")]
    for k, label in shown:
        if k is None:
            continue
        lines.append(f"| {label}: {k[0]} ({k[1]}) | " + " | ".join(fmt(cells[k][R]["auc"], 3) for R in REGIONS)
                     + f" | {species_mean(k):.3f} | {species_mean(k) - species_mean(maxent):+.3f} | "
                     f"{np.mean([cells[k][R]['seconds'] / cells[k][R]['n'] for R in REGIONS]):.1f} |")
    lines.append("")
    return {"auto": None if auto is None else species_mean(auto), "maxent": species_mean(maxent),
            "split": split_of(grid),
            "chosen": (chosen, species_mean(chosen)), "oracle": (oracle, species_mean(oracle))}


def total_wall(args) -> float:
    """Seconds: the bench parts' wall times (their table headers), disdat's region
    commands and the timing runs."""
    from learning_quality import wall_seconds

    total = sum(wall_seconds(part_dir(part, args)) or 0.0 for part in PARTS
                if (part_dir(part, args) / "table.md").exists())
    from disdat import REGIONS, read_region, region_record

    for R in REGIONS:
        if region_record(part_dir("disdat", args), R).exists():
            total += sum(c.get("wall_s", 0.0) for c in read_region(part_dir("disdat", args), R).get("commands", []))
    tpath = args.out / "timing" / "timing.json"
    if tpath.exists():
        total += sum(r["seconds"] for r in json.loads(tpath.read_text())["rows"])
    return total


def write_table(args) -> None:
    from spmlkit.experiments.machine import machine_info

    lines: list = []
    body: list = []
    res = {}
    res["voc0"] = render_bench("PASCAL VOC 2007, linear, EfficientNet-Lite0 224 px",
                               {**bench_group(["voc2007-lite0"], args), "min_gap": 0.0},
                               body)
    res["voc2"] = render_bench("PASCAL VOC 2007, linear, EfficientNet-Lite2 260 px",
                               {**bench_group(["voc2007-lite2"], args), "min_gap": 0.0},
                               body)
    res["tab"] = render_bench("The shared Mulan sets and COCO subsets (uniform single positives)",
                              bench_group(["tabular", "images", "tabular-mlp", "images-mlp"], args), body)
    res["dis"] = render_disdat(args, body)
    cost = []
    tpath = args.out / "timing" / "timing.json"
    if tpath.exists():
        t = json.loads(tpath.read_text())
        by: dict = {}
        for r in t["rows"]:
            by.setdefault((r["part"], r["dataset"]), {}).setdefault(r["method"], []).append(r["seconds"])
        body += ["## Cost", "", f"`{rel(t['command'])}` ({t['date']}): one `an` run (lr 1e-3) and one `auto` run per set, "
                 "25 epochs, alternated twice in one process with one thread; median seconds. The tabular rows were measured "
                 "with the MLP-member `auto`, before its tree member: the tree member's own cost against an MLP member "
                 "is in [trees/table.md](../trees/table.md).", "",
                 "| set | AN s | auto s | auto / AN |", "|---|---:|---:|---:|"]
        for (part, d), m in by.items():
            a, b = float(np.median(m["an"])), float(np.median(m["auto"]))
            cost.append((part, d, b / a))
            body.append(f"| {d} ({part}) | {a:.1f} | {b:.1f} | {b / a:.1f}× |")
        body.append("")
    lines += ["# `auto` beside every method chosen with full labels, and beside the best-per-set oracle", "",
              f"- command: `python benchmarks/auto_table.py table` (the parts' own commands below)",
              f"- date: {now()} (table); the parts' runs: see each section",
              f"- machine: {machine_info(jobs=1, threads=1)}",
              "- device: cpu (torch threads 1)",
              "- load: the parts ran on a 2-core machine shared with other agents' jobs (and, for some parts, beside "
              "each other, one thread each): wall times are upper bounds; the cost ratio below alternates AN and "
              "`auto` in one process, so both see the same load",
              f"- wall time: {fmt(total_wall(args) / 60)} min, the sum of the parts' wall times in the sections below "
              "(this command trains nothing)",
              "- `auto` reads no full label (its members' lrs, epochs and weights are chosen on single positives "
              "drawn from the validation labels in the training regime); every other row takes the papers' "
              "full-label validation choice of lr and batch; 'oracle' rows are picked on test and are not results.",
              ""]
    lines += ["## Targets", ""]
    v2 = res.get("voc2") or {}
    if v2.get("auto") is not None:
        verdict = "met" if v2["auto"] >= 100 else f"not met, {100 - v2['auto']:.0f} points short"
        lines.append(f"- VOC 2007 (Lite2): `auto` closes **{v2['auto']:.0f}%** of the AN→BCE gap (target ≥ 100%: "
                     f"{verdict}).")
    v0 = res.get("voc0") or {}
    if v0.get("auto") is not None:
        lines.append(f"- VOC 2007 (Lite0, no target): `auto` closes {v0['auto']:.0f}%.")
    tb = res.get("tab") or {}
    if tb.get("auto") is not None and tb.get("fixed"):
        f = tb["fixed"]
        fc = tb.get("full_choice")
        lines.append(f"- the Mulan sets, digits and COCO subsets together (average gap closed): `auto` **{tb['auto']:.0f}%** against the best "
                     f"single method chosen with full labels, {f[0]} {f[1]:.0f}% (target `auto` ≥ it: "
                     f"{'met' if tb['auto'] >= f[1] else 'not met'})"
                     + (f"; choosing the method per set by full-label validation mAP gives {fc[1]:.0f}%" if fc else "")
                     + ".")
    if tb.get("auto_delta") is not None and tb.get("fixed_delta"):
        f, fc = tb["fixed_delta"], tb.get("full_choice_delta")
        lines.append(f"- the Mulan sets, digits and COCO subsets together (test mAP − AN, mean over every set): `auto` **{tb['auto_delta']:+.2f}** "
                     f"against the best single method chosen with full labels, {f[0]} {f[1]:+.2f} (target: "
                     f"{'met' if tb['auto_delta'] >= f[1] else 'not met'})"
                     + (f"; the per-set full-label choice {fc[1]:+.2f}" if fc else "") + ".")
    mulan = mulan_delta(tb.get("summary"))
    if mulan is not None:
        auto_d, fixed_d, fc_d = mulan
        lines.append(f"- the shared Mulan sets alone ({', '.join(TABULAR)}; test mAP − AN, mean): `auto` "
                     f"**{auto_d:+.2f}** against the best single method chosen with full labels, {fixed_d[0]} "
                     f"{fixed_d[1]:+.2f} (target `auto` ≥ it: {'met' if auto_d >= fixed_d[1] else 'not met'}); "
                     f"the per-set full-label choice {fc_d:+.2f}.")
    ds = res.get("dis") or {}
    if ds.get("auto") is not None:
        d = ds["auto"] - ds["maxent"]
        verdict = "met" if ds["auto"] >= 0.76 else f"not met, {0.76 - ds['auto']:.3f} short"
        lines.append(f"- disdat: `auto` **{ds['auto']:.3f}** mean per-species AUC over the 142 species (target ≥ 0.76: "
                     f"{verdict}; validation: {ds['split']}), {d:+.3f} against MaxEnt on the same test "
                     f"(target ≥ +0.03: {'met' if d >= 0.03 else 'not met'}).")
    for part, d, r in cost:
        if part.startswith("voc"):
            lines.append(f"- cost on the linear setting ({d}, {part}): `auto` {r:.1f}× one AN run (target < 10×: "
                         f"{'met' if r < 10 else 'not met'}).")
    lines.append("")
    (args.out).mkdir(parents=True, exist_ok=True)
    (args.out / "table.md").write_text("\n".join(lines + body) + "\n", encoding="utf-8")
    print("\n".join(lines + body))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["run", "table"])
    ap.add_argument("parts", nargs="*", default=[])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--voc-bundles", default=None,
                    help="folder holding <features>/bundles/voc2007-s{0,1,2} (prepared VOC draws with features)")
    ap.add_argument("--disdat", default=None, help="the disdat data folder (disdat.py's --data)")
    args = ap.parse_args(argv)
    if args.what == "run":
        for part in args.parts or [*PARTS, "disdat", "timing"]:
            run_part(part, args)
    else:
        write_table(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
