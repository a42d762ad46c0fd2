"""``report.md`` and ``curves.png`` for a run folder.

Every run folder written by :func:`spmlkit.practitioner.run.run_training` gets

* ``curves.png`` — training loss and validation score per epoch (matplotlib's Agg
  canvas, no pyplot and no global backend change; written atomically);
* ``report.md`` — the configuration, the per-epoch table behind the curves, the final
  metrics and the quality of the label sets at the model's threshold rule (and the
  other applicable rules), on the test split against full labels when it has them,
  otherwise against the observations only — said so in a banner and in every line.
"""
from __future__ import annotations

import datetime as _dt
import math
from pathlib import Path

import numpy as np

from .. import ownership
from .._version import __version__
from ..device import describe
from .evaluation import (OBSERVED_NOTE, SetTally as _SetTally, evaluate_label_sets, format_label_set_quality,
                         format_scores)
from ..io import read_jsonl
from .labelsets import label_set_stats_warning, label_sets, label_sets_from_logits, round_k, rule_k_estimate
from ..ownership import atomic_path, write_text
from ..sparse_labels import as_sparse

#: what a presence-only selection criterion compares (printed beside its value)
SELECTION_MEANING = {"target_group_auc": "each species' records against the other species' records",
                     "background_auc": "each species' records against the background rows"}


# ------------------------------------------------------------- label-set quality
def label_set_quality(P, *, Y=None, Z=None, spec: dict) -> list[dict]:
    """Quality of label sets from probabilities ``P`` under the stored rule ``spec`` and
    the other rules that apply.  Each row: ``rule`` (a readable description),
    ``default`` (True for ``spec``'s rule) and the :func:`evaluate_label_sets` numbers."""
    return [{"rule": desc, "default": i == 0, **evaluate_label_sets(label_sets(P, rule=rule, **opts), Y=Y, Z=Z)}
            for i, (rule, opts, desc) in enumerate(_quality_rules(spec))]


def label_set_quality_streamed(chunks, *, Y=None, Z=None, spec: dict, logits: bool = False) -> list[dict]:
    """:func:`label_set_quality` from probability blocks: ``chunks()`` yields
    ``(start_row, P_block)``; ``Y`` / ``Z`` dense or sparse.  Every rule is applied per
    example, so each block's sets are computed and tallied, then dropped: memory
    O(block × L) instead of the ``N × L`` sets (and equal numbers, tested).  ``logits``:
    the blocks are float32 logits, and the rules apply to them
    (:func:`~spmlkit.practitioner.labelsets.label_sets_from_logits`: the same sets, no
    float64 block)."""
    apply = label_sets_from_logits if logits else label_sets
    truth = as_sparse(Y if Y is not None else Z, dtype=bool if Y is not None else np.int8)
    rules = _quality_rules(spec)
    tallies = [_SetTally(truth.n_labels, observed=Y is None) for _ in rules]
    for start, P in chunks():
        T = truth.dense(slice(start, start + len(P)))
        for (rule, opts, _), tally in zip(rules, tallies):
            tally.add(apply(P, rule=rule, **opts), T)
    return [{"rule": desc, "default": i == 0, **{k: v for k, v in t.result().items()}}
            for i, ((_, _, desc), t) in enumerate(zip(rules, tallies))]


def _quality_rules(spec: dict) -> list[tuple[str, dict, str]]:
    """The rules :func:`label_set_quality` compares: the stored one first, then the others
    that apply, each once: ``(rule, options, description)``."""
    candidates = [("threshold", {"threshold": 0.5}), ("top_k", {"k": 1}), ("threshold", {"threshold": 0.5,
                                                                               "min_labels": 1})]
    if rule_k_estimate(spec) is not None:
        candidates.append(("expected_k", {"k": rule_k_estimate(spec)}))
    if spec.get("thresholds") is not None:
        candidates.append(("per_label", {"thresholds": spec["thresholds"]}))
    default_opts = {k: v for k, v in spec.items() if k in ("threshold", "k", "thresholds", "min_labels")}
    out, seen = [], set()
    for rule, opts in [(spec["rule"], default_opts)] + candidates:
        desc = describe_rule(rule, opts)
        if desc not in seen:
            seen.add(desc)
            out.append((rule, opts, desc))
    return out


def label_set_row_warning(row: dict, spec: dict | None) -> str | None:
    """The :func:`spmlkit.practitioner.labelsets.label_set_warning` message for one quality row
    (its mean set size and share of empty sets) against the rule's k, else None."""
    if row.get("mean_predicted_labels") is None:
        return None
    return label_set_stats_warning(row["mean_predicted_labels"], (row.get("empty_sets") or 0.0) / 100.0,
                                   rule_k_estimate(spec or {}))


def describe_rule(rule: str, opts: dict) -> str:
    extra = f", at least {opts['min_labels']} label(s)" if opts.get("min_labels") else ""
    if rule == "threshold":
        return f"threshold {opts.get('threshold', 0.5):g}{extra}"
    if rule == "top_k":
        return f"top-{int(opts.get('k', 1))}{extra}"
    if rule == "expected_k":
        return f"expected-k (k={opts['k']:.2f}: top {max(round_k(opts['k']), 1)} per example){extra}"
    if rule == "per_label":
        return f"per-label thresholds (tuned for F1 on validation){extra}"
    return rule


# ---------------------------------------------------------------------- curves
def write_curves(rows: list[dict], path: str | Path, *, selection: str, best_epoch: int | None = None) -> Path:
    """Training loss and validation score per epoch, as a PNG (atomic)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: matplotlib, only when a figure is drawn
    from matplotlib.figure import Figure

    path = Path(path)
    epochs = [r["epoch"] for r in rows]
    fig = Figure(figsize=(9, 3.4), dpi=100)
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    ax1.plot(epochs, [r["train_loss"] for r in rows], marker="o", ms=3)
    ax1.set_xlabel("epoch")
    ax1.set_ylabel("training loss")
    ax1.set_title("training loss")
    vals = [r.get("val_score") for r in rows]
    finite = [v is not None and not (isinstance(v, float) and math.isnan(v)) for v in vals]
    label = f"validation {selection}" + (" (observed labels only)" if selection.startswith("observed") else "")
    if any(finite):
        ax2.plot(epochs, [v if f else np.nan for v, f in zip(vals, finite)], marker="o", ms=3, color="C1")
        if best_epoch:
            ax2.axvline(best_epoch, color="grey", ls="--", lw=1)
            ax2.text(best_epoch, ax2.get_ylim()[0], f" best {best_epoch}", va="bottom", fontsize=8)
    else:
        ax2.text(0.5, 0.5, "no validation data\n(final epoch kept)", ha="center", va="center",
                 transform=ax2.transAxes)
    ax2.set_xlabel("epoch")
    ax2.set_ylabel(selection)
    ax2.set_title(label, fontsize=10)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    return path


def recipe_members(result: dict) -> list[dict]:
    """The member methods of a recipe run (``auto``): ``[{method, lr, best_epoch,
    val_<selection>}, ...]`` from its ``result.json`` notes, else ``[]``."""
    notes = result.get("notes")
    members = notes.get("members") if isinstance(notes, dict) else None
    return list(members) if isinstance(members, list) else []


def member_rows(run_dir: str | Path, result: dict) -> dict[str, list[dict]]:
    """Per-epoch metrics of each recipe member at the learning rate it kept (from
    ``members/<method>/metrics.jsonl``, which holds every lr it tried)."""
    out = {}
    for m in recipe_members(result):
        name = m.get("label", m["method"])  # (two members of one method differ by head: em-apl, em-apl-mlp)
        rows = read_jsonl(Path(run_dir) / "members" / name / "metrics.jsonl")
        mine = [r for r in rows if math.isclose(float(r.get("lr", math.nan)), float(m["lr"]), rel_tol=1e-9)
                and r.get("seed", result.get("seed")) == result.get("seed")]
        by_epoch = {}
        for r in mine:  # a resumed run may repeat an epoch: the last record wins
            by_epoch[r["epoch"]] = r
        if by_epoch:
            out[name] = [by_epoch[e] for e in sorted(by_epoch)]
    return out


def write_member_curves(series: dict[str, list[dict]], path: str | Path, *, selection: str,
                        best: dict[str, int] | None = None) -> Path:
    """Training loss and validation score per epoch of each recipe member (one line each,
    its best epoch marked), as a PNG (atomic)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: matplotlib, only when a figure is drawn
    from matplotlib.figure import Figure

    path = Path(path)
    fig = Figure(figsize=(9, 3.4), dpi=100)
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    for i, (name, rows) in enumerate(series.items()):
        epochs = [r["epoch"] for r in rows]
        lr = rows[0].get("lr")
        label = f"{name} (lr {lr:g})" if lr is not None else name
        ax1.plot(epochs, [r["train_loss"] for r in rows], marker="o", ms=2, color=f"C{i}", label=label)
        vals = [np.nan if r.get("val_score") is None else r["val_score"] for r in rows]
        ax2.plot(epochs, vals, marker="o", ms=2, color=f"C{i}", label=label)
        b = (best or {}).get(name)
        if b in epochs:
            ax2.plot([b], [vals[epochs.index(b)]], marker="*", ms=10, color=f"C{i}")
    ax1.set_xlabel("epoch")
    ax1.set_ylabel("training loss")
    ax1.set_title("training loss per member")
    ax1.legend(fontsize=7)
    ax2.set_xlabel("epoch")
    ax2.set_ylabel(selection)
    ax2.set_title(f"validation {selection}" + (" (observed labels only)" if selection.startswith("observed") else "")
                  + "; * best", fontsize=9)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    return path


#: configuration fields that only mean something when fine-tuning (hidden from a linear run's report)
FINETUNE_ONLY = ("backbone", "weights", "image_size", "finetune_epochs", "linear_init", "linear_init_lr", "optimizer",
                 "ema_decay", "num_workers", "freeze_bn", "precision", "channels_last", "compile", "sync_bn")


# ---------------------------------------------------------------------- report
def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def write_run_report(run_dir: str | Path, *, result: dict, config: dict, bundle_meta: dict,
                     label_set_rows: list[dict] | None = None, label_rule: dict | None = None) -> Path:
    """Write ``curves.png`` and ``report.md`` into ``run_dir`` (both atomically; a folder
    spmlkit made: :func:`spmlkit.ownership.folder`)."""
    run_dir = ownership.folder(run_dir, "run")
    rows = [r for r in read_jsonl(run_dir / "metrics.jsonl") if r.get("member", 0) == 0]
    selection = result.get("selection", "")
    observed = not bundle_meta.get("has_full_labels", True)
    test_full = result.get("test_map") is not None
    members = recipe_members(result)
    series = member_rows(run_dir, result) if members else {}
    if rows:
        write_curves(rows, run_dir / "curves.png", selection=selection, best_epoch=result.get("best_epoch"))
    elif series:
        write_member_curves(series, run_dir / "curves.png", selection=selection,
                            best={m.get("label", m["method"]): m.get("best_epoch") for m in members})
    L = _report_heading(run_dir, config, bundle_meta, observed, test_full)
    L += _configuration_section(config, result, members)
    L += _members_section(config, members, series, selection)
    L += _curves_section(rows, series, result, selection)
    L += _final_metrics_section(result, members, selection, test_full)
    L.append("## Label sets")
    L.append("")
    L += _label_rule_lines(label_rule)
    L += _label_set_lines(label_set_rows, label_rule)
    L.append("Predict label sets for new data with `spml predict MODEL INPUT --labels -o sets.csv` "
             "(`--threshold-rule` to choose another rule).")
    L.append("")
    path = run_dir / "report.md"
    write_text(path, "\n".join(L))
    return path


def _report_heading(run_dir: Path, config: dict, bundle_meta: dict, observed: bool, test_full: bool) -> list[str]:
    """The report's title, its data and bundle lines, and the observed-labels-only warning."""
    L = []
    bundle_dir = Path(str(bundle_meta.get("path", "?"))).name
    source = bundle_meta.get("source")
    L.append(f"# Run report: {run_dir.name} — {config.get('method')} on {bundle_dir}")
    L.append("")
    if source and str(source) != str(bundle_meta.get("name")):
        L.append(f"Data: `{source}` (bundle name `{bundle_meta.get('name', '?')}`).")
        L.append("")
    L.append(f"Written by spmlkit {__version__} on "
             f"{_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds')}.  "
             f"Bundle `{bundle_meta.get('path', '?')}`: regime `{bundle_meta.get('regime')}`, "
             f"full labels: {'yes' if not observed else 'no'}"
             + (f" (full labels in: {', '.join(bundle_meta.get('full_label_splits', []))})"
                if observed and bundle_meta.get("full_label_splits") else "") + ".")
    L.append("")
    if observed:
        L.append("> **Observed labels only.** The training data are the user's own observations; no "
                 "full-label mAP can be computed"
                 + (" on the test split" if not test_full else "")
                 + ". Numbers marked *observed* count unobserved labels as negatives: they are lower than, and "
                   "not comparable to, a full-label mAP.")
        L.append("")
    return L


def _configuration_section(config: dict, result: dict, members: list) -> list[str]:
    """The run's options as a table (fine-tuning options hidden for a linear run) with the resolved
    hyper-parameters, ``k`` and the device it trained on."""
    L = []
    L.append("## Configuration")
    L.append("")
    L.append("| option | value |")
    L.append("|---|---|")
    for k, v in config.items():
        if k in FINETUNE_ONLY and config.get("setting", "linear") != "finetune":
            continue  # image/fine-tuning settings do not apply to a head on features
        if k == "params":
            v = ", ".join(f"{a}={b}" for a, b in (v or {}).items()) or "(defaults)"
        if k == "lr" and members:
            v = "not used: each member keeps its own (see Members)"
        L.append(f"| {k} | {_fmt(v)} |")
    if result.get("params"):
        L.append(f"| resolved method hyper-parameters | "
                 f"{', '.join(f'{a}={b}' for a, b in result['params'].items())} |")
    if result.get("expected_positives") is not None:
        L.append(f"| k (expected labels per example) | {result['expected_positives']:.3f} |")
    if isinstance(result.get("device"), dict):  # where it trained (spmlkit.device.device_info)
        L.append(f"| trained on | {describe(result['device'])} |")
    L.append("")
    return L


def _members_section(config: dict, members: list, series: dict, selection: str) -> list[str]:
    """For a recipe (``auto``): each member's kept learning rate, best epoch, validation score and weight."""
    L = []
    if members:
        L.append("## Members")
        L.append("")
        L.append(f"`{config.get('method')}` predicts the weighted mean of the probabilities of {len(members)} member "
                 f"method(s); each was trained at every learning rate of the recipe and kept the one with the best "
                 f"validation {selection}, and the weights were chosen on the same validation observations "
                 f"(observed labels only: no full label is read, also when the bundle has them).")
        L.append("")
        L.append(f"| member | lr kept | best epoch | validation {selection} (observed) | weight |")
        L.append("|---|---:|---:|---:|---:|")
        for m in members:
            name = m.get("label", m["method"])
            L.append(f"| {name} | {m['lr']:g} | {m.get('best_epoch')} of "
                     f"{m.get('epochs_run') or len(series.get(name, [])) or '?'}"
                     f" | {_fmt(m.get(f'val_{selection}'))} | {_fmt(m.get('weight', 1 / len(members)))} |")
        L.append("")
    return L


def _curves_section(rows: list, series: dict, result: dict, selection: str) -> list[str]:
    """The training curves: the figure and the per-epoch table (one pair of columns per member for a
    recipe)."""
    L = []
    L.append("## Training curves")
    L.append("")
    if series and not rows:
        L.append("![training loss and validation score per epoch of each member](curves.png)")
        L.append("")
        L.append("| epoch | " + " | ".join(f"{n} loss | {n} validation" for n in series) + " |")
        L.append("|---:|" + "---:|---:|" * len(series))
        for e in sorted({r["epoch"] for rs in series.values() for r in rs}):
            cells = []
            for n, rs in series.items():
                r = next((x for x in rs if x["epoch"] == e), None)
                cells += ["—", "—"] if r is None else [f"{r['train_loss']:.5f}", _fmt(r.get("val_score"))]
            L.append(f"| {e} | " + " | ".join(cells) + " |")
    elif rows:
        L.append("![training loss and validation score per epoch](curves.png)")
        L.append("")
        L.append(f"| epoch | training loss | validation {selection}{' (observed)' if selection.startswith('observed') else ''} | |")
        L.append("|---:|---:|---:|---|")
        for r in rows:
            best = "best" if r["epoch"] == result.get("best_epoch") else ""
            L.append(f"| {r['epoch']} | {r['train_loss']:.5f} | {_fmt(r.get('val_score'))} | {best} |")
    else:
        L.append("(no per-epoch metrics recorded)")
    L.append("")
    return L


def _final_metrics_section(result: dict, members: list, selection: str, test_full: bool) -> list[str]:
    """The final metrics: best epoch(s), validation and test scores, label recovery and time."""
    L = []
    L.append("## Final metrics")
    L.append("")
    if members:
        L.append("- best epochs: " + ", ".join(f"{m.get('label', m['method'])} {m.get('best_epoch')}" for m in members)
                 + f" of {result.get('epochs_run')} (each member's own, by validation `{selection}`)")
        L.append(f"- validation {selection} of the averaged model: **{_fmt(result.get('val_score'))}** (observed "
                 + ("labels only: unobserved labels count as negatives, so it is lower than, and not comparable to, "
                    "a full-label validation mAP)" if selection == "observed_map" else
                    f"records only: {SELECTION_MEANING.get(selection, selection)})"))
    else:
        L.append(f"- best epoch: **{result.get('best_epoch')}** of {result.get('epochs_run')} run "
                 f"(selection `{selection}`"
                 + (", observed labels only" if selection.startswith("observed") else "")
                 + (", no validation data: final epoch" if selection == "last" else "") + ")")
    if last_epoch_note(result):
        L.append(f"- {last_epoch_note(result).removeprefix('note: ')}")
    if selection != "last" and not members:
        L.append(f"- validation {selection}: **{_fmt(result.get('val_score'))}**")
    if test_full:
        extra = f" ({result['n_empty_test_classes']} test classes without positives excluded)" \
            if result.get("n_empty_test_classes") else ""
        L.append(f"- test mAP (full labels): **{result['test_map']:.2f}**{extra}")
        if result.get("test_auc"):
            L.append(f"- test AUC-ROC per label, each on its surveyed examples: mean **{result['test_auc']['mean']:.3f}**, "
                     f"median {result['test_auc']['median']:.3f}")
    elif result.get("test_observed"):
        t = result["test_observed"]
        recs = ", ".join(f"{k} {v:.2f}" for k, v in t.items() if k.startswith("observed_recall@"))
        L.append(f"- test, *{OBSERVED_NOTE}*: observed-positive mAP **{t['observed_map']:.2f}**, {recs} "
                 f"({t['n_observed_positives']} observed positives)")
    if result.get("train_map") is not None:
        L.append(f"- training-set mAP against full labels (label recovery, Cole Table 2): {result['train_map']:.2f}")
    L.append(f"- time: {result.get('seconds', float('nan')):.1f} s")
    L.append("")
    return L


def _label_rule_lines(label_rule: dict | None) -> list[str]:
    """The default label-set rule stored with the model: how it was chosen (``k``, the validation
    candidates) and the per-label thresholds."""
    L = []
    if label_rule is not None:
        L.append(f"Default rule stored with the model: **{describe_rule(label_rule['rule'], label_rule)}**.")
        L.append("")
        if label_rule.get("k_source"):
            L.append(f"Expected labels per example k = {rule_k_estimate(label_rule):.2f} ({label_rule['k_source']}). "
                     "Without a fully labelled validation split the default rule is expected-k: single-positive "
                     "training does not give calibrated probabilities, so a fixed threshold 0.5 gives near-empty "
                     "or near-full sets depending on the method (see docs/practitioner.md).")
            L.append("")
        if label_rule.get("choice"):
            L.append("It was chosen on the fully labelled validation split by example-based F1 (per-label "
                     "thresholds scored out of fold, 5-fold, since they are fitted on the same data):")
            L.append("")
            L.append("| candidate | validation example-F1 |")
            L.append("|---|---:|")
            for c in label_rule["choice"]:
                desc = describe_rule(c["rule"], c) + (" (out of fold)" if c.get("out_of_fold") else "")
                L.append(f"| {desc} | {c['example_f1']:.2f} |")
            L.append("")
        if label_rule.get("thresholds") is not None:
            t = label_rule.get("tuning", {})
            L.append(f"Per-label thresholds (F1 on {t.get('on', 'validation')}) are stored with the model "
                     f"(`--threshold-rule per_label`); {len(t.get('labels_without_positives', []))} label(s) without "
                     f"a validation positive get a threshold just above their highest validation score (at least "
                     f"{t.get('fallback', 0.5):g}).")
            L.append("")
    return L


def _label_set_lines(label_set_rows: list[dict] | None, label_rule: dict | None) -> list[str]:
    """The label sets' quality on the test split (full or observed labels) with the default rule's
    warning, or why there is none."""
    L = []
    if label_set_rows:
        kind = label_set_rows[0]["labels"]
        if kind == "full":
            L.append("Quality on the test split against its full labels:")
            L.append("")
            L.append("| rule | micro-F1 | macro-F1 | example-F1 | precision | recall | labels / example | "
                     "empty sets |")
            L.append("|---|---:|---:|---:|---:|---:|---:|---:|")
            for r in label_set_rows:
                empty = "—" if r.get("empty_sets") is None else f"{r['empty_sets']:.1f}%"
                L.append(f"| {r['rule']}{' (default)' if r['default'] else ''} | {r['micro_f1']:.2f} | "
                         f"{r['macro_f1']:.2f} | {r['example_f1']:.2f} | {r['micro_precision']:.2f} | "
                         f"{r['micro_recall']:.2f} | {r['mean_predicted_labels']:.2f} | {empty} |")
        else:
            L.append(f"Quality on the test split, **{OBSERVED_NOTE}**: precision cannot be measured (an "
                     "unobserved label in a set may be right or wrong); *observed recall* is the share of "
                     "observed positives inside the predicted sets.")
            L.append("")
            L.append("| rule | observed recall | observed negatives predicted | labels / example | empty sets |")
            L.append("|---|---:|---:|---:|---:|")
            for r in label_set_rows:
                neg = "—" if r["observed_negative_rate"] is None else f"{r['observed_negative_rate']:.2f}%"
                L.append(f"| {r['rule']}{' (default)' if r['default'] else ''} | {r['observed_recall']:.2f}% | "
                         f"{neg} | {r['mean_predicted_labels']:.2f} | {r['empty_sets']:.1f}% |")
        warn = label_set_row_warning(label_set_rows[0], label_rule)
        if warn is not None:
            L.append("")
            L.append(f"> **Warning ({label_set_rows[0]['rule']}, the default rule, on the test split):** {warn}.")
    else:
        L.append("(no test split to evaluate label sets on)")
    L.append("")
    return L


def last_epoch_note(record: dict) -> str | None:
    """A note when the best epoch is the last one run (for ``auto``: a member's), so the
    validation score may still have been rising: train longer.  None otherwise
    (and without validation, where the last epoch is kept by definition)."""
    run = record.get("epochs_run")
    if record.get("selection") == "last" or not isinstance(run, int) or run < 2:
        return None
    members = recipe_members(record)
    last = ([m["method"] for m in members if m.get("best_epoch") == run] if members
            else ([record.get("method") or "the run"] if record.get("best_epoch") == run else []))
    if not last:
        return None
    who = "the best epoch is" if not members else f"{', '.join(last)}'s best epoch {'is' if len(last) == 1 else 'are'}"
    return (f"note: {who} the last one ({run} of {run}): the validation score may still have been rising; "
            f"train longer to see (--epochs {2 * run})")


def run_summary_lines(record: dict, run_dir: str | Path, *, presence_only: bool = False) -> list[str]:
    """What ``spml train`` prints about a finished run (from its ``result.json``).
    ``presence_only``: the observed-positive mAP and label-set lines are left out (records
    and background: the per-species table of :mod:`.sdm_report` says what they cannot)."""
    run_dir = Path(run_dir)
    sel = record.get("selection", "")
    lines = []
    members = recipe_members(record)
    if members:
        lines.append(f"run {run_dir}: {record.get('method')}, a weighted mean of {len(members)} member methods, each "
                     f"at the lr and epoch with its best validation {sel} (observed labels only):")
        for m in members:
            lines.append(f"  {m.get('label', m['method']):10s} lr {m['lr']:g}, best epoch {m.get('best_epoch')}/"
                         f"{m.get('epochs_run') or record.get('epochs_run')}, validation {sel} "
                         f"{_fmt(m.get(f'val_{sel}'))}, weight {_fmt(m.get('weight', 1 / len(members)))}")
        lines.append(f"averaged model: validation {sel} {_fmt(record.get('val_score'))} (observed labels only: "
                     + ("unobserved labels count as negatives, so it is lower than a full-label mAP and not "
                        "comparable to one)" if sel == "observed_map" else f"{SELECTION_MEANING.get(sel, sel)})"))
    elif sel == "last":
        lines.append(f"run {run_dir}: no validation data, final epoch {record.get('best_epoch')} kept")
    else:
        obs = " (observed labels only)" if sel.startswith("observed") else ""
        lines.append(f"run {run_dir}: best epoch {record.get('best_epoch')}/{record.get('epochs_run')}, "
                     f"validation {sel}{obs} {_fmt(record.get('val_score'))}")
    if last_epoch_note(record):
        lines.append(last_epoch_note(record))
    if record.get("test_map") is not None:
        extra = f" ({record['n_empty_test_classes']} test classes without positives excluded)" \
            if record.get("n_empty_test_classes") else ""
        lines.append(f"test mAP {record['test_map']:.2f}{extra}")
        if record.get("test_auc"):  # labels surveyed on part of the test examples
            a = record["test_auc"]
            lines.append(f"test AUC-ROC per label (on its surveyed examples): mean {a['mean']:.3f}, "
                         f"median {a['median']:.3f}")
    elif record.get("test_observed") and not presence_only:
        lines.append(f"test: {format_scores(record['test_observed'])}")
    if record.get("train_map") is not None:
        lines.append(f"training-set mAP vs full labels (label recovery) {record['train_map']:.2f}")
    q = [r for r in record.get("label_set_quality") or [] if r.get("default")]
    if q and not presence_only:
        lines.append(f"label sets ({q[0]['rule']}) on test: {format_label_set_quality(q[0])}")
        warn = label_set_row_warning(q[0], record.get("label_sets"))
        if warn is not None:
            lines.append(f"warning: {warn}")
    lines.append(f"model saved to {run_dir / 'model'}; report {run_dir / 'report.md'}")
    return lines
