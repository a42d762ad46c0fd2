"""How should ``auto`` choose and weigh its members?  Every strategy scored on the design
pool (``benchmarks/recipe_pool.py``: development draws, validation logits only), **without
test labels**, by repeated 2-fold **cross-fitting on the validation split**:

* the validation rows are split at random into halves A and B;
* the strategy sees the **observed** labels of A only (single positives): it picks each
  member's learning rate and the members' weights there;
* it is scored by the **full-label** mAP of the weighted mean probability on B;
* then A and B swap; ``--repeats`` random splits.

References on the same halves: ``an`` (AN, lr by full labels on A); ``full-label choice``
(the member and lr with the best full-label mAP on A: the method a user with full
validation labels would pick per dataset); ``oracle`` (the best member on B itself: not
attainable, an upper reference).  Columns: mAP on B minus AN's, averaged over the draws
and splits; ``share`` is mean(strategy − AN) / mean(oracle − AN) per dataset, averaged.

    python benchmarks/recipe_strategies.py [--work benchmarks/results/recipe-pool/work] [--out FILE]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "benchmarks" / "results" / "recipe-pool" / "work"
NEEDS_K = {"role", "epr"}


def load_pool(folder: Path) -> tuple[dict, dict]:
    lab = np.load(folder / "labels.npz", allow_pickle=False)
    members = {}
    for f in sorted(folder.glob("*--*.npz")):
        d = np.load(f, allow_pickle=False)
        meta = json.loads(str(d["meta"]))
        members[f.stem] = {"logits": d["val_logits"].astype(np.float64), **meta}
    return {"Y": lab["Y_val"] == 1, "Z": lab["Z_val"]}, members


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def strategies():
    from spmlkit.training import ensemble as E

    def topk(k):
        def f(P, Z):
            s = E.member_scores(P, Z)
            w = np.zeros(len(s))
            w[np.argsort(-s)[:k]] = 1.0 / k
            return w
        return f

    return {
        "select": E.select_best,
        "mean": E.uniform,
        "top2": topk(2),
        "top3": topk(3),
        "greedy": E.ensemble_selection,
        "bagged-greedy": E.bagged_ensemble_selection,
    }


POOLS = {
    "v1 (l1r,em-apl,wan,ll-ct)": ["l1r--linear", "em-apl--linear", "wan--linear", "ll-ct--linear"],
    "linear": None,  # every linear member without k
    "all": None,  # every member without k, linear and MLP
    "core": ["em-apl--linear", "gr--linear", "ll-r--linear", "wan--linear", "an--linear", "l1r--linear",
             "em-apl--mlp", "gr--mlp", "wan--mlp", "an--mlp"],
    "linear6": ["em-apl--linear", "gr--linear", "ll-r--linear", "wan--linear", "an--linear", "l1r--linear"],
    "mlp5": ["em-apl--mlp", "gr--mlp", "wan--mlp", "an--mlp", "ll-r--mlp"],
    "mix6": ["em-apl--linear", "gr--linear", "wan--linear", "em-apl--mlp", "wan--mlp", "an--mlp"],
    "lin4a": ["em-apl--linear", "gr--linear", "wan--linear", "l1r--linear"],
    "lin4b": ["em-apl--linear", "gr--linear", "wan--linear", "ll-r--linear"],
    "lin4c": ["em-apl--linear", "wan--linear", "l1r--linear", "an--linear"],
    "lin5": ["em-apl--linear", "gr--linear", "wan--linear", "l1r--linear", "ll-r--linear"],
    "mix4": ["em-apl--linear", "wan--linear", "em-apl--mlp", "wan--mlp"],
    "lin3": ["em-apl--linear", "gr--linear", "wan--linear"],
    "def6": ["em-apl--linear", "gr--linear", "wan--linear", "l1r--linear", "em-apl--mlp", "wan--mlp"],
    "lin4d": ["em-apl--linear", "gr--linear", "wan--linear", "an--linear"],
}


def pool_members(name: str, available: list[str]) -> list[str]:
    if name == "linear":
        return [m for m in available if m.endswith("--linear") and m.split("--")[0] not in NEEDS_K]
    if name == "all":
        return [m for m in available if m.split("--")[0] not in NEEDS_K]
    return [m for m in POOLS[name] if m in available]


def analyse(work: Path, repeats: int, pools: list[str], log=print, lrs=None, only=None) -> dict:
    from spmlkit.metrics import mean_average_precision
    from spmlkit.training.ensemble import observed_map

    def full_map(Y, P):
        return mean_average_precision(Y, P).map

    strat = {k: v for k, v in strategies().items() if only is None or k in only}
    out = defaultdict(lambda: defaultdict(list))  # row -> dataset -> [delta vs AN]
    share = defaultdict(list)  # dataset -> [oracle - AN]
    for folder in sorted((work / "pool").iterdir()):
        if not (folder / "labels.npz").exists():
            continue
        key = folder.name
        dataset = key.rsplit("-s", 1)[0]
        lab, members = load_pool(folder)
        Y, Z = lab["Y"], lab["Z"]
        n = len(Y)
        names = list(members)
        t0 = time.perf_counter()
        for r in range(repeats):
            perm = np.random.default_rng(1000 + r).permutation(n)
            halves = (perm[: n // 2], perm[n // 2:])
            for A, B in (halves, halves[::-1]):
                obsA = Z[A] == 1
                if not obsA.any() or not Y[B].any():
                    continue
                probs = {m: sigmoid(members[m]["logits"]) for m in names}  # (lrs, N, L)

                def pick(m, by_full):
                    allowed = [lrs is None or any(abs(lr - a) < 1e-12 for a in lrs) for lr in members[m]["lrs"]]
                    scores = [full_map(Y[A], p[A]) if by_full else observed_map(Z[A], p[A]) if np.isfinite(p).all()
                              else -np.inf for p in probs[m]]
                    scores = [s if ok and np.isfinite(s) and np.isfinite(p).all() else -np.inf
                              for s, p, ok in zip(scores, probs[m], allowed)]
                    return probs[m][int(np.argmax(scores))]

                chosen_obs = {m: pick(m, False) for m in names}
                chosen_full = {m: pick(m, True) for m in names}
                on_b = {m: full_map(Y[B], chosen_obs[m][B]) for m in names}
                on_b_full = {m: full_map(Y[B], chosen_full[m][B]) for m in names}
                an = on_b_full["an--linear"]
                oracle = max(max(v for k, v in on_b_full.items() if np.isfinite(v)),
                             max(v for k, v in on_b.items() if np.isfinite(v)))
                rows = {}
                for m in names:
                    rows[f"single {m} (lr observed)"] = on_b[m]
                    rows[f"single {m} (lr full)"] = on_b_full[m]
                fa = {m: full_map(Y[A], chosen_full[m][A]) for m in names if m.split("--")[0] not in NEEDS_K}
                rows["REF full-label choice of member"] = on_b_full[max(fa, key=lambda m: fa[m])]
                rows["REF oracle (best member on B)"] = oracle
                for pool in pools:
                    pm = pool_members(pool, names)
                    P = np.stack([chosen_obs[m] for m in pm])
                    for sname, fn in strat.items():
                        w = fn(P[:, A], Z[A])
                        comb = np.tensordot(w, P[:, B], axes=1)
                        rows[f"{sname} @ {pool}"] = full_map(Y[B], comb)
                for row, v in rows.items():
                    out[row][dataset].append(v - an)
                share[dataset].append(oracle - an)
        log(f"{key}: {time.perf_counter() - t0:.1f} s")
    return {"delta": out, "share": share}


def pool_cost(work: Path) -> tuple[float, int]:
    """(seconds the pool's member runs took, summed; number of dataset-draws)."""
    total, n = 0.0, 0
    for folder in (work / "pool").iterdir():
        if not (folder / "labels.npz").exists():
            continue
        n += 1
        for f in folder.glob("*--*.npz"):
            total += float(json.loads(str(np.load(f, allow_pickle=False)["meta"]))["seconds"])
    return total, n


def render(res: dict, argv: list[str], wall: float, work: Path = WORK) -> str:
    from spmlkit.experiments.machine import machine_info

    delta, share = res["delta"], res["share"]
    datasets = sorted({d for row in delta.values() for d in row})
    rows = sorted(delta, key=lambda r: -np.mean([np.mean(delta[r][d]) for d in datasets if d in delta[r]]))
    lines = ["# How `auto` chooses and weighs: strategies on the design pool (no test labels)", "",
             f"- command: `python benchmarks/recipe_strategies.py {' '.join(shlex.quote(a) for a in argv)}`",
             f"- date: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
             f"- machine: {machine_info()}", "- device: cpu (numpy only; reads the pool, trains nothing)",
             f"- wall time: {wall:.0f} s (this analysis); the pool it reads was trained by "
             f"`python benchmarks/recipe_pool.py --data-root ../shared/data` (tabular and COCO sets, draws 5 and 6) and "
             f"`python benchmarks/recipe_pool.py --datasets --voc <bundle> --draws 5 --batch-size 16 --methods ...` "
             f"(VOC 2007, draw 5): {pool_cost(work)[0] / 60:.0f} min of member runs over {pool_cost(work)[1]} "
             "dataset-draws, on the same machine under load",
             "- protocol: " + " ".join(__doc__.split("\n\n")[1].split()),
             "", "mAP on B − AN's (full-label lr), mean over development draws and splits; 'avg' over datasets; "
             "'share' = mean over datasets of mean(row − AN) / mean(oracle − AN).", "",
             "| row | avg | share | worst | " + " | ".join(datasets) + " |",
             "|---|---:|---:|---:|" + "---:|" * len(datasets)]
    for r in rows:
        per = [np.mean(delta[r][d]) if d in delta[r] else np.nan for d in datasets]
        sh = np.nanmean([np.mean(delta[r][d]) / np.mean(share[d]) for d in datasets
                         if d in delta[r] and np.mean(share[d]) > 0])
        lines.append(f"| {r} | {np.nanmean(per):+.2f} | {100 * sh:.0f}% | {np.nanmin(per):+.2f} | "
                     + " | ".join(f"{v:+.2f}" for v in per) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=WORK)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pools", nargs="*", default=list(POOLS))
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--lrs", nargs="*", type=float, default=None,
                    help="the learning rates a member may choose (default: all in the pool)")
    ap.add_argument("--strategies", nargs="*", default=None, help="default: all")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    res = analyse(args.work, args.repeats, args.pools, log=lambda m: print(m, file=sys.stderr, flush=True),
                  lrs=args.lrs, only=args.strategies)
    text = render(res, argv, time.perf_counter() - t0, args.work)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
