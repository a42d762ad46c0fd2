"""How the ``auto`` recipe's defaults were chosen (issue 16), on a development draw.

On every shared dataset prepared with **prepare seed 5** (a draw of single positives and
validation split that the learning-quality table, seeds 0–2, does not use), each
candidate method trains at lr ∈ {1e-2, 1e-3, 1e-4}, batch 8, 25 epochs, seeds 0 and 1,
keeping its best epoch by observed-label validation mAP.  Then, per seed (one user's
run), each strategy below is scored on the test split:

* ``select:<set>`` — the one method of the set whose best lr has the best observed
  validation mAP (choosing a family per dataset);
* ``mean:<set>`` — every method of the set at its best lr (observed), probabilities
  averaged (what ``auto`` does);

against AN and BCE chosen by full-label validation mAP (the learning-quality table's
references).  Writes ``benchmarks/results/recipe_design.md``.

    python benchmarks/recipe_design.py --data-root ../shared/data
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "recipe_design.md"
TABULAR = ["yeast", "scene", "emotions", "medical", "genbase", "birds", "flags", "foodtruck"]
IMAGES = ["digits", "coco-tiny", "coco-mini"]
CANDIDATES = ["an", "l1r", "wan", "em", "em-apl", "ll-r", "ll-ct", "hill", "splc", "gr", "pr", "entmin", "zlpr",
              "focal-margin"]
LRS = [1e-2, 1e-3, 1e-4]
SEEDS = [0, 1]
PREPARE_SEED = 5
STRATEGIES = {
    "select:all": ("select", CANDIDATES),
    "select:l1r,em-apl,wan,ll-ct": ("select", ["l1r", "em-apl", "wan", "ll-ct"]),
    "mean:l1r,em-apl": ("mean", ["l1r", "em-apl"]),
    "mean:l1r,em-apl,wan": ("mean", ["l1r", "em-apl", "wan"]),
    "mean:l1r,em,wan": ("mean", ["l1r", "em", "wan"]),
    "mean:l1r,em-apl,wan,ll-ct": ("mean", ["l1r", "em-apl", "wan", "ll-ct"]),
    "mean:l1r,em-apl,wan,ll-r": ("mean", ["l1r", "em-apl", "wan", "ll-r"]),
    "mean:l1r,em-apl,wan,hill": ("mean", ["l1r", "em-apl", "wan", "hill"]),
    "mean:an,l1r,em-apl,wan": ("mean", ["an", "l1r", "em-apl", "wan"]),
    "mean:all": ("mean", CANDIDATES),
}


def bundles(data_root: str | None, work: Path) -> list:
    from spmlkit.data import Bundle, load_any, prepare_bundle
    from spmlkit.features import DEFAULT_BACKBONE, ensure_features

    out = []
    for name in TABULAR + IMAGES:
        target = work / f"{name}-s{PREPARE_SEED}"
        b = Bundle(target) if (target / "meta.json").exists() else prepare_bundle(
            load_any(name, data_root=data_root), target, seed=PREPARE_SEED, overwrite=True, log=lambda m: None)
        fs = ensure_features(b, backbone=DEFAULT_BACKBONE, weights=None, image_size=224, log=lambda m: None) if b.kind == "images" else None
        out.append((name, b, fs))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--work", type=Path, default=REPO / "benchmarks" / "results" / "recipe-design-work" / "bundles")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    from spmlkit.config import TrainConfig
    from spmlkit.experiments.machine import machine_info
    from spmlkit.metrics import mean_average_precision
    from spmlkit.training.linear import train_linear
    from spmlkit.training.recipe import mean_probability_logits
    import torch

    t0 = time.perf_counter()
    rows: dict = {}
    for name, b, fs in bundles(args.data_root, args.work):
        Yv, Yt = np.asarray(b.labels("val")), np.asarray(b.labels("test"))
        runs = {}
        for m in ["bce"] + CANDIDATES:
            full = m == "bce"
            cfg = TrainConfig(method=m, selection="map" if full else "observed_map", batch_size=8, epochs=25,
                              feature_set=fs)
            res = train_linear(b, cfg, lrs=[lr for lr in LRS for _ in SEEDS], seeds=[s for _ in LRS for s in SEEDS],
                               keep_state=True)
            runs[m] = res
            print(f"{name} {m}", file=sys.stderr, flush=True)

        def by_full(m):  # the lr with the best seed-mean full-label validation mAP, its seed-mean test mAP
            best = max(LRS, key=lambda lr: np.mean([mean_average_precision(Yv, r.state["val_logits"]).map
                                                    for r in runs[m] if r.lr == lr]))
            return float(np.mean([r.test_map for r in runs[m] if r.lr == best]))

        bce, an = by_full("bce"), by_full("an")
        out = {}
        for key, (how, members) in STRATEGIES.items():
            tests = []
            for s in SEEDS:
                picks = [max((r for r in runs[m] if r.seed == s), key=lambda r: r.val_score) for m in members]
                if how == "select":
                    picks = [max(picks, key=lambda r: r.val_score)]
                logits = mean_probability_logits(torch.stack([torch.as_tensor(r.state["test_logits"]) for r in picks]))
                tests.append(mean_average_precision(Yt, logits.numpy()).map)
            out[key] = float(np.mean(tests))
        for m in CANDIDATES:  # each method alone, its lr chosen per seed on observed labels
            out[m] = float(np.mean([max((r for r in runs[m] if r.seed == s), key=lambda r: r.val_score).test_map
                                    for s in SEEDS]))
        rows[name] = (bce, an, out)
    names = list(rows)
    big = [n for n in names if rows[n][0] - rows[n][1] >= 3]
    keys = list(STRATEGIES) + CANDIDATES

    def gc(n, k):
        bce, an, out = rows[n]
        return 100 * (out[k] - an) / (bce - an)

    lines = ["# How `auto`'s defaults were chosen (development draw, prepare seed 5)", "",
             "- command: `python benchmarks/recipe_design.py" + (f" --data-root {args.data_root}`" if args.data_root
                                                                 else "`"),
             f"- date: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; "
             f"{(time.perf_counter() - t0) / 60:.1f} min",
             f"- machine: {machine_info()}",
             "- protocol: " + __doc__.split("\n\n")[1].replace("\n", " "),
             f"- gap closed averaged over the datasets with BCE − AN ≥ 3: {', '.join(big)}; "
             "\"worst\" = lowest mAP − AN over all datasets.", "",
             "BCE / AN (full-label selection): " + ", ".join(f"{n} {rows[n][0]:.1f} / {rows[n][1]:.1f}" for n in names),
             "", "| strategy | avg gap closed | without medical | worst vs AN | " + " | ".join(names) + " |",
             "|---|---:|---:|---:|" + "---:|" * len(names)]
    for k in sorted(keys, key=lambda k: -np.mean([gc(n, k) for n in big])):
        wo = [gc(n, k) for n in big if n != "medical"]
        worst = min(rows[n][2][k] - rows[n][1] for n in names)
        lines.append(f"| {k} | {np.mean([gc(n, k) for n in big]):.0f}% | {np.mean(wo):.0f}% | {worst:+.1f} | "
                     + " | ".join(f"{rows[n][2][k]:.1f}" for n in names) + " |")
    lines.append("")
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
