"""``spml demo``: the main job, on data embedded in the package.

Default: **PASCAL VOC 2007** as EfficientNet-Lite0 features (the default backbone at
224 px; ``voc2007-lite0``, embedded as float16 with the official split) — the papers'
benchmark, where single-positive methods matter.  Prepares it (one uniformly drawn
positive per training image, 20% of the official train split held out for validation),
trains full-label BCE, assume-negative, a few of the papers' methods and ``auto`` (spml
train's default, which chooses on observed labels only) in the linear setting with a
small learning-rate grid and 3 seeds, prints test mAP grouped by label regime as in Cole
et al. Table 1, and a takeaway: what ``auto`` reaches without full labels, against AN
and full labels, and the share of that gap it closes.

``--dataset yeast``: the former main job (the Mulan Yeast set from the ``river``
package, every single-positive method of the default bench).

Progress: a line (or a bar) whose time left is weighted by each method's measured cost
(:data:`COSTS`, ``demo_costs.json``, written by ``python benchmarks/first_contact.py``):
``auto`` trains several methods and costs several times a plain one, so counting methods
would say "about 6 s left" with a minute to go.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .. import ownership
from ..config import TrainConfig
from ..data import load_dataset, prepare_bundle
from ..data.bundle import Bundle, is_bundle_folder
from ..errors import UnknownNameError
from ..io import read_json
from ..ownership import write_json
from ..labels import REGIME_ORDER, get_regime
from ..methods import METHODS, build_method, get_method_spec
from ..methods.recipe import is_recipe
from ..progress import advance_to, progress
from .protocol import run_grid, select_best

#: the method ``spml train`` and ``SPMLClassifier`` use by default (a recipe: it chooses on observed labels)
RECIPE = "auto"


def demo_methods() -> list[str]:
    """Every single-positive method of the default bench (the Yeast demo), grouped by regime
    (``bce`` first, ``an`` first of its regime), then ``auto``."""
    get_method_spec("an")  # imports every method module
    # the methods of the default bench (the newer ones, e.g. vlpl/gpr that need your own
    # pseudo-scores, are named explicitly with --methods)
    names = [n for n, s in METHODS.items() if s.setting != "finetune" and s.regime in REGIME_ORDER
             and s.in_default_bench]
    # auto (spml train's default) last: what a user without full labels gets
    return sorted(names, key=lambda n: (REGIME_ORDER.index(METHODS[n].regime), n != "an", n)) + [RECIPE]


@dataclass(frozen=True)
class DemoSpec:
    """One demo: the embedded dataset, its methods (None: :func:`demo_methods`), the
    learning rates tried (each method keeps the best by mean validation mAP), whether
    features are standardised (None: spmlkit's default for the bundle), and what the
    table's title calls the data."""

    dataset: str
    title: str
    methods: tuple | None
    lrs: tuple = (1e-2, 1e-3, 1e-4)
    batch_size: int = 8
    standardize: bool | None = None
    next_step: str = ""


#: the demos by ``--dataset``; the first is the default
DEMOS = {
    # Cole et al.'s four losses beyond AN, Zhou et al.'s EM+APL and Kim et al.'s Large-Loss
    # correction: a method from each paper of the linear setting.  Backbone features are
    # fed raw, as in the papers and the VOC bench (benchmarks/results/voc2007-linear).
    # The embedded features reach 'spml train' as a table of numbers, which it standardises
    # by default, so the next step names --no-standardize: the command then trains the
    # demo's own auto row (seed 0 of its three) rather than a differently preprocessed one
    # (80.5 against 82.1 test mAP; tests/integration/test_demo_next_step.py).
    "voc2007-lite0": DemoSpec(
        "voc2007-lite0", "PASCAL VOC 2007 as EfficientNet-Lite0 features at 224 px",
        ("bce", "an", "an-ls", "wan", "epr", "role", "em-apl", "ll-ct", RECIPE), standardize=False,
        next_step="Next: 'spml prepare voc2007-lite0 -o bundles/voc' then 'spml train bundles/voc --no-standardize "
                  "-o runs/x' (auto by default, seed 0 of the auto row; --no-standardize feeds the backbone features "
                  "raw, as this demo and the papers do; -m <method> for another); your own data: README 'Your own "
                  "single-positive data'."),
    "yeast": DemoSpec(
        "yeast", "Yeast", None,
        next_step="Next: 'spml prepare yeast -o bundles/yeast' then 'spml train bundles/yeast -o runs/x' (auto by "
                  "default; -m <method> for another); your own data: README 'Your own single-positive data'."),
}
DEFAULT_DEMO = next(iter(DEMOS))

#: measured seconds per method of each demo (``demo_costs.json``, package data): the
#: weights of the progress's time left
COSTS_FILE = Path(__file__).with_name("demo_costs.json")


def method_costs(dataset: str, methods: list[str]) -> list[float]:
    """Relative cost of each of ``methods`` in demo ``dataset``: the seconds measured for it
    (``demo_costs.json``); a method without a measurement costs the median of the measured
    ones (a recipe: the sum of its members' or, without them, 4x the median)."""
    try:
        measured = json.loads(COSTS_FILE.read_text(encoding="utf-8"))["demos"].get(dataset, {})
    except (OSError, ValueError, KeyError):
        measured = {}
    measured = {k: float(v) for k, v in measured.items() if isinstance(v, (int, float)) and v > 0}
    typical = statistics.median(measured.values()) if measured else 1.0
    out = []
    for m in methods:
        if m in measured:
            out.append(measured[m])
        elif is_recipe(build_method(m)):
            members = [name for name, _ in build_method(m).members]
            out.append(sum(measured.get(c, typical) for c in members) if measured else 4.0 * typical)
        else:
            out.append(typical)
    return out


def run_demo(out_dir: str | None = None, *, epochs: int = 25, seed: int = 0, quick: bool = False,
             methods: list[str] | None = None, device: str = "auto", dataset: str = DEFAULT_DEMO) -> int:
    """Run the demo; without ``out_dir`` everything goes to a temporary folder that is
    removed at the end (the table is printed; ``--out DIR`` keeps bundle and results)."""
    spec = get_demo(dataset)
    ownership.register_kind("demo", "a demo folder", layout=("demo_results.json", "*-bundle"),
                            is_ours=_is_demo_folder)
    if out_dir:
        ownership.claim(out_dir, "demo")  # never a folder of the user's
        return _run_demo(Path(out_dir), spec, epochs=epochs, seed=seed, quick=quick, methods=methods, device=device,
                         keep=True)
    tmp = ownership.temporary_folder("spml-demo-", "demo")
    try:
        return _run_demo(tmp, spec, epochs=epochs, seed=seed, quick=quick, methods=methods, device=device,
                         keep=False)
    finally:
        ownership.discard(tmp)


def _is_demo_folder(path: Path) -> bool:
    """A demo folder written before the marker existed: its results (rows of methods) or
    one of its bundles (spmlkit's metadata), not merely files of those names."""
    try:
        rows = read_json(path / "demo_results.json").get("rows")
    except (OSError, AttributeError, ValueError):
        rows = None
    return isinstance(rows, list) or any(is_bundle_folder(path / f"{d}-bundle") for d in DEMOS)


def get_demo(dataset: str) -> DemoSpec:
    if dataset not in DEMOS:
        raise UnknownNameError("demo dataset", dataset, DEMOS)
    return DEMOS[dataset]


def demo_rows(bundle, spec: DemoSpec, *, methods: list[str], lrs, seeds, epochs: int, seed: int, device: str,
              bar=None, costs: list[float] | None = None) -> list[dict]:
    """Train ``methods`` on ``bundle`` under the demo's protocol; one row per method (the
    selected lr, mean validation / test / training-set mAP over ``seeds``, its seconds).
    ``bar`` advances by each method's cost as it finishes."""
    rows = []
    done = 0.0
    for i, name in enumerate(methods):
        t0 = time.perf_counter()
        if bar is not None:
            bar.set_postfix(method=name)
        recipe = is_recipe(build_method(name))  # tries its own learning rates: one grid point
        cfg = TrainConfig(method=name, epochs=epochs, batch_size=spec.batch_size, seed=seed, device=device,
                          standardize=spec.standardize)
        results = run_grid(bundle, cfg, lrs=lrs[:1] if recipe else lrs, batch_sizes=(spec.batch_size,), seeds=seeds)
        sel = select_best(results)
        rows.append({"method": name, "regime": METHODS[name].regime, "lr": None if recipe else sel.lr,
                     "batch_size": sel.batch_size, "val_map": sel.val_mean, "test_map": sel.test_mean,
                     "test_std": sel.test_std, "train_map": sel.train_mean,
                     "selection": results[0].selection, "seconds": round(time.perf_counter() - t0, 2)})
        if bar is not None:
            done += costs[i] if costs else 1.0
            advance_to(bar, int(round(done)))
    return rows


def _run_demo(root: Path, spec: DemoSpec, *, epochs: int, seed: int, quick: bool, methods: list[str] | None,
              device: str, keep: bool) -> int:
    t0 = time.perf_counter()
    bpath = root / f"{spec.dataset}-bundle"
    bundle = Bundle(bpath) if (bpath / "meta.json").exists() else prepare_bundle(
        load_dataset(spec.dataset), bpath, seed=seed, log=lambda m: print(m, file=sys.stderr))
    print(bundle.summary())
    print(f"  (the data set's own train/test split is used; {bundle.meta.get('val_fraction', 0.2):.0%} of the "
          "training examples are held out as validation, to choose each method's learning rate and epoch; every "
          "training example keeps one randomly chosen positive label, as in Cole et al.)")
    lrs = spec.lrs[:2] if quick else spec.lrs
    epochs = min(epochs, 3) if quick else epochs
    if methods is None:
        methods = ["bce", "an", RECIPE] if quick else list(spec.methods or demo_methods())
    for m in methods:
        get_method_spec(m)  # unknown names fail before any training
    seeds = (seed,) if quick else (seed, seed + 1, seed + 2)
    # progress in per-mille of the measured work: the time left is weighted by each method's cost
    costs = method_costs(spec.dataset, methods)
    scale = 1000.0 / sum(costs)
    bar = progress(1000, "demo", unit="work")
    rows = demo_rows(bundle, spec, methods=methods, lrs=lrs, seeds=seeds, epochs=epochs, seed=seed, device=device,
                     bar=bar, costs=[c * scale for c in costs])
    bar.close()
    print()
    for line in table_lines(rows, spec, bundle, epochs=epochs, lrs=lrs, seeds=seeds):
        print(line)
    for line in takeaway(rows, next_step=spec.next_step):
        print(line)
    wall = time.perf_counter() - t0
    if keep:
        write_json(root / "demo_results.json", {"dataset": spec.dataset, "rows": rows, "epochs": epochs,
                                                "lrs": list(lrs), "seeds": list(seeds), "seconds": round(wall, 1)})
        print(f"results: {root / 'demo_results.json'}  ({wall:.0f} s)")
    else:
        print(f"({wall:.0f} s; 'spml demo --out DIR' keeps the bundle and the results)")
    return 0


def table_lines(rows: list[dict], spec: DemoSpec, bundle, *, epochs: int, lrs, seeds) -> list[str]:
    """The demo's table (Cole et al. Table 1's layout) and its notes."""
    lines = [f"{spec.title} (train {bundle.size('train')}, val {bundle.size('val')}, test {bundle.size('test')}), "
             f"linear head, {epochs} epochs, lr chosen on mean validation mAP from {list(lrs)}, batch "
             f"{spec.batch_size}, seeds {list(seeds)}; test mAP mean ± std over seeds",
             f"{'labels':18s} {'method':14s} {'lr':>7s} {'val mAP':>8s} {'test mAP':>14s} {'train mAP':>10s}"]
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
        lines.append(f"{label:18s} {r['method']:14s} {lr:>7s} {r['val_map']:7.2f}{mark} {test:>14s} {train}")
    lines.append("\n(train mAP = mAP of the model's predictions on the training set against its full labels, "
                 "Cole Table 2)")
    if observed:
        lines.append("(* chosen on observed labels only, as without full labels: its validation number is the "
                     "observed-label mAP — unobserved labels count as negatives — lower than, and not comparable to, "
                     "the others' full-label validation mAP; lr 'own': auto tries its own learning rates per member)")
    return lines


def takeaway(rows: list[dict], next_step: str | None = None) -> list[str]:
    """The result a user without full labels gets (``auto``, spml train's default) against
    AN and full labels — with the share of the AN → full-label gap it closes — and the next
    command to try.  A method picked on full-label validation (every other row here) is
    named only as what it is: a choice such a user cannot make."""
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
        if "bce" in by:
            full, pt = by["bce"]["test_map"], pick["test_map"]
            gap = f"{full - pt:.1f} mAP below full labels" if full > pt else f"{pt - full:.1f} mAP above full labels"
            share = ""
            if "an" in by and pick["method"] != "an" and full > by["an"]["test_map"]:
                closed = (pt - by["an"]["test_map"]) / (full - by["an"]["test_map"]) * 100
                share = (f", closing {closed:.0f}% of the gap between assume-negative and full labels" if closed >= 1
                         else ", no better than assume-negative here")
            lines.append(f"That is {gap}{share}" + (" — without seeing one full label." if RECIPE in by else "."))
        if RECIPE in by and single:
            best = max(single, key=lambda r: r["val_map"])
            if best["test_map"] > pick["test_map"]:
                lines.append(f"({best['method']} scores {best['test_map']:.1f} here, but it was picked on full "
                             "validation labels you will not have, and no single method is best on every data "
                             "set: README 'Which method to use'.)")
    lines.append(next_step if next_step is not None else DEMOS["yeast"].next_step)
    return lines
