"""``spml demo``: the main job on the embedded Yeast data.

Prepares Yeast (river's copy of the Mulan set, official split), trains full-label BCE
and every single-positive method registered for the linear setting, selects each
method's learning rate on the validation set, and prints test mAP grouped by label
regime as in Cole et al. Table 1; then ``auto`` (spml train's default), which chooses on
observed labels only, and a takeaway about what a user without full labels gets.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from ..config import TrainConfig
from ..data import load_dataset, prepare_bundle
from ..data.bundle import Bundle
from ..ownership import write_json
from ..labels import REGIME_ORDER, get_regime
from ..methods import METHODS, build_method, get_method_spec
from .protocol import run_grid, select_best



def demo_methods() -> list[str]:
    get_method_spec("an")  # imports every method module
    # the methods of the default bench (the newer ones, e.g. vlpl/gpr that need your own
    # pseudo-scores, are named explicitly with --methods)
    names = [n for n, s in METHODS.items() if s.setting != "finetune" and s.regime in REGIME_ORDER
             and s.in_default_bench]
    # auto (spml train's default) last: what a user without full labels gets
    return sorted(names, key=lambda n: (REGIME_ORDER.index(METHODS[n].regime), n != "an", n)) + [RECIPE]


#: the method ``spml train`` and ``SPMLClassifier`` use by default (a recipe: it chooses on observed labels)
RECIPE = "auto"


def _is_demo_folder(path: Path) -> bool:
    """A demo folder written before the marker existed: its results (rows of methods) or
    its yeast bundle (spmlkit's metadata), not merely files of those names."""
    from ..data.bundle import is_bundle_folder
    from ..io import read_json

    try:
        rows = read_json(path / "demo_results.json").get("rows")
    except (OSError, AttributeError, ValueError):
        rows = None
    return isinstance(rows, list) or is_bundle_folder(path / "yeast-bundle")


def run_demo(out_dir: str | None = None, *, epochs: int = 25, seed: int = 0, quick: bool = False,
             methods: list[str] | None = None, device: str = "auto") -> int:
    """Run the demo; without ``out_dir`` everything goes to a temporary folder that is
    removed at the end (the table is printed; ``--out DIR`` keeps bundle and results)."""
    from .. import ownership

    ownership.register_kind("demo", "a demo folder", layout=("demo_results.json", "yeast-bundle"),
                            is_ours=_is_demo_folder)
    if out_dir:
        ownership.claim(out_dir, "demo")  # never a folder of the user's
        return _run_demo(Path(out_dir), epochs=epochs, seed=seed, quick=quick, methods=methods, device=device,
                         keep=True)
    tmp = ownership.temporary_folder("spml-demo-", "demo")
    try:
        return _run_demo(tmp, epochs=epochs, seed=seed, quick=quick, methods=methods, device=device, keep=False)
    finally:
        ownership.discard(tmp)


def _run_demo(root: Path, *, epochs: int, seed: int, quick: bool, methods: list[str] | None, device: str,
              keep: bool) -> int:
    from ..progress import progress

    t0 = time.perf_counter()
    bpath = root / "yeast-bundle"
    bundle = Bundle(bpath) if (bpath / "meta.json").exists() else prepare_bundle(
        load_dataset("yeast"), bpath, seed=seed, log=lambda m: print(m, file=sys.stderr))
    print(bundle.summary())
    print(f"  (the data set's own train/test split is used; {bundle.meta.get('val_fraction', 0.2):.0%} of the "
          "training examples are held out as validation, to choose each method's learning rate and epoch; every "
          "training example keeps one randomly chosen positive label, as in Cole et al.)")
    lrs = (1e-2, 1e-3) if quick else (1e-2, 1e-3, 1e-4)
    epochs = min(epochs, 3) if quick else epochs
    if methods is None:
        methods = ["bce", "an", RECIPE] if quick else demo_methods()
    for m in methods:
        get_method_spec(m)  # unknown names fail before any training
    seeds = (seed,) if quick else (seed, seed + 1, seed + 2)
    rows = []
    bar = progress(len(methods), "demo", unit="method")
    for name in methods:
        bar.set_postfix(method=name)
        cfg = TrainConfig(method=name, epochs=epochs, batch_size=8, seed=seed, device=device)
        recipe = bool(build_method(name).candidates)  # tries its own learning rates: one grid point
        results = run_grid(bundle, cfg, lrs=lrs[:1] if recipe else lrs, batch_sizes=(8,), seeds=seeds)
        sel = select_best(results)
        rows.append({"method": name, "regime": METHODS[name].regime, "lr": None if recipe else sel.lr,
                     "batch_size": sel.batch_size, "val_map": sel.val_mean, "test_map": sel.test_mean,
                     "test_std": sel.test_std, "train_map": sel.train_mean,
                     "selection": results[0].selection})
        bar.update(1)
    bar.close()
    print()
    print(f"Yeast (train {bundle.size('train')}, val {bundle.size('val')}, test {bundle.size('test')}), "
          f"linear head, {epochs} epochs, lr chosen on mean validation mAP from {list(lrs)}, batch 8, "
          f"seeds {list(seeds)}; test mAP mean ± std over seeds")
    print(f"{'labels':18s} {'method':14s} {'lr':>7s} {'val mAP':>8s} {'test mAP':>14s} {'train mAP':>10s}")
    last = None
    observed = False
    for r in rows:
        label = get_regime(r["regime"]).table_label if r["regime"] != last else ""
        last = r["regime"]
        train = f"{r['train_map']:10.2f}" if r["train_map"] is not None else f"{'':10s}"
        test = f"{r['test_map']:.2f} ± {r['test_std']:.2f}"
        lr = "own" if r["lr"] is None else f"{r['lr']:.0e}"
        mark = "*" if r.get("selection") == "observed_map" else " "
        observed = observed or mark == "*"
        print(f"{label:18s} {r['method']:14s} {lr:>7s} {r['val_map']:7.2f}{mark} {test:>14s} {train}")
    print("\n(train mAP = mAP of the model's predictions on the training set against its full labels, "
          "Cole Table 2)")
    if observed:
        print("(* chosen on observed labels only, as without full labels: its validation number is the "
              "observed-label mAP — unobserved labels count as negatives — lower than, and not comparable to, "
              "the others' full-label validation mAP; lr 'own': auto tries 1e-2, 1e-3 and 1e-4 per member)")
    for line in takeaway(rows):
        print(line)
    if keep:
        write_json(root / "demo_results.json", {"rows": rows, "epochs": epochs, "lrs": list(lrs),
                                                "seeds": list(seeds)})
        print(f"results: {root / 'demo_results.json'}  ({time.perf_counter() - t0:.0f} s)")
    else:
        print(f"({time.perf_counter() - t0:.0f} s; 'spml demo --out DIR' keeps the bundle and the results)")
    return 0


def takeaway(rows: list[dict]) -> list[str]:
    """The result a user without full labels gets (``auto``, spml train's default) against
    AN and full labels, and the next command to try.  A method picked on full-label
    validation (every other row here) is named only as what it is: a choice such a user
    cannot make."""
    by = {r["method"]: r for r in rows}
    single = [r for r in rows if r["regime"] == "single_positive" and r["method"] != RECIPE]
    lines = []
    if RECIPE in by or single:
        if RECIPE in by:
            pick = by[RECIPE]
            head = (f"Takeaway: with one positive label per example and no full labels, spml train's default "
                    f"({RECIPE}, tuned on observed labels only) reaches {pick['test_map']:.1f} test mAP")
        else:
            pick = max(single, key=lambda r: r["val_map"])
            head = (f"Takeaway: with one positive label per example, {pick['method']} (best on full-label "
                    f"validation) reaches {pick['test_map']:.1f} test mAP")
        parts = [head]
        if "an" in by and pick["method"] != "an":
            parts.append(f"vs {by['an']['test_map']:.1f} for assume-negative (an)")
        if "bce" in by:
            parts.append(f"and {by['bce']['test_map']:.1f} with full labels (bce)")
        lines.append(" ".join(parts) + ".")
        if RECIPE in by and single:
            best = max(single, key=lambda r: r["val_map"])
            if best["test_map"] > pick["test_map"]:
                lines.append(f"({best['method']} scores {best['test_map']:.1f} here, but it was picked on full "
                             "validation labels you will not have, and no single method is best on every data "
                             "set: README 'Which method to use'.)")
    lines.append("Next: 'spml prepare yeast -o bundles/yeast' then 'spml train bundles/yeast -o runs/x' (auto by "
                 "default; -m <method> for another); your own data: README 'Your own single-positive data'.")
    return lines
