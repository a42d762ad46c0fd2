"""The analyses' registry (:data:`ANALYSES`, :func:`register_analysis`), the arguments every
analysis takes, and the helpers the analyses share: output folders, CSV/JSON/PNG writers,
bundles from a name or a path, and linear training with the learner at hand
(:func:`linear_setup`).  The package's docstring lists the analyses."""
from __future__ import annotations

import argparse
import csv
import io
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ... import ownership
from ...data import Bundle, load_any, prepare_bundle
from ...data.bundle import is_bundle_folder
from ...errors import ConfigError, SpmlError
from ...registry import Registry
from ...ownership import atomic_path, write_json, write_text


# ------------------------------------------------------------------------ registry
@dataclass(frozen=True)
class Arg:
    """One command-line argument of an analysis: ``argparse`` flags and keyword arguments.
    ``dest`` (derived from the flags unless given) is the keyword of the analysis function."""

    flags: tuple
    kwargs: dict = field(default_factory=dict)

    @property
    def dest(self) -> str:
        if "dest" in self.kwargs:
            return self.kwargs["dest"]
        long = [f for f in self.flags if f.startswith("--")]
        name = (long[0] if long else self.flags[0]).lstrip("-")
        return name.replace("-", "_")


@dataclass(frozen=True)
class Analysis:
    name: str
    func: Callable[..., dict]
    help: str
    description: str
    paper: str
    arguments: tuple  # of Arg, after the common ones


#: the analyses by name (:class:`spmlkit.registry.Registry`); each module of this package
#: registers its own with :func:`register_analysis`, found on the first lookup
ANALYSES: Registry = Registry("analysis", package=__package__)

#: arguments every analysis takes (the data, the output folder, reproducibility, threads, device)
COMMON_ARGS = (
    Arg(("source",), dict(help="a prepared bundle folder, or a dataset name / data file (prepared into OUT/bundle "
                               "with seed 0 and the single-positive regime)")),
    Arg(("-o", "--out"), dict(required=True, help="output folder for the PNG and the numbers behind it")),
    Arg(("--data-root",), dict(default=None, help="folder holding standard datasets (or set SPMLKIT_DATA)")),
    Arg(("--seed",), dict(type=int, default=0, help="training seed; with --seeds S the seeds are SEED..SEED+S-1")),
    Arg(("--threads",), dict(type=int, default=None, help="torch threads (None: torch's default)")),
    Arg(("--device",), dict(default=None, help="where training computes: auto (None: CUDA when available, else "
                                               "the CPU), cpu, cuda, cuda:N or mps")),
)


def register_analysis(name: str, *, help: str, paper: str, arguments: tuple = ()):
    """Register ``func(source, out, *, data_root, seed, threads, <arguments>, log) -> dict``."""

    def deco(func):
        doc = (func.__doc__ or "").strip()
        ANALYSES.add(name, Analysis(name, func, help, doc.split("\n\n")[0].replace("\n", " "), paper,
                                    tuple(arguments)), owner=func)
        return func

    return deco


def get_analysis(name: str) -> Analysis:
    return ANALYSES.lookup(name)


def all_analyses() -> dict[str, Analysis]:
    return dict(ANALYSES.discover())


def run_analysis(name: str, options: dict, *, log=None) -> dict:
    """Run analysis ``name`` with ``options`` (a dict holding at least the analysis's
    argument names; extra keys, e.g. the rest of an argparse namespace, are ignored)."""
    spec = get_analysis(name)
    kw = {a.dest: options[a.dest] for a in COMMON_ARGS + spec.arguments if a.dest in options}
    return spec.func(log=log or progress_log(name), **kw)


def add_analyze_parser(sub, *, func) -> None:
    """The ``analyze`` command with one sub-command per registered analysis (for spmlkit.cli);
    ``func(args)`` is the command's handler."""
    p = sub.add_parser("analyze", help="the papers' analyses: one command per figure (PNG + CSV/JSON)",
                       description="Each analysis trains what it needs on the given data and writes a PNG and the "
                                   "numbers behind it. 'spml analyze NAME --help' lists its options; "
                                   "docs/analyses.md shows every figure.")
    names = p.add_subparsers(dest="analysis", metavar="NAME", required=True,
                             help="the analysis to run (each has its own --help)")
    for a in all_analyses().values():
        q = names.add_parser(a.name, help=f"{a.help} ({a.paper})", description=f"{a.paper}. {a.description}",
                             formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        for arg in COMMON_ARGS + a.arguments:
            q.add_argument(*arg.flags, **arg.kwargs)
        q.set_defaults(func=func)


# ------------------------------------------------------------------------- helpers
def progress_log(name: str):
    """Progress lines on stderr, prefixed with the analysis name and the elapsed time."""
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{name} {time.perf_counter() - t0:6.1f}s] {msg}", file=sys.stderr, flush=True)

    return log


def quiet(msg: str) -> None:
    pass


def resolve_bundle(source, out: str | Path, *, data_root=None, log=quiet):
    """``source`` as a :class:`~spmlkit.data.Bundle`: a bundle folder as it is, else a
    dataset name or data file prepared once into ``out/bundle`` (seed 0, single positive)."""
    if hasattr(source, "labels") and hasattr(source, "path"):
        return source
    if is_bundle_folder(source):
        return Bundle(source)
    target = Path(out) / "bundle"
    if is_bundle_folder(target):
        b = Bundle(target)
        if b.name in (str(source), Path(str(source)).stem):
            return b
        raise ConfigError(f"{target} holds a bundle of {b.name!r}, not of {source!r}; choose another --out")
    prepare_out(out, source)  # never into a folder of the user's
    log(f"preparing {source} into {target}")
    return prepare_bundle(load_any(str(source), data_root=data_root), target, log=log)


def require_full_labels(bundle, *splits: str) -> None:
    for s in splits:
        if bundle.labels(s) is None:
            raise SpmlError(f"{bundle.path}: this analysis needs the full labels of the {s} split; "
                            "the bundle holds observations only")


def check_positive(name: str, values, *, integer: bool = False) -> list:
    vals = list(values or [])
    if not vals:
        raise ConfigError(f"{name}: give at least one value")
    for v in vals:
        if not v > 0 or (integer and int(v) != v):
            raise ConfigError(f"{name}: expected {'whole ' if integer else ''}numbers > 0, got {v}")
    return vals


def pyplot():
    import matplotlib  # lazy: matplotlib, only when a figure is drawn

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt  # lazy: matplotlib, only when a figure is drawn

    return plt


def save_figure(fig, path: str | Path, *, dpi: int = 100) -> Path:
    """PNG, written atomically, at a resolution that keeps the docs' figures small."""
    plt = pyplot()
    path = Path(path)
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


def write_table_figure(out: Path, stem: str, rows: list[dict], summary: dict, plot) -> None:
    """The usual outputs of an analysis: ``STEM.csv`` (the rows), ``STEM.json`` (the
    summary), ``STEM.png`` (``plot(summary, path)``); lists them in ``summary["written"]``."""
    write_csv(out / f"{stem}.csv", rows)
    write_json(out / f"{stem}.json", summary)
    plot(summary, out / f"{stem}.png")
    summary["written"] = [str(out / f"{stem}{ext}") for ext in (".csv", ".json", ".png")]


def write_csv(path: str | Path, rows: list[dict], columns: list[str] | None = None) -> Path:
    """Rows of dicts as CSV (atomically); ``columns`` default: the keys of the first row."""
    columns = columns or (list(rows[0]) if rows else [])
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: _fmt(r.get(k)) for k in columns})
    write_text(path, buf.getvalue())
    return Path(path)


def _fmt(v):
    if isinstance(v, float):
        return repr(v)
    return "" if v is None else v


def prepare_out(out: str | Path, source=None, *, create: bool = True) -> Path:
    """The analysis' output folder: new, empty, or one an analysis wrote (its marker);
    a folder of the user's, or one that is (or holds, or lies in) the analysed ``source``,
    is refused in one line, never written into.  ``create=False`` checks only (the CLI,
    before torch)."""
    ownership.register_kind("analysis", "an analysis output folder",
                            layout=("*.csv", "*.json", "*.png", "*.npz", "bundle"))
    inputs = [] if source is None or hasattr(source, "labels") else [str(source)]
    if hasattr(source, "path"):
        inputs = [source.path]
    return ownership.claim(out, "analysis", inputs=inputs, create=create)


def seed_list(seed: int, seeds: int) -> list[int]:
    if seeds < 1:
        raise ConfigError(f"--seeds must be >= 1, got {seeds}")
    return [int(seed) + i for i in range(int(seeds))]


# ------------------------------------------------------------- linear training with access
@dataclass
class LinearSetup:
    """A linear-setting run assembled from the library's public parts, exactly as
    :func:`spmlkit.training.train_linear` assembles it, but keeping the learner and the
    method at hand so an ``on_epoch`` callback can look at the model and the method's
    components (ROLE's estimator) after every epoch."""

    bundle: object
    config: object
    learner: object
    method: object
    evaluate: Callable
    Z: object  # (N, L) training observations
    k: float | None

    def fit(self, on_epoch=None):
        from ...training.loop import fit  # lazy: torch-free CLI start-up

        return fit(self.learner, self.method, epochs=self.config.epochs, evaluate=self.evaluate,
                   patience=None, on_epoch=on_epoch)

    def train_inputs(self):
        """The (standardised) training features as one ``(N, D)`` tensor."""
        import torch  # lazy: torch-free CLI start-up

        return torch.cat(list(self.learner.stores["train"].chunks()))


def linear_setup(bundle, config, seeds: list[int]) -> LinearSetup:
    """Build the learner and method of ``config`` on ``bundle`` for the members ``seeds``
    (all at ``config.lr``) with the trainer's own assembly
    (:func:`spmlkit.training.linear.assemble_linear`); see :class:`LinearSetup`."""
    from ...training.linear import assemble_linear  # lazy: torch-free CLI start-up

    run = assemble_linear(bundle, config, lrs=[config.lr] * len(seeds), seeds=list(seeds))
    p = run.parts
    return LinearSetup(bundle, config, run.learner, p.method, p.evaluate, p.observed, p.expected_positives)
