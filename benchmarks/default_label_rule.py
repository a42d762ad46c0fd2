#!/usr/bin/env python
"""Issue 15: the default label-set rule without full labels vs a fixed threshold 0.5.

For each dataset (single-positive bundles: ``spml prepare NAME --regime single_positive
--seed 0``) and method, an ``SPMLClassifier`` is trained on the training split's
*observations only* (1e-3, 25 epochs, 20% of the rows held out as observed validation,
seeds 0-2; ``role`` is given the true k, since it needs one).  On the test split, against
its full labels, we report the mean set size and example-based F1 of

* the default rule (``expected_k`` with k = 1 / observed recall@1 on the held-out
  observations; for ``role`` the given k),
* ``threshold`` 0.5 (the previous default), its share of empty sets, and whether
  :func:`spmlkit.practitioner.labelsets.label_set_warning` flags it,
* ``expected_k`` with the true k (an oracle, for reference).

    OMP_NUM_THREADS=1 python benchmarks/default_label_rule.py --data-root ../shared/data

Writes ``benchmarks/results/default_label_rule.md`` (``--out``) with the command, date,
machine and wall time, the table and the averages docs/practitioner.md quotes.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
import warnings
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--data-root", default="../shared/data")
    ap.add_argument("--datasets", nargs="+", default=["yeast", "scene", "emotions"])
    ap.add_argument("--methods", nargs="+", default=["an", "em", "em-apl", "role"])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "default_label_rule.md"))
    args = ap.parse_args()
    import shlex
    import sys
    import time

    t0 = time.perf_counter()
    lines: list[str] = []
    summary = {"default": [], "thr": [], "warned": 0, "runs": 0}

    def emit(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    from spmlkit import SPMLClassifier
    from spmlkit.cli import main as spml
    from spmlkit.data import Bundle
    from spmlkit.practitioner.labelsets import label_set_warning, label_sets
    from spmlkit.metrics import label_set_scores

    emit("| data (test k) | method | k of the default | default: labels / ex. | default: example-F1 | "
         "threshold 0.5: labels / ex. | empty | example-F1 | warned | expected-k, true k: example-F1 |")
    emit("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for ds in args.datasets:
            with contextlib.redirect_stdout(io.StringIO()):
                spml(["prepare", ds, "--data-root", args.data_root, "-o", f"{tmp}/{ds}", "--regime",
                      "single_positive", "--seed", "0"])
            b = Bundle(Path(tmp) / ds)
            Xtr, Ztr, Ytr = b.features("train"), b.observations("train"), b.labels("train")
            Xte, Yte = b.features("test"), b.labels("test")
            k_true = float(Ytr.sum(1).mean())
            for m in args.methods:
                acc = {"k": [], "default": [], "thr": [], "truek": []}
                for seed in range(args.seeds):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        clf = SPMLClassifier(m, lr=1e-3, epochs=25, seed=seed,
                                             expected_positives=k_true if m == "role" else None).fit(Xtr, Ztr)
                    P = clf.predict_proba(Xte)
                    k = clf.model_.label_sets["k"]
                    acc["k"].append(k)
                    for name, S in (("default", clf.model_.label_sets_from_proba(P)),
                                    ("thr", label_sets(P, threshold=0.5)),
                                    ("truek", label_sets(P, rule="expected_k", k=k_true))):
                        acc[name].append((S.sum(1).mean(), 100 * (~S.any(1)).mean(),
                                          label_set_scores(Yte, S)["example_f1"], label_set_warning(S, k) is not None))
                d, t, o = (np.mean(acc[n], axis=0) for n in ("default", "thr", "truek"))
                warned = sum(w for *_, w in acc["thr"])
                summary["default"].append(d[2])
                summary["thr"].append(t[2])
                summary["warned"] += warned
                summary["runs"] += args.seeds
                emit(f"| {ds} ({Yte.sum(1).mean():.2f}) | {m} | {np.mean(acc['k']):.2f}"
                     f"{' (given)' if m == 'role' else ''} | {d[0]:.2f} | {d[2]:.1f} | {t[0]:.2f} | {t[1]:.0f}% | "
                     f"{t[2]:.1f} | {warned}/{args.seeds} | {o[2]:.1f} |")
    from spmlkit.experiments.machine import machine_info

    n = len(summary["default"])
    emit("")
    emit(f"Over the {n} rows the default's example-F1 is {np.mean(summary['default']):.1f} on average against "
         f"{np.mean(summary['thr']):.1f} for threshold 0.5; worst row {min(summary['default']):.1f} against "
         f"{min(summary['thr']):.1f}; threshold 0.5 was warned about in {summary['warned']} of {summary['runs']} runs.")
    header = ["# The default label-set rule without full labels vs threshold 0.5", "",
              f"- command: `python benchmarks/default_label_rule.py{' ' if sys.argv[1:] else ''}{shlex.join(sys.argv[1:])}`",
              f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; wall time "
              f"{time.perf_counter() - t0:.0f} s",
              f"- machine: {machine_info()}",
              "- protocol: " + " ".join(__doc__.split("\n\n")[1].split()).replace("``", "`") + " the default "
              "rule (expected-k, k = 1 / observed recall@1 on the held-out observations; role: the given k), "
              "threshold 0.5, and expected-k with the true k", ""]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(header + lines) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
