"""``spml datasets``: the datasets that can be named instead of a path."""
from __future__ import annotations

from ..data.registry import dataset_rows


def run(args) -> int:
    rows = [_cells(r) for r in dataset_rows(args.data_root, stats=args.stats)]
    header = ("name", "kind", "where", "splits", "labels", "features", "description")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(6)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)) + "  " + header[6])
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)) + "  " + str(r[6]))
    if not args.stats:
        print("\n(--no-stats: sizes and label statistics not loaded)")
    return 0


def _cells(r) -> tuple:
    """The table cells of a :class:`~spmlkit.data.registry.DatasetRow`."""
    if r.sizes is None:  # no statistics: asked not to load, no data root, or not loadable (the reason, cut short)
        return (r.name, r.kind, r.where, "", "", "", r.description[:60] if r.where == "not found" else r.description)
    return (r.name, r.kind, r.where, "/".join(f"{k} {n}" for k, n in r.sizes.items()), r.n_labels,
            "images" if r.n_features is None else r.n_features,
            f"train cardinality {r.cardinality:.2f}; {r.description}" + "".join(f"; {n}" for n in r.notes))


def add_parser(sub) -> None:
    """``spml datasets``: its options (``spml datasets --help``)."""
    p = sub.add_parser("datasets", help="list built-in and data-root datasets",
                       description="List the datasets that can be named instead of a path.")
    p.add_argument("--data-root", help="folder holding standard datasets (or set SPMLKIT_DATA)")
    p.add_argument("--no-stats", dest="stats", action="store_false",
                   help="only list names (default: load each dataset and show its sizes and label statistics)")
    p.set_defaults(func=run)
