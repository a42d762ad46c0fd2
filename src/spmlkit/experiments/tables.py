"""The tables of ``spml bench`` (Cole et al. 2021 Tables 1 and 2, Zhou et al. Fig. 5c data).

Pure functions from run records (dicts, as stored in ``groups/*.json``) to Markdown,
plus :func:`write_outputs`, which writes every file atomically.

Layout of ``table.md`` (Cole Table 1): one row per method, grouped by label regime in
the order "All P. & All N.", "1 P. & All N.", "1 P. & 1 N.", "1 P. & 0 N." (then any
other regime); one column per dataset; cells "mean ± std" of the test mAP over the
seeds of the selected configuration.  In each column the best single-positive
("1 P. & 0 N.") method is **bold** and the second <u>underlined</u> — ranked on the
displayed (rounded) values, so equal-looking cells are marked alike; when no row is
single-positive (e.g. ``--regime full``) every row competes.

Every file starts with a header whose time-dependent lines (date, wall time) sit
between ``<!-- run -->`` and ``<!-- /run -->``; :func:`strip_run_block` removes them,
so two runs of the same bench compare byte for byte.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import time
from pathlib import Path

from ..io import read_json_record
from .. import ownership
from ..ownership import write_json_gz, write_text
from ..labels import REGIMES, get_regime, regime_sort_key
from .machine import machine_info
from .protocol import Selection, select_best

#: the regime whose rows compete for bold/underline (Cole Table 1: "best single positive method")
CONTEST_REGIME = "single_positive"

RUN_BEGIN, RUN_END = "<!-- run -->", "<!-- /run -->"
CSV_FIELDS = ("dataset", "method", "params", "regime", "hide_prob", "train_fraction", "setting", "lr", "batch_size",
              "seed", "best_epoch", "epochs_run", "val_score", "selection", "test_map", "train_map", "n_train",
              "n_observed", "seconds", "group")


def strip_run_block(text: str) -> str:
    """``text`` without the time-dependent header block (for comparing two benches)."""
    out, skip = [], False
    for line in text.splitlines(keepends=True):
        if line.strip() == RUN_BEGIN:
            skip = True
        elif line.strip() == RUN_END:
            skip = False
        elif not skip:
            out.append(line)
    return "".join(out)


def regime_label(regime: str) -> str:
    return get_regime(regime).table_label if regime in REGIMES else regime


def fmt_selection(s, decimals: int = 1, value: str = "test") -> str:
    """A selected configuration's test (or training-set) mAP, ``mean ± std`` over its seeds;
    the mean alone for a single seed, which has no spread to show."""
    mean, std = (s.test_mean, s.test_std) if value == "test" else (s.train_mean, s.train_std)
    return fmt_cell(mean, std if s.n_seeds > 1 else None, decimals)


def _n_seeds(n: int) -> str:
    return f"{n} seed{'s' if n != 1 else ''}"


def fmt_cell(mean, std, decimals: int = 1) -> str:
    """``mean ± std``; just the mean when ``std`` is None (e.g. a single seed)."""
    if mean is None or not math.isfinite(mean):
        return "–"
    if std is None or not math.isfinite(std):
        return f"{mean:.{decimals}f}"
    return f"{mean:.{decimals}f} ± {std:.{decimals}f}"


def fmt_lr(lr: float) -> str:
    return f"{lr:.0e}"


def fmt_seconds(s: float) -> str:
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h} h {m:02d} min {sec:02d} s" if h else (f"{m} min {sec:02d} s" if m else f"{sec} s")


def select_cells(runs: list[dict], *, by=("dataset", "method", "train_fraction", "hide_prob")) -> dict:
    """``{(dataset, method, fraction, hide_prob): Selection}`` over ``runs`` (in order)."""
    cells: dict[tuple, list] = {}
    for r in runs:
        cells.setdefault(tuple(r[k] for k in by), []).append(r)
    out = {}
    for key, rs in cells.items():
        try:
            out[key] = select_best(rs)
        except ValueError:
            out[key] = None
    return out


def summary_metrics(runs: list[dict]) -> dict:
    """A bench's headline numbers under names that compare across benches (an experiment
    tracker's parent run): per dataset and method at the selected configuration,
    ``test_map/<dataset>/<method>`` (mean over seeds), ``test_map_std/...`` and
    ``val_map/...``; a subsample fraction or hiding probability other than the main
    table's is a suffix (``.../frac0.5``, ``.../hide0.3``).

    >>> runs = [{"dataset": "d", "method": "an", "train_fraction": 1.0, "hide_prob": None, "lr": 0.01,
    ...          "batch_size": 8, "seed": s, "val_score": 50.0, "test_map": t, "train_map": None}
    ...         for s, t in ((0, 40.0), (1, 42.0))]
    >>> summary_metrics(runs)["test_map/d/an"]
    41.0
    """
    out = {}
    for (dataset, method, fraction, hide), sel in select_cells(runs).items():
        if sel is None:
            continue
        extra = (f"/frac{fraction:g}" if fraction is not None and fraction < 1 else "") + (
            f"/hide{hide:g}" if hide is not None else "")
        for name, value in (("test_map", sel.test_mean), ("test_map_std", sel.test_std), ("val_map", sel.val_mean)):
            if value is not None and math.isfinite(value):
                out[f"{name}/{dataset}/{method}{extra}"] = float(value)
    return out


def mark_best(values: dict, decimals: int) -> dict:
    """``{row: mean}`` -> ``{row: "bold" | "underline"}`` ranked on rounded values."""
    shown = {k: round(v, decimals) for k, v in values.items() if v is not None and math.isfinite(v)}
    distinct = sorted(set(shown.values()), reverse=True)
    marks = {}
    for k, v in shown.items():
        if v == distinct[0]:
            marks[k] = "bold"
        elif len(distinct) > 1 and v == distinct[1]:
            marks[k] = "underline"
    return marks


def _decorate(text: str, mark: str | None) -> str:
    return f"**{text}**" if mark == "bold" else (f"<u>{text}</u>" if mark == "underline" else text)


def ordered_rows(methods: list[str], regimes: dict) -> list[str]:
    """Methods grouped by regime (Table 1 order), keeping the given order within a group."""

    return sorted(methods, key=lambda m: (regime_sort_key(regimes[m]), methods.index(m)))


def header_block(title: str, ctx: dict) -> str:
    lines = [f"# {title}", "", RUN_BEGIN]
    for k in ("date", "wall time"):
        if ctx.get(k):
            lines.append(f"- {k}: {ctx[k]}")
    lines.append(RUN_END)
    for k in ("command", "machine", "protocol", "regime", "datasets"):
        if ctx.get(k):
            lines.append(f"- {k}: {ctx[k]}")
    return "\n".join(lines) + "\n\n"


def render_main_table(sel: dict, datasets: list[str], methods: list[str], regimes: dict, *, decimals: int = 1,
                      value: str = "test", contest: bool = True, fraction: float = 1.0, hide=None) -> str:
    """The Cole Table 1 grid (``value="test"``) or Table 2 (``value="train"``) as Markdown."""
    rows = ordered_rows(methods, regimes)
    contest_rows = [m for m in rows if regimes[m] == CONTEST_REGIME] or rows
    marks = {}
    if contest:
        for d in datasets:
            vals = {}
            for m in contest_rows:
                s = sel.get((d, m, fraction, hide))
                if s is not None:
                    vals[m] = s.test_mean if value == "test" else s.train_mean
            marks[d] = mark_best(vals, decimals)
    out = ["| Loss | Labels per image | " + " | ".join(datasets) + " |",
           "|---|---|" + "---:|" * len(datasets)]
    last = None
    for m in rows:
        label = regime_label(regimes[m]) if regimes[m] != last else ""
        last = regimes[m]
        cells = []
        for d in datasets:
            s: Selection | None = sel.get((d, m, fraction, hide))
            if s is None:
                cells.append("–")
                continue
            cells.append(_decorate(fmt_selection(s, decimals, value), marks.get(d, {}).get(m)))
        out.append(f"| {m} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def render_selected(sel: dict, datasets: list[str], methods: list[str], regimes: dict, *, fraction=1.0,
                    hide=None) -> str:
    rows = ordered_rows(methods, regimes)
    out = ["| Loss | " + " | ".join(datasets) + " |", "|---|" + "---|" * len(datasets)]
    for m in rows:
        cells = []
        for d in datasets:
            s = sel.get((d, m, fraction, hide))
            cells.append("–" if s is None else _selected_cell(s))
        out.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _selected_cell(s) -> str:
    """One cell of the "Selected configuration" table.  A recipe's runs (``notes`` with
    its members, e.g. ``auto``) chose their members' learning rates themselves on
    observed labels: the cell lists them instead of the (unused) bench lr."""
    notes = [r.get("notes") if isinstance(r, dict) else getattr(r, "notes", None) for r in (s.runs or [])]
    if notes and all(isinstance(n, dict) and n.get("members") for n in notes):
        picks: dict = {}
        weights: dict = {}
        for n in notes:
            for m in n["members"]:
                name = m.get("label") or m["method"]  # (em-apl and em-apl-mlp are two members)
                picks.setdefault(name, []).append(fmt_lr(m["lr"]))
                if "weight" in m:  # a recipe that weighs its members
                    weights.setdefault(name, []).append(float(m["weight"]))
        chosen = "; ".join(f"{name} {'/'.join(lrs)}" + (f" weight {sum(weights[name]) / len(weights[name]):.2f}"
                                                          if name in weights else "") for name, lrs in picks.items())
        return f"own lr per member on observed labels ({chosen}), batch {s.batch_size}, {_n_seeds(s.n_seeds)}"
    return f"lr {fmt_lr(s.lr)}, batch {s.batch_size}, {_n_seeds(s.n_seeds)}"


def render_sweep(sel: dict, dataset: str, methods: list[str], columns: list, *, axis: str, decimals: int = 1,
                 headers: list[str] | None = None) -> str:
    """Rows = methods, columns = training fractions (``axis="fraction"``) or hiding
    probabilities (``axis="hide"``); the best cell of each column in bold."""
    out = ["| method | " + " | ".join(headers or [f"{c:g}" for c in columns]) + " |",
           "|---|" + "---:|" * len(columns)]
    marks = {}
    for c in columns:
        vals = {}
        for m in methods:
            s = sel.get((dataset, m, c, None) if axis == "fraction" else (dataset, m, 1.0, c))
            if s is not None:
                vals[m] = s.test_mean
        marks[c] = {k: v for k, v in mark_best(vals, decimals).items() if v == "bold"}
    for m in methods:
        cells = []
        for c in columns:
            s = sel.get((dataset, m, c, None) if axis == "fraction" else (dataset, m, 1.0, c))
            cells.append("–" if s is None else _decorate(fmt_selection(s, decimals), marks[c].get(m)))
        out.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def runs_csv(runs: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for r in runs:
        row = []
        for k in CSV_FIELDS:
            v = r.get(k)
            if k == "params":
                v = json.dumps(v, sort_keys=True)
            elif isinstance(v, float):
                v = "" if not math.isfinite(v) else (f"{v:.6g}" if k in ("lr", "hide_prob", "train_fraction")
                                                     else f"{v:.4f}")
            elif v is None:
                v = ""
            row.append(v)
        w.writerow(row)
    return buf.getvalue()


# --------------------------------------------------------------------------- files
def _protocol_line(spec) -> str:
    seeds = ", ".join(str(s) for s in spec.seeds)
    lrs = ", ".join(fmt_lr(lr) for lr in spec.lrs)
    bss = ", ".join(str(b) for b in spec.batch_sizes)
    pat = "none (every epoch, best kept)" if spec.patience is None else str(spec.patience)
    extra = "".join(f", {k}={v}" for k, v in sorted(spec.config.items()))
    epochs = f"{spec.resolved_epochs()} epochs"
    if spec.setting == "finetune" and any(m.endswith("+li") for m in spec.methods or ()):
        ft = spec.config.get("finetune_epochs") or 5
        epochs += f" (LinearInit rows '+li': 25 linear epochs on cached features at lr " \
                  f"{spec.config.get('linear_init_lr', 1e-3):g}, then {ft} fine-tuning epochs)"
    line = (f"{spec.setting} setting, lr ∈ {{{lrs}}} × batch ∈ {{{bss}}}, seeds {seeds}, "
            f"{epochs}, patience {pat}{extra}; per method the configuration with the best "
            "mean validation mAP over seeds; test mAP at each run's best-validation epoch, mean ± std "
            "(population std) over that configuration's seeds")
    if getattr(spec, "vary_draw", False):
        line += ("; --vary-draw: seed s trains on the bundle prepared with prepare seed s (its own single "
                 "positives and validation split), so ± std is the spread over draws and initialisations together")
    return line


def canonical_command(spec, out) -> str:
    parts = ["spml bench", "--datasets", *spec.datasets, "--methods", *spec.methods,
             "--lrs", *[f"{lr:g}" for lr in spec.lrs], "--batch-sizes", *map(str, spec.batch_sizes),
             "--seed-list", *map(str, spec.seeds), "--epochs", str(spec.resolved_epochs()),
             "--setting", spec.setting]
    if spec.regime and not spec.hide_fractions:
        parts += ["--regime", spec.regime]
    if spec.hide_fractions:
        parts += ["--hide-fractions", *[f"{p:g}" for p in spec.hide_fractions]]
    if len(spec.train_fractions) > 1:
        parts += ["--train-fractions", *[f"{f:g}" for f in spec.train_fractions]]
    if getattr(spec, "vary_draw", False):
        parts += ["--vary-draw"]
    for m, ps in spec.params.items():
        for k, v in ps.items():
            parts += ["--param", f"{m}:{k}={v}"]
    return " ".join(parts + ["-o", str(out)])


def grid_key(groups) -> str:
    """A short fingerprint of a bench grid: its groups' hashes (the same command, resumed
    or re-rendered with ``--table-only``, has the same key; another grid in the same
    results folder has another)."""
    return hashlib.sha256(" ".join(sorted(g.hash for g in groups)).encode()).hexdigest()[:16]


def _invocations(manifest_path: Path, ctx: dict, n_trained: int, grid: str | None = None) -> list[dict]:
    """The bench's invocations that trained groups, oldest first, each ``{"id", "date",
    "wall_seconds", "grid"}``: read from the previous ``runs.json.gz`` (or a ``runs.json``
    written before records were compressed) and updated with the current invocation when
    it trained something.  So the header's wall time is the bench's (summed over resumed
    invocations), and re-rendering finished results keeps it.  Each records its grid
    (:func:`grid_key`): the header sums only this grid's (:func:`grid_invocations`), since
    another grid written into the same folder took its own time."""
    try:
        old = read_json_record(manifest_path).get("invocations") or []
    except (OSError, ValueError, AttributeError):
        old = []
    ctx.setdefault("invocation_id", f"{time.time():.6f}")
    out = [dict(i) for i in old if isinstance(i, dict) and i.get("id") != ctx["invocation_id"]
           and isinstance(i.get("wall_seconds"), (int, float))]
    if n_trained > 0:
        out.append({"id": ctx["invocation_id"], "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                    "wall_seconds": round(time.perf_counter() - ctx["t_start"], 1), "current": True,
                    **({"grid": grid} if grid is not None else {})})
    return out


def grid_invocations(invocations: list[dict], grid: str) -> list[dict]:
    """The invocations of grid ``grid`` (and those recorded before grids were, which have none)."""
    return [i for i in invocations if i.get("grid") in (None, grid)]


def write_outputs(runner, groups, ctx: dict) -> dict:
    """(Re)build every table of ``runner``'s bench from its finished groups (the figures
    are drawn by the caller, :mod:`.figures`, from what this writes).

    The steps: gather the finished runs and select each cell's configuration, build the
    tables' header (:func:`_tables_header`), write the record (:func:`_write_record`),
    then the tables of the bench's mode (:func:`_write_main_tables` or
    :func:`_write_partial_table`)."""
    ownership.folder(runner.out, "bench")  # (a bench's folder: claimed by run(), checked here for library callers)
    spec = runner.spec
    out = runner.out
    runs = []
    for g in groups:
        rec = runner.records.get(g.hash)
        if rec is not None:
            runs.extend(rec["runs"])
    sel = select_cells(runs)
    datasets = [d.label for d in ctx["datasets"]]
    methods = list(spec.methods)
    regimes = {g.method: g.regime for g in groups}
    prefix = "partial-" if spec.mode == "partial" else ""
    hdr, invocations, done = _tables_header(runner, groups, ctx, prefix)
    written = {}
    runs_public = _write_record(out, prefix, spec, hdr, invocations, datasets, methods, regimes, runs)
    written["runs"] = out / f"{prefix}runs.json.gz"
    if spec.mode == "main":
        written.update(_write_main_tables(out, spec, sel, datasets, methods, regimes, runs, hdr, ctx))
    else:
        written.update(_write_partial_table(out, spec, sel, datasets, methods, hdr))
    return {"selection": sel, "written": written, "runs": runs_public, "groups_done": done,
            "groups_total": len(groups)}


def _tables_header(runner, groups, ctx: dict, prefix: str):
    """The header every table carries (date, wall and training time, command, machine,
    protocol, regime, datasets) and this bench's invocations.  Returns ``(header,
    invocations, groups done)``."""
    spec = runner.spec
    out = runner.out
    total_train = sum(runner.records[g.hash].get("seconds", 0.0) for g in groups if g.hash in runner.records)
    done = sum(1 for g in groups if g.hash in runner.records)
    if "machine" not in ctx:
        ctx["machine"] = machine_info(getattr(runner, "jobs", 1), getattr(runner, "threads", None),
                                      device=(getattr(getattr(runner, "spec", None), "config", None) or {}).get("device"),
                                      setting=getattr(getattr(runner, "spec", None), "setting", "linear"))
    grid = grid_key(groups)
    invocations = _invocations(out / f"{prefix}runs.json", ctx, getattr(runner, "n_trained", 1), grid)
    mine = grid_invocations(invocations, grid)
    now = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    if mine:
        wall = sum(i["wall_seconds"] for i in mine)
        n_inv = len(mine)
        date = mine[-1]["date"] + ("" if mine[-1].get("current") else f" (tables re-rendered {now})")
        wall_text = (f"{fmt_seconds(wall)}" + (f" over {n_inv} invocations that trained groups" if n_inv > 1 else ""))
    else:
        date, wall_text = now, f"{fmt_seconds(time.perf_counter() - ctx['t_start'])} (nothing trained)"
    hdr = {
        "date": date,
        "wall time": f"{wall_text}; training time summed over groups {fmt_seconds(total_train)}; "
                     f"{done}/{len(groups)} groups finished",
        "command": f"`{ctx.get('command') or canonical_command(spec, out)}`",
        "machine": ctx["machine"],
        "protocol": _protocol_line(spec),
        "regime": (f"every method trained on the `{spec.regime}` regime (explicit --regime override)"
                   if spec.regime and not spec.hide_fractions else "each method's own (row groups)"),
        "datasets": "; ".join(
            f"{d.label} = {d.bundle.path}"
            + (f" and the draws -s{', -s'.join(str(k) for k in list(getattr(d, 'draws', {}))[1:])}"
               if len(getattr(d, "draws", {}) or {}) > 1 else "")
            + f" (train {d.bundle.size('train')} / val {d.bundle.size('val')} / "
            f"test {d.bundle.size('test')}, {d.bundle.n_labels} labels)" for d in ctx["datasets"]),
    }
    return hdr, invocations, done


def _write_record(out: Path, prefix: str, spec, hdr: dict, invocations, datasets, methods, regimes, runs) -> list:
    """Write the bench's record: ``runs.csv`` and the compressed ``runs.json.gz`` (removing
    a superseded plain ``runs.json`` that spmlkit wrote).  Returns the runs as recorded."""
    runs_public = [{k: v for k, v in r.items() if k != "hist_unobserved_positives"} for r in runs]
    manifest = {"format": 1, "mode": spec.mode, "command": hdr["command"].strip("`"),
                "invocations": [{k: v for k, v in i.items() if k != "current"} for i in invocations],
                "spec": {k: v for k, v in vars(spec).items() if not (k == "vary_draw" and not v)},
                "datasets": datasets, "methods": methods,
                "regimes": regimes, "runs": runs_public}
    write_text(out / f"{prefix}runs.csv", runs_csv(runs_public))
    # the record, compressed (JSON of floats: about 5:1; a 65-dataset bench's is 11 MB plain)
    write_json_gz(out / f"{prefix}runs.json.gz", manifest)
    old = out / f"{prefix}runs.json"  # this bench's record as written before records were compressed: superseded
    if old.is_file() and not old.is_symlink():
        ownership.remove(old)  # (only when spmlkit's: a runs.json of yours stays)
    return runs_public


def _write_main_tables(out: Path, spec, sel, datasets, methods, regimes, runs, hdr: dict, ctx: dict) -> dict:
    """A main bench's tables: ``table.md`` (test mAP, the selected configurations, the
    hyper-parameters), ``recovery.md`` (label recovery) and, over several training
    fractions, ``fractions.md``.  Returns ``{name: path}`` of what was written."""
    written = {}
    text = header_block(f"Test mAP ({spec.setting} setting) — spml bench", hdr)
    text += render_main_table(sel, datasets, methods, regimes, decimals=spec.decimals)
    spread = ("mean ± std over draws (seed s = prepare seed s: single positives, validation split and "
              "initialisation all vary)" if getattr(spec, "vary_draw", False) else "mean ± std over seeds")
    text += (f"\nTest mAP (× 100) at each run's best-validation epoch, {spread}. **Bold**: best "
             "single-positive (1 P. & 0 N.) method per column, <u>underlined</u>: second (every row competes "
             "when there is no single-positive row).\n\n## Selected configuration\n\n")
    text += render_selected(sel, datasets, methods, regimes)
    text += "\n## Method hyper-parameters\n\n" + _params_lines(runs, methods)
    write_text(out / "table.md", text)
    written["table"] = out / "table.md"
    rec_methods = [m for m in methods if regimes[m] != "full"]
    text = header_block(f"Label recovery: training-set mAP vs full labels ({spec.setting} setting) — spml bench", hdr)
    if rec_methods:
        text += render_main_table(sel, datasets, rec_methods, regimes, decimals=spec.decimals, value="train",
                                  contest=False)
    else:
        text += "(no method trains on partial labels, so there is nothing to recover)\n"
    text += ("\nCole et al. Table 2: mAP of the model's predictions on the TRAINING set against the full "
             "training labels, for the configuration and epoch selected on validation (as in table.md).\n")
    write_text(out / "recovery.md", text)
    written["recovery"] = out / "recovery.md"
    if len(spec.train_fractions) > 1:
        text = header_block(f"Test mAP vs fraction of training data ({spec.setting} setting) — spml bench", hdr)
        for d in ctx["datasets"]:
            n = d.bundle.size("train")
            heads = [f"{f:.0%} ({max(1, int(round(f * n)))})" for f in spec.train_fractions]
            text += f"## {d.label}\n\n" + render_sweep(sel, d.label, methods, list(spec.train_fractions),
                                                       axis="fraction", decimals=spec.decimals, headers=heads)
            text += "\n"
        text += ("Columns: fraction of the training set kept (number of training examples); a seeded subsample "
                 f"(seed {spec.subsample_seed}), nested across fractions. Hyper-parameters selected per cell.\n")
        write_text(out / "fractions.md", text)
        written["fractions"] = out / "fractions.md"
    return written


def _write_partial_table(out: Path, spec, sel, datasets, methods, hdr: dict) -> dict:
    """A partial-labels bench's ``partial.md``: test mAP per fraction of hidden labels and
    the configuration selected per cell.  Returns ``{name: path}``."""
    written = {}
    text = header_block(f"Partial labels: test mAP vs fraction of hidden labels ({spec.setting} setting) — "
                        "spml bench", hdr)
    for d in datasets:
        text += f"## {d}\n\n" + render_sweep(sel, d, methods, list(spec.hide_fractions), axis="hide",
                                             decimals=spec.decimals,
                                             headers=[f"hide {p:g}" for p in spec.hide_fractions]) + "\n"
    text += ("Each training label hidden independently with the column's probability (the `partial` regime; "
             "nested draws across columns); methods trained on the remaining positives and negatives "
             "(Zhou et al. 2022, Fig. 5c). Hyper-parameters selected per cell on validation.\n\n"
             "## Selected configuration\n\n")
    for d in datasets:
        for p in spec.hide_fractions:
            for m in methods:
                s = sel.get((d, m, 1.0, p))
                if s is not None:
                    text += f"- {d}, hide {p:g}, {m}: lr {fmt_lr(s.lr)}, batch {s.batch_size}, {_n_seeds(s.n_seeds)}\n"
    write_text(out / "partial.md", text)
    written["partial"] = out / "partial.md"
    return written


def _params_lines(runs: list[dict], methods: list[str]) -> str:
    """One line per method with its resolved hyper-parameters; where a value is derived
    from the data (e.g. WAN's γ = 1/(L−1)), the datasets that differ are listed."""
    seen: dict[str, dict[str, dict]] = {}  # method -> dataset -> params
    for r in runs:
        seen.setdefault(r["method"], {}).setdefault(str(r.get("dataset", "")), r.get("params") or {})
    lines = []

    def fmt(ps: dict) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(ps.items())) or "none"

    for m in methods:
        if m not in seen:
            continue
        per = seen[m]
        texts = {d: fmt(ps) for d, ps in per.items()}
        if len(set(texts.values())) <= 1:
            lines.append(f"- {m}: {next(iter(texts.values()))}")
        else:
            lines.append(f"- {m}: " + "; ".join(f"{d}: {t}" for d, t in texts.items()))
    return "\n".join(lines) + "\n"
