#!/usr/bin/env python
"""Candidate default label-set rules without full labels, on every shared Mulan set.

The default rule of a model trained without a fully labelled validation split is
expected-k with k estimated from held-out observations (docs/practitioner.md).  This
measures it and the alternatives a user without full labels could get, and reports each
candidate's mean and **worst** example-F1 over the (dataset, method) rows, so the default
can be the candidate with the best worst case:

* ``expected-k, k = 1/recall@1`` — the default: k̂ = 1 / observed recall@1 on the held-out
  observations (:func:`spmlkit.practitioner.labelsets.estimate_k_observed`);
* ``expected-k, k = 2 mean rank - 1`` — k̂ from the mean rank of each held-out observed
  positive among its example's labels (under a perfect ranking, uniform on 1..|y|, so
  E[rank] = (|y| + 1) / 2);
* ``top-1``; ``threshold 0.5``;
* ``expected-k, true k`` — an oracle (full training labels), for reference only.

Each (dataset, method, seed): ``spml prepare NAME --regime single_positive --seed 0``,
``SPMLClassifier(method, lr=1e-3, epochs=25, seed)`` on the training split's observations
only (20% of its rows held out as observed validation, the estimator's own split), scored
on the test split against its full labels.

    OMP_NUM_THREADS=1 python benchmarks/default_label_rule_candidates.py --data-root ../shared/data

Writes ``benchmarks/results/default_label_rule_candidates.md`` (``--out``).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import shlex
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

MULAN = ["yeast", "scene", "emotions", "medical", "genbase", "birds", "flags", "foodtruck"]
CANDIDATES = ["expected-k, k = 1/recall@1 (default)", "expected-k, k = 2 mean rank - 1", "top-1", "threshold 0.5"]
ORACLE = "expected-k, true k (oracle)"


def k_mean_rank(Z, P) -> float:
    """k̂ = 2 × mean rank of the observed positives − 1, clipped to [1, L]."""
    Z, P = np.asarray(Z), np.asarray(P, dtype=np.float64)
    rows, cols = np.nonzero(Z == 1)
    ranks = 1 + (P[rows] > P[rows, cols][:, None]).sum(1)
    return float(np.clip(2 * ranks.mean() - 1, 1, P.shape[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--data-root", default="../shared/data")
    ap.add_argument("--datasets", nargs="+", default=MULAN)
    ap.add_argument("--methods", nargs="+", default=["an", "em-apl", "auto"])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" /
                                         "default_label_rule_candidates.md"))
    args = ap.parse_args()

    from spmlkit import SPMLClassifier
    from spmlkit.cli import main as spml
    from spmlkit.data import Bundle
    from spmlkit.experiments.machine import machine_info
    from spmlkit.metrics import label_set_scores
    from spmlkit.practitioner.labelsets import estimate_k_observed, label_sets

    t0 = time.perf_counter()
    names = CANDIDATES + [ORACLE]
    lines = ["| data (test k) | method | k̂ 1/recall@1 | k̂ mean rank | "
             + " | ".join(f"{n}: example-F1 (labels / ex.)" for n in names) + " |",
             "|---|---|---:|---:|" + "---:|" * len(names)]
    print(lines[0], flush=True)
    per_candidate: dict[str, list[float]] = {n: [] for n in names}
    micro: dict[str, list[float]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        for ds in args.datasets:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                spml(["prepare", ds, "--data-root", args.data_root, "-o", f"{tmp}/{ds}", "--regime",
                      "single_positive", "--seed", "0"])
            b = Bundle(Path(tmp) / ds)
            X, Z, Y = np.asarray(b.features("train")), np.asarray(b.observations("train")), b.labels("train")
            Xte, Yte = b.features("test"), b.labels("test")
            k_true = float(Y.sum(1).mean())
            for m in args.methods:
                acc = {n: [] for n in names}
                ks = {"r1": [], "rank": []}
                for seed in range(args.seeds):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        clf = SPMLClassifier(m, lr=1e-3, epochs=25, seed=seed).fit(X, Z)
                    # the estimator's own held-out rows (validation_fraction 0.2, seeded permutation)
                    n_val = int(round(len(X) * 0.2))
                    va = np.sort(np.random.default_rng(seed).permutation(len(X))[:n_val])
                    P_val = clf.predict_proba(X[va])
                    k1, kr = estimate_k_observed(Z[va], P_val), k_mean_rank(Z[va], P_val)
                    ks["r1"].append(k1)
                    ks["rank"].append(kr)
                    P = clf.predict_proba(Xte)
                    sets = {names[0]: label_sets(P, rule="expected_k", k=k1),
                            names[1]: label_sets(P, rule="expected_k", k=kr),
                            names[2]: label_sets(P, rule="top_k", k=1),
                            names[3]: label_sets(P, threshold=0.5),
                            ORACLE: label_sets(P, rule="expected_k", k=k_true)}
                    for n, S in sets.items():
                        sc = label_set_scores(Yte, S)
                        acc[n].append((sc["example_f1"], S.sum(1).mean(), sc["micro_f1"]))
                cells = []
                for n in names:
                    f1, size, mi = np.mean(acc[n], axis=0)
                    per_candidate[n].append(f1)
                    micro[n].append(mi)
                    cells.append(f"{f1:.1f} ({size:.2f})")
                row = (f"| {ds} ({Yte.sum(1).mean():.2f}) | {m} | {np.mean(ks['r1']):.2f} | {np.mean(ks['rank']):.2f} | "
                       + " | ".join(cells) + " |")
                print(row, flush=True)
                lines.append(row)
    lines += ["", "| candidate | mean example-F1 | worst example-F1 | worst row | mean micro-F1 | worst micro-F1 |",
              "|---|---:|---:|---|---:|---:|"]
    rows = [r.split(" | ")[0][2:] + " " + r.split(" | ")[1] for r in lines[2:2 + len(per_candidate[names[0]])]]
    for n in names:
        v = per_candidate[n]
        lines.append(f"| {n} | {np.mean(v):.1f} | {min(v):.1f} | {rows[int(np.argmin(v))]} | "
                     f"{np.mean(micro[n]):.1f} | {min(micro[n]):.1f} |")
    best = max(CANDIDATES, key=lambda n: min(per_candidate[n]))
    lines += ["", f"Best worst case (oracle excluded): **{best}**."]
    header = ["# Candidate default label-set rules without full labels", "",
              f"- command: `python benchmarks/default_label_rule_candidates.py"
              f"{' ' if sys.argv[1:] else ''}{shlex.join(sys.argv[1:])}`",
              f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; wall time "
              f"{time.perf_counter() - t0:.0f} s",
              f"- machine: {machine_info()}",
              "- protocol: " + " ".join(__doc__.split("\n\n")[3].split()).replace("``", "`")
              + f" Seeds 0–{args.seeds - 1}; each cell: mean example-F1 over seeds (mean labels per example).",
              ""]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(header + lines) + "\n", encoding="utf-8")
    print("\n".join(lines[-len(names) - 4:]))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
